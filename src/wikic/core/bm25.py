"""A small in-memory BM25 used for planning guides and as the pure-Python search baseline."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import filterfalse

from .markdown import STOPWORDS, words


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(filterfalse(STOPWORDS.__contains__, words(text)))


tokens = lru_cache(maxsize=1 << 15)(_tokens)  # a page's sentences are weighed for its lead and keywords alike


def counted(text: str, wanted: frozenset[str]) -> tuple[int, dict[str, int]]:
    """``text``'s length in tokens and how often it has each ``wanted`` token: all that BM25 needs
    of a text to score it for queries of those tokens (``BM25.of_counts``). Not cached: it reads
    each text of a corpus once."""
    return counted_words(words(text), wanted)


def counted_words(found: list[str], wanted: frozenset[str]) -> tuple[int, dict[str, int]]:
    """``counted`` of a text whose ``words`` are ``found`` (read already for something else)."""
    toks = tuple(filterfalse(STOPWORDS.__contains__, found))
    return len(toks), dict(Counter(t for t in toks if t in wanted))


class BM25:
    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75):
        docs = [Counter(tokens(t)) for t in texts]
        self._index(docs, [sum(d.values()) for d in docs], k1, b)

    @classmethod
    def of_counts(
        cls, texts: Sequence[tuple[int, Mapping[str, int]]], k1: float = 1.2, b: float = 0.75
    ) -> BM25:
        """The index of texts given as ``counted`` gives them: the same scores for a query of
        the tokens they were counted for as the texts themselves."""
        self = cls.__new__(cls)
        self._index([c for _, c in texts], [n for n, _ in texts], k1, b)
        return self

    def _index(self, docs: list[Mapping[str, int]], lengths: list[int], k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self.docs = docs
        self.lengths = lengths
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        terms = [t for t in dict.fromkeys(tokens(query)) if t in self.idf]
        out = []
        for doc, length in zip(self.docs, self.lengths):
            s = 0.0
            for t in terms:
                tf = doc.get(t)
                if tf:
                    s += (
                        self.idf[t]
                        * tf
                        * (self.k1 + 1)
                        / (tf + self.k1 * (1 - self.b + self.b * length / self.avg))
                    )
            out.append(s)
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        ranked = sorted(((s, -i) for i, s in enumerate(self.scores(query)) if s > 0), reverse=True)[:k]
        return [(-i, s) for s, i in ranked]
