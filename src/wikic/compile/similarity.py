"""How well texts fit a subject: by their words, and by meaning where an embedding is installed.

The planner asks two questions of this module: which sections fit a guide's purpose, and which
documents share a subject. Words answer both (BM25 over the texts, and the words of their titles
and headings); a text embedding answers them better where words differ ('going away' and
'vacation'). ``vectors`` is the one place that reaches for an embedding: the bundled offline one
of ``core.embedding`` (WordLlama) when it can be used, else nothing, and every caller then scores
by words alone. Scores are in [0, 1]; one query is compared with many texts, never all pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from ..core.bm25 import BM25, tokens
from .citations import stem


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
def _embedder():
    """The bundled offline embedding (``core.embedding``), or None when it cannot be used (not
    installed, files missing or altered): planning then goes by words alone, never fails."""
    try:
        from ..core import embedding
    except ImportError:
        return None
    try:
        return embedding.batch_embedder()
    except Exception:  # noqa: BLE001 - unavailable for whatever reason: plan by words
        return None


@lru_cache(maxsize=4)  # a guide's query and its best sections, one plan's groups' profiles
def _matrix(texts: tuple[str, ...]):
    embedder = _embedder()
    return embedder.embed(list(texts)) if embedder is not None else None


def vectors(texts: Sequence[str]):
    """Unit vectors of ``texts`` (an array, one row each) from the bundled embedding, or None
    without it."""
    return _matrix(tuple(texts)) if texts else None


def semantic(query: str, texts: Sequence[str], enabled: bool = True) -> list[float] | None:
    """Cosine similarity of each text to ``query`` by meaning, scaled to [0, 1] over the texts (the
    closest 1, the farthest 0: a static embedding's cosines crowd together), or None when no
    embedding can be used (or ``enabled`` is False: the schema's
    ``search.semantic``)."""
    if not enabled or not texts:
        return None
    rows = vectors(texts)
    q = vectors([query])
    if rows is None or q is None:
        return None
    sims = [float(x) for x in rows @ q[0]]
    low, high = min(sims), max(sims)
    return [(s - low) / (high - low) if high > low else 0.0 for s in sims]
