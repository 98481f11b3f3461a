"""How well texts fit a subject: by their words, and by meaning where an embedding is installed.

The planner asks two questions of this module: which sections fit a guide's purpose, and which
documents share a subject. Words answer both (BM25 over the texts, and the words of their titles
and headings); a text embedding answers them better where words differ ('going away' and
'vacation'). ``vectors`` is the one place that reaches for an embedding: the bundled offline one
of ``core.embedding`` when it is installed, else nothing, and every caller then scores by words
alone. Scores are in [0, 1]; nothing here is pairwise over a whole corpus.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

from ..core.bm25 import BM25, tokens
from .citations import stem

Vectors = Callable[[Sequence[str]], list[list[float]]]


def terms(text: str) -> set[str]:
    """The content words of ``text``, stemmed ('Cleaning the tanks' → {'clean', 'tank'})."""
    return {stem(t) for t in tokens(text)}


def lexical(query: str, texts: Sequence[str]) -> list[float]:
    """BM25 of each text for ``query``, scaled so the best is 1 (all 0 when none matches)."""
    if not texts:
        return []
    scores = BM25(list(texts)).scores(query)
    best = max(scores, default=0.0)
    return [s / best if best > 0 else 0.0 for s in scores]


def overlap(query_terms: set[str], text: str, weight: Callable[[str], float] | None = None) -> float:
    """The share of the query's words (weighted by ``weight``, e.g. their rarity) found in ``text``."""
    if not query_terms:
        return 0.0
    weight = weight or (lambda t: 1.0)
    found = terms(text) & query_terms
    total = sum(weight(t) for t in query_terms)
    return sum(weight(t) for t in found) / total if total else 0.0


@lru_cache(maxsize=1)
def _embedder() -> Vectors | None:
    """The bundled offline embedding when it is installed, else None (words only). Any failure to
    load it means the same as its absence: planning never depends on it being there."""
    try:
        from ..core import embedding  # type: ignore[attr-defined]
    except ImportError:
        return None
    try:
        batch = embedding.batch_embedder()
    except Exception:  # noqa: BLE001 - unavailable for any reason: plan by words
        return None

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in batch.embed(list(texts))]

    return embed


def vectors(texts: Sequence[str]) -> list[list[float]] | None:
    """Unit vectors of ``texts`` from the installed embedding, or None without one."""
    embed = _embedder()
    return embed(texts) if embed is not None and texts else None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def semantic(query: str, texts: Sequence[str]) -> list[float] | None:
    """Cosine similarity of each text to ``query`` by meaning, scaled to [0, 1] (the best text 1),
    or None when no embedding is installed."""
    found = vectors([query, *texts])
    if found is None:
        return None
    q, rows = found[0], found[1:]
    sims = [max(0.0, cosine(q, r)) for r in rows]
    best = max(sims, default=0.0)
    return [s / best if best > 0 else 0.0 for s in sims]
