"""Loss: unreadable-source, a layer-1 file skipped; symlink, a link no stage follows; wiki-shrank,
a wiki that lost more than half its pages since the last compile."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..core.fsutil import walk_files
from ..transform.layer1 import LAYER1
from .findings import Finding, finding
from .state import KB

WIKI_MAX_SHRINK = 0.5  # a wiki that lost more than this share of its pages is worth a look


def rule_shrink(kb: KB) -> Iterator[Finding]:
    """wiki-shrank: fewer pages now than ``1 - WIKI_MAX_SHRINK`` of the pages there were
    before or after the last compile (read from its state in ``.wikic/``)."""
    from ..compile.state import load_state

    counts = (load_state(kb.root) or {}).get("wiki_pages") or {}
    before = max(int(counts.get("before") or 0), int(counts.get("after") or 0))
    now = sum(1 for p in kb.content_pages if p.managed)
    if before and now < before * (1 - WIKI_MAX_SHRINK):
        yield finding(
            "wiki-shrank",
            "wiki",
            None,
            f"{now} pages, down from {before} around the last compile (more than "
            f"{WIKI_MAX_SHRINK:.0%} gone); if a source was emptied or deleted by mistake, restore "
            "it and run 'wikic fetch' and 'wikic compile', or 'git checkout wiki/'",
        )


def rule_symlinks(kb: KB) -> Iterator[Finding]:
    """symlink: a symbolic link under ``layer1_sources/``, ``schema/`` or ``wiki/`` (the folder
    itself included); no stage follows one, so what it points to is neither read nor published."""
    for folder in (LAYER1, "schema", "wiki"):
        for rel in walk_files(kb.root, folder, suffix="")[1]:
            target = os.readlink(kb.root / rel)
            yield finding(
                "symlink",
                rel,
                None,
                f"a symbolic link to {target}; wikic never follows one, so it is not read: put the file "
                "itself here, or remove the link",
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
