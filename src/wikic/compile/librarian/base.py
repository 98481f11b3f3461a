"""The librarian interface every backend implements, and the job it is given per page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from ...core.models import SourceDoc
from ..draft import Draft, Navigation
from ..pageplan import PageSpec
from ..versions import replaced_on_page
from .extract import Vocabulary


@dataclass(frozen=True)
class PageJob:
    """Everything a librarian may use to write one page, and nothing else."""

    spec: PageSpec
    docs: dict[str, SourceDoc]  # the page's sources by layer-1 path, in spec order
    superseded_by: dict[str, str]  # path → path of the document that replaces it
    rules: str  # schema/librarian.md
    related: tuple[str, ...] = ()  # other wiki page paths worth linking ("see also")
    vocabulary: Vocabulary | None = field(default=None, compare=False)  # corpus word frequencies
    nav: Navigation = field(default_factory=Navigation)  # links to other pages, decided by the plan

    @cached_property
    def replaced(self) -> dict[str, list[SourceDoc]]:
        """Per document, the page's documents (or sections) it replaces (``replaced_on_page``)."""
        return replaced_on_page(self.docs, self.superseded_by)


@dataclass
class Usage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    retries: int = 0

    def add(self, other: Usage) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True)
class Failure:
    """A sentence that failed verification, passed back to ``repair``."""

    text: str
    cites: tuple[str, ...]
    reason: str


class Librarian(Protocol):
    name: str
    model: str
    deterministic: bool  # same input → same draft
    can_repair: bool
    usage: Usage

    def write(self, jobs: list[PageJob], progress: Callable[[int], None] | None = None) -> list[Draft | None]:
        """One draft per job, in order (None when a page could not be written)."""
        ...

    def repair(self, job: PageJob, draft: Draft, failures: list[Failure]) -> Draft | None:
        """A corrected draft for the failed sentences, or None to drop them."""
        ...
