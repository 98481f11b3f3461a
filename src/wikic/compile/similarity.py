"""How well texts fit a subject: by their words, and by meaning where an embedding is installed.

The planner asks two questions of this module: which sections fit a guide's purpose, and which
documents share a subject. Words answer both (BM25 over the texts, and the words of their titles
and headings); a text embedding answers them better where words differ ('going away' and
'vacation'). ``vectors`` is the one place that reaches for an embedding: the bundled offline one
of ``core.embedding`` (WordLlama) when it can be used, else nothing, and every caller then scores
by words alone. Scores are in [0, 1]; one query is compared with many texts, never all pairs.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

from ..core.bm25 import BM25, tokens
from ..core.models import SourceDoc
from .citations import stem


def terms(text: str) -> set[str]:
    """The content words of ``text``, stemmed ('Cleaning the tanks' → {'clean', 'tank'})."""
    return {stem(t) for t in tokens(text)}


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def saying(text: str) -> tuple[set[str], set[str]]:
    """What a sentence says, as two sentences are compared: its words (stemmed) and its numbers."""
    return terms(text), set(_NUMBER.findall(text))


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


def load_embedding() -> bool:
    """Load the bundled embedding now (before forking: the forks then share it); whether it can be used."""
    return _embedder() is not None


# the search index's database while planning (None: none to read), and each process's view of
# it (a connection is never used across a fork: the planner forks)
_STORE: ContextVar[Path | None] = ContextVar("wikic_planning_vectors", default=None)
_VIEWS: dict[tuple[int, Path], _View] = {}


class _View:
    """One process's view of the search index while planning: a read-only connection (None when
    there is no index to read) and the vectors it embedded itself, each text once. It never
    waits for a writer: compile brings layer 1 into the index alongside, in one long
    transaction, and an index locked meanwhile reads as holding nothing (``vectors`` then embeds
    the texts here, to the same vectors) instead of stalling the plan until it commits."""

    def __init__(self, path: Path):
        try:
            self.conn: sqlite3.Connection | None = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0
            )
        except sqlite3.Error:
            self.conn = None
        self.made: dict[str, object] = {}

    def embed(self, texts: list[str]) -> list:
        todo = [t for t in dict.fromkeys(texts) if t not in self.made]
        if todo:
            self.made.update(zip(todo, _embedder().embed(todo), strict=True))
        return [self.made[t] for t in texts]


@contextmanager
def stored_in(db_path: Path) -> Iterator[None]:
    """Planning reads the vectors of layer-1 sections from the search index at ``db_path``, as
    the last compile left them (a section's text is its key there, ``section_texts``), and
    embeds the texts it does not find once, writing nothing: compile brings the index up to
    date in a process of its own meanwhile. Without a readable index, it embeds them all."""
    token = _STORE.set(db_path)
    try:
        yield
    finally:
        _STORE.reset(token)
        view = _VIEWS.pop((os.getpid(), db_path), None)
        if view is not None and view.conn is not None:
            view.conn.close()


def _view() -> _View | None:
    """This process's view of the index ``stored_in`` names, or None outside it."""
    path = _STORE.get()
    if path is None:
        return None
    key = (os.getpid(), path)
    if key not in _VIEWS:
        _VIEWS[key] = _View(path)
    return _VIEWS[key]


@lru_cache(maxsize=4)  # outside ``stored_in``: a guide's query and its best sections, one plan's profiles
def _matrix(texts: tuple[str, ...]):
    from ..core.vectors import stored_or_embedded

    embedder = _embedder()
    return None if embedder is None else stored_or_embedded(None, texts, embedder.embed)


def vectors(texts: Sequence[str], kind: str = "plan"):
    """Unit vectors of ``texts`` (an array, one row each, the float16 values an index keeps) from
    the bundled embedding, or None without it. ``kind``: 'source' for texts made by
    ``section_texts``, found in the index under ``stored_in``; 'plan' for any other."""
    if not texts or _embedder() is None:
        return None
    view = _view()
    if view is None:
        return _matrix(tuple(texts))
    from ..core.vectors import stored_or_embedded
    from .searchindex.dense import vector_store

    store = vector_store(view.conn, kind) if view.conn is not None and kind == "source" else None
    try:
        return stored_or_embedded(store, list(texts), view.embed)
    except sqlite3.Error:  # an index of another version, or damaged: the compile rebuilds it
        return stored_or_embedded(None, list(texts), view.embed)


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
