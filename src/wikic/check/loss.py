"""Loss: unreadable-source, a layer-1 file skipped; wiki-shrank, a wiki that lost more than half
its pages since the last compile."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.config import DEFAULT_MAX_SHRINK
from .findings import Finding, finding
from .state import KB


def rule_shrink(kb: KB) -> Iterator[Finding]:
    """wiki-shrank: fewer pages now than ``1 - DEFAULT_MAX_SHRINK`` of the pages there were
    before or after the last compile (read from its state in ``.wikic/``)."""
    from ..compile.state import load_state

    counts = (load_state(kb.root) or {}).get("wiki_pages") or {}
    before = max(int(counts.get("before") or 0), int(counts.get("after") or 0))
    now = sum(1 for p in kb.content_pages if p.managed)
    if before and now < before * (1 - DEFAULT_MAX_SHRINK):
        yield finding(
            "wiki-shrank",
            "wiki",
            None,
            f"{now} pages, down from {before} around the last compile (more than "
            f"{DEFAULT_MAX_SHRINK:.0%} gone); if a source was emptied or deleted by mistake, restore "
            "it and run 'wikic fetch' and 'wikic compile', or 'git checkout wiki/'",
        )


def rule_unreadable(kb: KB) -> Iterator[Finding]:
    """unreadable-source: a layer-1 file that cannot be parsed; the rest of the KB is checked."""
    for path, problem in sorted(kb.unreadable.items()):
        message = problem.removeprefix(f"{path}: ")
        yield finding(
            "unreadable-source",
            path,
            None,
            f"{message}; skipped: the citations of it are not checked and compile keeps the pages made "
            "from it as they are until it is fixed",
        )
