"""What a page must not carry: unsafe-markup; and what it should not say: suspicious-instruction."""

from __future__ import annotations

from collections.abc import Iterator

from ..compile.citations import RAW_HTML
from ..compile.safety import AUTOLINK, IMAGE, LINK, allowed_link, suspicious
from .findings import Finding, finding, short
from .pages import _CODE_SPAN, WikiPage, _body_lines
from .state import KB


def rule_markup(kb: KB, page: WikiPage) -> Iterator[Finding]:
    """unsafe-markup: raw HTML, an image, or a link out of the knowledge base on a wiki page."""
    for n, line in _body_lines(page):
        if "<" not in line and "](" not in line:
            continue
        text = _CODE_SPAN.sub("", line)
        problems = [f"a link to {m.group(1)}" for m in AUTOLINK.finditer(text)]
        problems += [f"raw HTML {m.group()[:40]!r}" for m in RAW_HTML.finditer(AUTOLINK.sub("", text))]
        problems += [f"an image ({m.group(1)[:60]})" for m in IMAGE.finditer(text)]
        problems += [
            f"a link out of the knowledge base ({m.group(2)[:60]})"
            for m in LINK.finditer(IMAGE.sub("", text))
            if not allowed_link(m.group(2), page.path)
        ]
        if problems:
            yield finding(
                "unsafe-markup",
                page.path,
                n,
                f"{'; '.join(problems)}; pages link only to wiki pages and layer-1 sources "
                "(remove it, or recompile the page)",
            )


def rule_instructions(kb: KB, page: WikiPage) -> Iterator[Finding]:
    """suspicious-instruction: a cited sentence that instructs the reader or an assistant."""
    for st in page.statements:  # none on the index or the log
        if suspicious(st.text):
            yield finding(
                "suspicious-instruction",
                page.path,
                st.line,
                f"{short(st.text)!r} reads as an instruction to the reader or an assistant, not as "
                "knowledge; it is quoted from its source, so check that source",
            )
