"""A small in-memory BM25 used for planning guides and as the pure-Python search baseline."""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from .markdown import STOPWORDS, words


@lru_cache(maxsize=1 << 15)  # a page's sentences are weighed for its lead and its keywords alike
def tokens(text: str) -> tuple[str, ...]:
    return tuple(w for w in words(text) if w not in STOPWORDS)


class BM25:
    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.docs = [Counter(tokens(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
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


class QueryTerms:
    """BM25 over many texts for queries known beforehand. Each text is read once, and only its
    length and its counts of the queries' words are kept; any subset of the texts is then scored
    as a ``BM25`` of that subset alone scores it (the subset's document frequencies and mean
    length), reading only the texts that hold a query word."""

    def __init__(self, texts: Iterable[str], queries: Iterable[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.counts: dict[str, dict[int, int]] = {t: {} for q in queries for t in tokens(q)}
        self.lengths = array("I")
        counts = self.counts
        for i, text in enumerate(texts):
            n = 0
            for w in words(text):  # not ``tokens``: a text is read once, so caching it only costs memory
                if w in STOPWORDS:
                    continue
                n += 1
                found = counts.get(w)
                if found is not None:
                    found[i] = found.get(i, 0) + 1
            self.lengths.append(n)

    @classmethod
    def joined(cls, parts: Sequence[QueryTerms]) -> QueryTerms:
        """One reading of consecutive runs of texts read apart (the same queries)."""
        out = parts[0]
        for part in parts[1:]:
            offset = len(out.lengths)
            out.lengths.extend(part.lengths)
            for term, found in part.counts.items():
                out.counts[term].update((i + offset, n) for i, n in found.items())
        return out

    def top(self, query: str, k: int, subset: Sequence[int]) -> list[tuple[int, float]]:
        """``BM25([texts[i] for i in subset]).top(query, k)``: (position in ``subset``, score)."""
        if not subset:
            return []
        member = {i: pos for pos, i in enumerate(subset)}
        n, lengths = len(subset), self.lengths
        avg = sum(lengths[i] for i in subset) / n
        scores: dict[int, float] = {}
        for t in dict.fromkeys(tokens(query)):
            hits = [(member[i], tf) for i, tf in self.counts.get(t, {}).items() if i in member]
            if not hits:
                continue
            idf = math.log(1 + (n - len(hits) + 0.5) / (len(hits) + 0.5))
            for pos, tf in hits:
                length = lengths[subset[pos]]
                scores[pos] = scores.get(pos, 0.0) + (
                    idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / avg))
                )
        ranked = sorted(((s, -pos) for pos, s in scores.items() if s > 0), reverse=True)[:k]
        return [(-pos, s) for s, pos in ranked]
