"""Citations: uncited-sentence, unsupported-citation and superseded-citation."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from ..compile.draft import SUPERSEDED_MARK
from ..compile.versions import current_of, is_superseded, section_key
from ..core.facts import fact_for_label, is_bookkeeping
from ..core.markdown import plain_inline
from .findings import Finding, finding, short
from .pages import Statement, WikiPage
from .state import KB


def rule_citations(kb: KB, page: WikiPage) -> Iterator[Finding]:
    """uncited-sentence, unsupported-citation and superseded-citation. A page the last compile
    verified, unchanged since and citing unchanged sources, is not verified again."""
    if page.is_special:
        return
    about = (kb.plan.about if kb.plan else {}).get(page.path)
    about = None if about is None else " ".join(plain_inline(about).split())
    verified = page.path in kb.verified
    uncited_rows: dict[int, list[str]] = defaultdict(list)
    for st in page.statements:
        if st.kind == "about":
            kept = set(page.meta.get("sources") or []) & set(kb.unreadable)  # kept as it was
            if st.text != about and not kept:  # the description the plan made
                yield finding(
                    "uncited-sentence",
                    page.path,
                    st.line,
                    f"{short(st.text)!r} is not what the plan says this page is about "
                    f"({short(about or 'nothing')!r}); recompile, or cite what it says",
                )
            continue
        if not st.cites:
            if st.kind == "cell":
                uncited_rows[st.line].append(st.label)
            else:
                yield finding(
                    "uncited-sentence",
                    page.path,
                    st.line,
                    f"no citation: {short(st.text)!r}; cite the layer-1 section that says it",
                )
            continue
        if any(kb.verifier.resolve(c) for c in st.cites):
            continue  # reported as broken-link
        for c in st.cites:
            if is_superseded(c.path, c.anchor, kb.superseded_by) and not st.in_note:
                old = c.path if c.path in kb.superseded_by else section_key(c.path, c.anchor)
                current = current_of(old, kb.superseded_by)
                yield finding(
                    "superseded-citation",
                    page.path,
                    st.line,
                    f"cites {old}, superseded by {current}; cite the current version "
                    f"(older ones belong in a '> {SUPERSEDED_MARK}' note)",
                )
        if verified:
            continue
        wrong = unsupported(kb, st, page.path)
        if wrong:
            yield finding("unsupported-citation", page.path, st.line, wrong)
    for line, labels in sorted(uncited_rows.items()):
        yield finding(
            "uncited-sentence",
            page.path,
            line,
            f"table cells without a citation: {', '.join(labels[:4])}" + (" …" if len(labels) > 4 else ""),
        )


def unsupported(kb: KB, st: Statement, path: str) -> str | None:
    """Why the statement's citations do not support it, or None: as written, or, for a cell that
    lists records by their pages' titles, as its source writes them (``KB.as_recorded``)."""
    why = None
    for text in dict.fromkeys([st.text, kb.as_recorded(st, path)]):
        result = kb.verifier.check(text, st.cites)
        wrong = misstated_field(kb, st, text) if result.ok else f"{short(st.text)!r}: {result.reason}"
        if not wrong:
            return None
        why = why or wrong
    return why


_FACT = re.compile(r"^([^:;]{1,60}):\s+(.+)$")


def misstated_field(kb: KB, st: Statement, text: str | None = None) -> str | None:
    """A fact restated from a frontmatter field of its cited document (a fact-list line 'Row
    spacing: 25', several joined by '; ', or a table cell in a 'Row spacing' column or row that
    the cited section's text does not quote) that states another value than the field (``text``:
    the statement's, as its cited text writes it)."""
    text = st.text if text is None else text
    if any(c.path not in kb.docs for c in st.cites):
        return None  # a file that cannot be read: unreadable-source says so
    if st.kind == "cell":
        if any(text in kb.verifier.section_text(c) for c in st.cites):
            return None  # quoted from a table in the source, verified as a quote
        row, _, column = st.label.partition(" / ")
        candidates = [(column, text), (row, text)]
    else:
        candidates = [m.group(1, 2) for part in text.split("; ") if (m := _FACT.match(part))]
    for name, stated in candidates:
        for c in st.cites:
            found = fact_for_label(kb.doc(c.path), name) if name else None
            if found is None or is_bookkeeping(found[0]):
                continue
            key, value = found
            if " ".join(stated.split()) != value:
                return f"states {name}: {short(stated, 40)!r}, but {c.path} has {key}: {value!r}"
            break
    return None
