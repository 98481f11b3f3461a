"""Layer 1 read once for the whole plan: what several parts of it would otherwise each work out
again from every document's text.

- ``words`` and ``stems``: in how many documents each word (for keywords) and each word stem
  (for the timeline and disagreements) occurs, counted in one pass over the text;
- ``said``: each current document's sentences (``timeline.sentences_of``), split once;
- ``compounds``: the capitalised names of two words several documents write ('Raspberry Pi'), by
  the stem of their first word: a one-word subject name there is part of the longer name, however
  the second word is written ('Raspberry pi power' names no raspberry).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import cached_property

from ..core.bm25 import counted_words
from ..core.markdown import STOPWORDS, words
from ..core.models import SourceDoc
from ..core.pool import LIGHT, Jobs, slices
from .citations import stem
from .librarian.extract import Vocabulary
from .timeline import sentences_of


class Corpus:
    def __init__(
        self,
        docs: list[SourceDoc],
        superseded: dict[str, str],
        jobs: Jobs = 1,
        asked: frozenset[str] = frozenset(),
    ):
        self.docs = docs
        self.current = [d for d in docs if d.path not in superseded]
        self.jobs = jobs  # processes reading the documents
        counts: Counter = Counter()
        stems: Counter = Counter()
        pairs: Counter = Counter()
        # per document, its title and text as ``bm25.counted`` gives them for the ``asked`` words
        # (the guides'), read in the same pass as its words
        self.counted: dict[str, tuple[int, dict[str, int]]] = {}
        for words_part, stems_part, pairs_part, counted_part in slices(
            lambda part: _frequencies(part, superseded, asked), docs, jobs, least=LIGHT
        ):
            counts.update(words_part)
            stems.update(stems_part)
            pairs.update(pairs_part)
            self.counted.update(counted_part)
        self.vocabulary = Vocabulary(len(docs), counts)
        self.stems = stems  # ``timeline.document_frequencies`` of the current documents
        compounds: dict[str, set[str]] = {}
        for (first, second), n in pairs.items():
            if n >= COMPOUND_DOCS:
                compounds.setdefault(first, set()).add(second)
        self.compounds = {k: frozenset(v) for k, v in sorted(compounds.items())}

    @cached_property
    def said(self) -> dict[str, list[tuple[str, str]]]:
        """(anchor, sentence) of every sentence of each current document: split here, not in
        processes, which would send every sentence back (as long as splitting them takes), and
        whose splits the processes forked later would not know."""
        return {d.path: sentences_of(d) for d in self.current}


COMPOUND_DOCS = 2  # documents that write a two-word name capitalised, for it to count as one
# two capitalised words in a row inside a sentence (after a word, not opening a line or a sentence;
# a heading's Title Case is not read), found overlapping: 'the Raspberry Pi Zero'
_PAIR = re.compile(r"(?<=[\w,;)'\"] )([A-Z][a-z]{2,}) (?=([A-Z][A-Za-z0-9]*)\b)")


def _frequencies(
    docs: Sequence[SourceDoc], superseded: dict[str, str], asked: frozenset[str] = frozenset()
) -> tuple[Counter, Counter, Counter, dict[str, tuple[int, dict[str, int]]]]:
    """In how many of ``docs`` each word occurs, in how many current ones each word stem, and in
    how many each capitalised pair of words (the first by its stem, the second in lower case) is
    written in running text; and with ``asked`` words, each document counted for them."""
    counts: Counter = Counter()
    stems: Counter = Counter()
    pairs: Counter = Counter()
    counted: dict[str, tuple[int, dict[str, int]]] = {}
    stem_of: dict[str, str] = {}
    for d in docs:
        said = words(d.title + " " + d.body)
        if asked:
            counted[d.path] = counted_words(said, asked)
        found = set(said)
        found -= STOPWORDS
        counts.update(found)
        if d.path not in superseded:
            stems.update({stem_of.get(w) or stem_of.setdefault(w, stem(w)) for w in found})
        prose = "\n".join(
            x for s in d.sections for x in s.text.splitlines() if not x.lstrip().startswith("#")
        )
        pairs.update({(stem(a.lower()), b.lower()) for a, b in _PAIR.findall(prose)})
    return counts, stems, pairs, counted
