"""Citation verification: a cited section must exist and must support the sentence.

Support, at the least: every number in the sentence appears in the cited text, and most of the
sentence's content words occur there too. The cited text is the cited section (with its
sub-sections) plus its document's title and frontmatter fields, which are part of the source.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .draft import Citation
from .facts import field_label, format_value
from .markdown import content_words, numbers_with_units, plain_inline, words
from .models import SourceDoc

DEFAULT_MIN_OVERLAP = 0.6


@lru_cache(maxsize=1 << 16)  # a few thousand distinct words cover a whole KB
def stem(word: str) -> str:
    """A deliberately small stemmer so 'litres'/'litre' and 'planting'/'plant' match."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _scalar_text(meta: dict) -> str:
    """The frontmatter as text: each field's label and value ('Row spacing: 20'), so a fact
    restated from a field is supported by the document that holds it."""
    parts = []
    for key, value in meta.items():
        if key in ("layer0", "generated_by"):
            continue
        if not isinstance(value, dict):
            parts.append(f"{field_label(key)}: {format_value(value)}")
    return "\n".join(parts)


@dataclass(frozen=True)
class Support:
    ok: bool
    reason: str = ""


class Verifier:
    """Checks citations against the layer-1 documents it was given."""

    def __init__(self, docs: Iterable[SourceDoc], min_overlap: float = DEFAULT_MIN_OVERLAP):
        self.docs = {d.path: d for d in docs}
        self.min_overlap = min_overlap
        self._texts: dict[Citation, str] = {}  # per verifier, so no cache outlives its KB
        self._sections: dict[Citation, str] = {}
        self._vocabs: dict[Citation, tuple[frozenset, frozenset]] = {}

    def resolve(self, cite: Citation) -> str | None:
        """None when the citation points at an existing file and anchor, else the problem."""
        doc = self.docs.get(cite.path)
        if doc is None:
            return f"cites {cite.path}, which does not exist"
        if cite.anchor and doc.section(cite.anchor) is None:
            return f"cites #{cite.anchor}, which is not a heading of {cite.path}"
        return None

    def section_text(self, cite: Citation) -> str:
        """The cited section's own text (with its sub-sections), inline Markdown removed."""
        if cite not in self._sections:
            self._sections[cite] = self._section_text(cite)
        return self._sections[cite]

    def cited_text(self, cite: Citation) -> str:
        """What a citation vouches for: the section, its document's title and frontmatter."""
        if cite not in self._texts:
            doc = self.docs[cite.path]
            self._texts[cite] = self.section_text(cite) + "\n" + doc.title + "\n" + _scalar_text(doc.meta)
        return self._texts[cite]

    def _section_text(self, cite: Citation) -> str:
        doc = self.docs[cite.path]
        if not cite.anchor:
            return plain_inline(doc.body)
        parts, level = [], None
        for s in doc.sections:
            if level is None:
                if s.anchor == cite.anchor:
                    level = s.level
                    parts.append(s.heading + "\n" + s.text)
            elif s.level > level:
                parts.append(s.heading + "\n" + s.text)
            else:
                break
        return plain_inline("\n".join(parts))

    def _vocab(self, cite: Citation) -> tuple[frozenset, frozenset]:
        if cite not in self._vocabs:
            text = self.cited_text(cite)
            self._vocabs[cite] = frozenset(stem(w) for w in words(text)), frozenset(numbers_with_units(text))
        return self._vocabs[cite]

    def check(self, text: str, cites: Iterable[Citation], quotes: Iterable[str] = ()) -> Support:
        cites = tuple(cites)
        if not cites:
            return Support(False, "no citation")
        for c in cites:
            problem = self.resolve(c)
            if problem:
                return Support(False, problem)
        vocab: set[str] = set()
        numbers: set[str] = set()
        for c in cites:
            v, n = self._vocab(c)
            vocab |= v
            numbers |= n
        plain = plain_inline(text)
        missing_numbers = numbers_with_units(plain) - numbers
        if missing_numbers:
            return Support(False, f"number(s) {', '.join(sorted(missing_numbers))} not in the cited text")
        content = {stem(w) for w in content_words(plain)}
        if content:
            overlap = len(content & vocab) / len(content)
            if overlap < self.min_overlap:
                return Support(False, f"only {overlap:.0%} of its content words occur in the cited text")
        for quote in quotes:
            if " ".join(quote.split()) not in " ".join(self.cited_text_any(cites).split()):
                return Support(False, "a quoted passage does not occur verbatim in the cited section")
        return Support(True)

    def cited_text_any(self, cites: tuple[Citation, ...]) -> str:
        return "\n".join(self.cited_text(c) for c in cites)
