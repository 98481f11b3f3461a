"""What a page must not carry: unsafe-markup; and what it should not say: suspicious-instruction."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..safety import allowed_link, suspicious
from .findings import Finding, finding, short
from .kb import KB
from .pages import _body_lines

_CODE_SPAN = re.compile(r"`[^`]*`")
_RAW_HTML = re.compile(r"<(?:!--|/?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>)")
_AUTOLINK = re.compile(r"<([A-Za-z][\w+.-]{1,31}:[^<>\s]*)>")
_TARGET = re.compile(r"(!?)\[[^\]]*\]\(((?:[^()\s]|\([^()\s]*\))*)(?:\s+\"[^\"]*\")?\)")


def rule_markup(kb: KB) -> Iterator[Finding]:
    """unsafe-markup: raw HTML, an image, or a link out of the knowledge base on a wiki page."""
    for page in kb.pages:
        for n, line in _body_lines(page):
            text = _CODE_SPAN.sub("", line)
            problems = [f"raw HTML {m.group()[:40]!r}" for m in _RAW_HTML.finditer(_AUTOLINK.sub("", text))]
            problems += [f"a link to {m.group(1)}" for m in _AUTOLINK.finditer(text)]
            for m in _TARGET.finditer(text):
                if m.group(1):
                    problems.append(f"an image ({m.group(2)[:60]})")
                elif not allowed_link(m.group(2), page.path):
                    problems.append(f"a link out of the knowledge base ({m.group(2)[:60]})")
            if problems:
                yield finding(
                    "unsafe-markup",
                    page.path,
                    n,
                    f"{'; '.join(problems)}; pages link only to wiki pages and layer-1 sources "
                    "(remove it, or recompile the page)",
                )


def rule_instructions(kb: KB) -> Iterator[Finding]:
    """suspicious-instruction: a cited sentence that instructs the reader or an assistant."""
    for page in kb.content_pages:
        for st in page.statements:
            if suspicious(st.text):
                yield finding(
                    "suspicious-instruction",
                    page.path,
                    st.line,
                    f"{short(st.text)!r} reads as an instruction to the reader or an assistant, not as "
                    "knowledge; it is quoted from its source, so check that source",
                )
