"""Versions: unresolved-supersedes, a ``supersedes`` value or ``versions`` chain entry that names
no document or section (so nothing is marked older, and both versions read as current)."""

from __future__ import annotations

from collections.abc import Iterator

from ..compile.versions import resolve_supersedes
from .findings import Finding, finding
from .state import KB


def rule_versions(kb: KB) -> Iterator[Finding]:
    chains = kb.schema.versions if kb.schema else ()
    for problem in resolve_supersedes([d.outline() for d in kb.docs.values()], chains)[1]:
        yield finding(
            "unresolved-supersedes",
            problem.path,
            None,
            f"supersedes {problem.value!r}: {problem.reason}; name a record id or file name of the same "
            "source (or source:name), optionally with #section",
        )
