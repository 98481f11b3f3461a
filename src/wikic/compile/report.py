"""What a compile did, counted: pages added, changed and removed, sentences verified, repaired and
dropped, coverage, usage; the CLI prints it and ``--json`` dumps it."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from .librarian.base import Usage


@dataclass
class CompileReport:
    backend: str = ""
    model: str = ""
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)  # pages left unwritten: nothing verifiable remained
    unreadable: list[str] = field(default_factory=list)  # layer-1 files skipped: broken frontmatter
    causes: dict[str, str] = field(default_factory=dict)  # failed page → why, and what to change
    skipped: int = 0  # pages to (re)compile left for later by --page or --limit
    sentences: int = 0
    cited: int = 0
    verified: int = 0
    repaired: int = 0
    dropped: int = 0
    citations: int = 0
    unplaced: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # unplaced path → why no page shows it
    coverage: dict = field(default_factory=dict)  # coverage.Coverage.as_dict() of the wiki on disk
    fact_changes: list[str] = field(default_factory=list)  # facts that differ from the last compile
    drop_reasons: list[str] = field(default_factory=list)
    published: int = 0  # LLM: model sentences on the pages written
    fallback: int = 0  # LLM: source sentences kept where the model's prose was missing or less complete
    set_aside: int = 0  # LLM: verified model sentences replaced by the fuller source text
    index_changed: list[str] = field(default_factory=list)
    search_index: dict = field(default_factory=dict)  # files the search index re-read, texts it embedded
    diffstat: list[tuple[str, int, int]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    plan: list[dict] = field(default_factory=list)  # dry-run: one row per page to (re)write or remove
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def wrote_anything(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.index_changed)


def diffstat(old: str | None, new: str | None) -> tuple[int, int]:
    a = old.splitlines() if old else []
    b = new.splitlines() if new else []
    if not a or not b:  # a page added or removed: every line, as the diff would count it (no
        # diff worked out); a line that starts '++' ('--') reads as the diff's own header there
        return sum(not x.startswith("++") for x in b), sum(not x.startswith("--") for x in a)
    plus = minus = 0
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    return plus, minus
