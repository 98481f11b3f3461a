"""Layer 1 read once for the whole plan: what several parts of it would otherwise each work out
again from every document's text.

- ``words`` and ``stems``: in how many documents each word (for keywords) and each word stem
  (for the timeline and disagreements) occurs, counted in one pass over the text;
- ``said``: each current document's sentences (``timeline.sentences_of``), split once.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property

from ..core.markdown import STOPWORDS, words
from ..core.models import SourceDoc
from .citations import stem
from .librarian.extract import Vocabulary
from .timeline import sentences_of


class Corpus:
    def __init__(self, docs: list[SourceDoc], superseded: dict[str, str]):
        self.docs = docs
        self.current = [d for d in docs if d.path not in superseded]
        counts: Counter = Counter()
        stems: Counter = Counter()
        stem_of: dict[str, str] = {}
        for d in docs:
            found = set(words(d.title + " " + d.body))
            found -= STOPWORDS
            counts.update(found)
            if d.path not in superseded:
                stems.update({stem_of.get(w) or stem_of.setdefault(w, stem(w)) for w in found})
        self.vocabulary = Vocabulary(len(docs), counts)
        self.stems = stems  # ``timeline.document_frequencies`` of the current documents

    @cached_property
    def said(self) -> dict[str, list[tuple[str, str]]]:
        """(anchor, sentence) of every sentence of each current document."""
        return {d.path: sentences_of(d) for d in self.current}
