"""Reading the search index's vectors for a question: its embedding, from the query path's file
(``.wikic/embedding.bin``, standard library only), and the chunks nearest it by cosine, per kind
(``core/vectors.py``). Compile writes both (``compile/searchindex/dense.py``).

When ``search.semantic`` is off nothing here is read. When it is on but cannot be used (the
package was missing when the index was made, or the query file is missing or damaged), the reason
is kept as ``note``, said once per run by the caller, and the dense lists are empty: the lookup
goes on by words alone.

A reader has a database connection of its own: a search works out the nearest chunks while its
BM25 lists are read on the index's connection in another thread (``search.retrieve``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

TYPE_CHECKING = False  # not typing's: a search imports this module
if TYPE_CHECKING:
    from ..compile.searchindex.dense import DenseState
    from ..core.embedding import QueryEmbedder


class DenseReader:
    """The vectors of one index, for questions."""

    def __init__(self, db_path: Path, root: Path, state: DenseState | None):
        self.db_path, self.root = db_path, root
        self._conn: sqlite3.Connection | None = None
        self.on = state is not None and state.on
        self.note = state.note if self.on else ""  # why the vectors cannot be used ('' if they can)
        self._embedder: QueryEmbedder | None = None
        self._stores: dict = {}

    @property
    def usable(self) -> bool:
        return self.on and not self.note

    def embedder(self) -> QueryEmbedder | None:
        """The query embedder, opened on first use; None (and ``note`` says why) when it cannot be."""
        if self._embedder is None and self.usable:
            from ..core.embedding import QUERY_ASSETS, QueryEmbedder, Unavailable

            try:
                self._embedder = QueryEmbedder.open(self.root / QUERY_ASSETS)
            except Unavailable as exc:
                self.note = str(exc)
        return self._embedder

    def nearest(
        self, wanted: Mapping[tuple[str, str], int]
    ) -> dict[tuple[str, str], Sequence[tuple[float, str]]]:
        """For each (kind, text): the ``depth`` vector keys nearest the text's embedding among
        the chunks of that kind, as (cosine, key), best first; none when the vectors cannot be used."""
        embedder = self.embedder()
        if embedder is None:
            return {key: () for key in wanted}
        vectors: dict[str, list[float]] = {}
        out = {}
        for (kind, text), depth in wanted.items():
            if text not in vectors:
                vectors[text] = embedder.embed(text)
            out[(kind, text)] = self.store(kind).nearest(vectors[text], depth)
        return out

    def store(self, kind: str):
        if kind not in self._stores:
            from ..compile.searchindex.dense import vector_store

            self._stores[kind] = vector_store(self.conn(), kind)
        return self._stores[kind]

    def conn(self) -> sqlite3.Connection:
        """This reader's own connection to the index (opened on first use)."""
        if self._conn is None:
            self._conn = sqlite3.connect(self.db_path, check_same_thread=False)
        return self._conn

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        if self._conn is not None:
            self._conn.close()
            self._conn, self._stores = None, {}
