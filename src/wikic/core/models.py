"""Small value objects passed between stages."""

from __future__ import annotations

from dataclasses import dataclass, field

from .markdown import Section


@dataclass(frozen=True)
class Record:
    """One record as an API returned it."""

    source: str
    id: str
    data: dict[str, object]
    url: str  # the request URL of the page it came from


@dataclass(frozen=True)
class Snapshot:
    """A record version stored in layer 0 (see ``layer0.py``)."""

    source: str
    id: str
    key: str
    sha256: str  # of the record's canonical JSON
    path: str  # relative to the KB root
    url: str
    fetched_at: str
    data: dict[str, object] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class SourceDoc:
    """A layer-1 Markdown file: frontmatter plus heading-level sections."""

    source: str
    id: str
    key: str
    path: str  # relative to the KB root, e.g. layer1_sources/faq/tank.md
    title: str
    meta: dict[str, object]
    body: str
    sha256: str  # of the whole file's bytes
    sections: tuple[Section, ...]

    @property
    def ref(self) -> str:
        """The eval-format reference ``source:id``."""
        return f"{self.source}:{self.id}"

    @property
    def refs(self) -> tuple[str, ...]:
        """Every ``source:name`` that names this document: its id, its key, its file name."""
        name = self.path.rsplit("/", 1)[-1]
        names = (self.id, self.key, self.key + ".md", name, name.rsplit(".", 1)[0])
        return tuple(f"{self.source}:{n}" for n in dict.fromkeys(names))

    def answers_to(self, ref: str) -> bool:
        return ref in self.refs

    def section(self, anchor: str) -> Section | None:
        for s in self.sections:
            if s.anchor == anchor:
                return s
        return None
