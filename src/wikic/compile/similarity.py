"""How well texts fit a subject: by their words, and by meaning where an embedding is installed.

The planner asks two questions of this module: which sections fit a guide's purpose, and which
documents share a subject. Words answer both (BM25 over the texts, and the words of their titles
and headings); a text embedding answers them better where words differ ('going away' and
'vacation'). ``vectors`` is the one place that reaches for an embedding: the bundled offline one
of ``core.embedding`` (WordLlama) when it can be used, else nothing, and every caller then scores
by words alone. Scores are in [0, 1]; one query is compared with many texts, never all pairs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from ..core.bm25 import BM25, tokens
from ..core.models import SourceDoc
from .citations import stem


def terms(text: str) -> set[str]:
    """The content words of ``text``, stemmed ('Cleaning the tanks' → {'clean', 'tank'})."""
    return {stem(t) for t in tokens(text)}


def lexical_counted(query: str, texts: Sequence[tuple[int, Mapping[str, int]]]) -> list[float]:
    """BM25 of each text for ``query``, scaled so the best is 1 (all 0 when none matches), of
    texts given as ``bm25.counted`` gives them for the tokens of ``query``."""
    if not texts:
        return []
    scores = BM25.of_counts(texts).scores(query)
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


def _embedder():
    """The bundled offline embedding (``core.embedding``, loaded once per process, its files
    checked at every call), or None when it cannot be used (not installed, files missing or
    altered): planning then goes by words alone, never fails."""
    try:
        from ..core import embedding
    except ImportError:
        return None
    try:
        return embedding.shared_embedder()
    except Exception:  # noqa: BLE001 - unavailable for whatever reason: plan by words
        return None


# the search index's database while planning, and the keys of the 'plan' texts used so far
_STORE: ContextVar[tuple[sqlite3.Connection, set[str]] | None] = ContextVar(
    "wikic_planning_vectors", default=None
)


@contextmanager
def stored_in(conn: sqlite3.Connection) -> Iterator[None]:
    """Planning's vectors read from and kept in the search index's database (``conn``): a
    layer-1 section's under the same key as the index's own (``section_text``), so compile
    embeds each changed text once, and other texts (a guide's query, a group's profile) in
    ``vectors_plan``, so a rerun embeds only what changed."""
    from .searchindex.dense import vector_store

    used: set[str] = set()
    token = _STORE.set((conn, used))
    try:
        yield
        if used:  # the profiles and queries of this plan: older ones are not kept
            vector_store(conn, "plan").keep(used)
    finally:
        _STORE.reset(token)


@lru_cache(maxsize=4)  # without a database: a guide's query and its best sections, one plan's profiles
def _matrix(texts: tuple[str, ...]):
    import numpy as np

    embedder = _embedder()
    if embedder is None:
        return None
    # the float16 values the database would keep: planning gives the same with or without one
    return np.asarray(embedder.embed(list(texts)), dtype=np.float32).astype("<f2").astype(np.float32)


def vectors(texts: Sequence[str], kind: str = "plan"):
    """Unit vectors of ``texts`` (an array, one row each) from the bundled embedding, or None
    without it. ``kind`` is the store they are kept in under ``stored_in``: 'source' for texts
    made by ``section_text``, 'plan' for any other."""
    if not texts or _embedder() is None:
        return None
    found = _STORE.get()
    if found is None:
        return _matrix(tuple(texts))
    from ..core.vectors import embedded, text_key
    from .searchindex.dense import vector_store

    conn, used = found
    if kind == "plan":
        used.update(text_key(t) for t in texts)
    return embedded(vector_store(conn, kind), list(texts), _embedder)


def section_texts(doc: SourceDoc) -> dict[str, str]:
    """{anchor: the text the search index embeds for that section of ``doc``}."""
    from .searchindex.chunks import source_chunks
    from .searchindex.dense import embed_text

    return {
        ch.anchor: embed_text(ch.title, ch.headings, ch.body)
        for ch in source_chunks(doc)
        if ch.kind == "source"
    }


def semantic(
    query: str, texts: Sequence[str], enabled: bool = True, kind: str = "plan"
) -> list[float] | None:
    """Cosine similarity of each text to ``query`` by meaning, scaled to [0, 1] over the texts (the
    closest 1, the farthest 0: a static embedding's cosines crowd together), or None when no
    embedding can be used (or ``enabled`` is False: the schema's
    ``search.semantic``)."""
    if not enabled or not texts:
        return None
    rows = vectors(texts, kind)
    q = vectors([query])
    if rows is None or q is None:
        return None
    sims = [float(x) for x in rows @ q[0]]
    low, high = min(sims), max(sims)
    return [(s - low) / (high - low) if high > low else 0.0 for s in sims]
