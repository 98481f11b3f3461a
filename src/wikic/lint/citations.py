"""Citations: uncited-sentence, unsupported-citation and superseded-citation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from ..draft import SUPERSEDED_MARK
from ..plan import current_of
from ..versions import is_superseded, section_key
from .findings import Finding, finding, short
from .kb import KB


def rule_citations(kb: KB) -> Iterator[Finding]:
    """uncited-sentence, unsupported-citation and superseded-citation."""
    for page in kb.content_pages:
        uncited_rows: dict[int, list[str]] = defaultdict(list)
        for st in page.statements:
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
            result = kb.verifier.check(st.text, st.cites)
            if not result.ok:
                yield finding(
                    "unsupported-citation",
                    page.path,
                    st.line,
                    f"{short(st.text)!r}: {result.reason}",
                )
        for line, labels in sorted(uncited_rows.items()):
            yield finding(
                "uncited-sentence",
                page.path,
                line,
                f"table cells without a citation: {', '.join(labels[:4])}"
                + (" …" if len(labels) > 4 else ""),
            )
