"""Layer 1 read once for the whole plan: what several parts of it would otherwise each work out
again from every document's text.

- ``words`` and ``stems``: in how many documents each word (for keywords) and each word stem
  (for the timeline and disagreements) occurs, counted in one pass over the text;
- ``said``: each current document's sentences (``timeline.sentences_of``), split once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cached_property

from ..core.markdown import STOPWORDS, words
from ..core.models import SourceDoc
from ..core.pool import each, slices
from .citations import stem
from .librarian.extract import Vocabulary
from .timeline import sentences_of


class Corpus:
    def __init__(self, docs: list[SourceDoc], superseded: dict[str, str], jobs: int = 1):
        self.docs = docs
        self.current = [d for d in docs if d.path not in superseded]
        self.jobs = jobs  # processes reading the documents
        counts: Counter = Counter()
        stems: Counter = Counter()
        for words_part, stems_part in slices(lambda part: _frequencies(part, superseded), docs, jobs):
            counts.update(words_part)
            stems.update(stems_part)
        self.vocabulary = Vocabulary(len(docs), counts)
        self.stems = stems  # ``timeline.document_frequencies`` of the current documents

    @cached_property
    def said(self) -> dict[str, list[tuple[str, str]]]:
        """(anchor, sentence) of every sentence of each current document."""
        return dict(
            zip((d.path for d in self.current), each(sentences_of, self.current, self.jobs), strict=True)
        )


def _frequencies(docs: Sequence[SourceDoc], superseded: dict[str, str]) -> tuple[Counter, Counter]:
    """In how many of ``docs`` each word occurs, and in how many current ones each word stem."""
    counts: Counter = Counter()
    stems: Counter = Counter()
    stem_of: dict[str, str] = {}
    for d in docs:
        found = set(words(d.title + " " + d.body))
        found -= STOPWORDS
        counts.update(found)
        if d.path not in superseded:
            stems.update({stem_of.get(w) or stem_of.setdefault(w, stem(w)) for w in found})
    return counts, stems
