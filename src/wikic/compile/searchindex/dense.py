"""The search index's vectors: every layer-1 section and document embedded (``core/embedding.py``)
and kept by the hash of the text embedded (``core/vectors.py``), one store per kind of chunk, so a
search can match a question by meaning as well as by words.

A chunk's ``vkey`` column names its vector. Bringing the vectors up to date embeds only the texts
whose vector is missing (a changed section: nothing else) and deletes the vectors no chunk names;
a run where nothing changed writes nothing. The query path's file (``.wikic/embedding.bin``) is
written beside the index when it is missing or damaged.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

TYPE_CHECKING = (
    False  # not typing's: a search imports this module, and needs the rest only to match by meaning
)
if TYPE_CHECKING:
    from ...core.embedding import BatchEmbedder
    from ...core.vectors import VectorStore

KINDS = ("source", "doc")  # the kinds of chunk (files.TABLES) that get vectors
BATCH = 4096  # texts embedded and stored at a time: memory stays flat on a large knowledge base
POOLED_FROM = 256  # texts to embed: fewer are embedded here sooner than processes start
STATE = "dense"  # the meta key of what the vectors are, for which schema/wiki.yaml (DenseState)
SYNCED = "dense_synced"  # a meta key present while every chunk has its vector (dropped with any change)
_MODEL: BatchEmbedder | None = None  # the embedder the forked processes of ``_embedding`` inherit


def embed_text(title: str, headings: str, body: str) -> str:
    """What a chunk's vector stands for: its title, headings and text, one to a line."""
    return "\n".join(part for part in (title, headings, body) if part)


def vector_key(kind: str, title: str, headings: str, body: str) -> str:
    """The ``vkey`` of a chunk: the hash of its embedded text, or '' for a kind without vectors."""
    from ...core.vectors import text_key

    return text_key(embed_text(title, headings, body)) if kind in KINDS else ""


def vector_store(conn: sqlite3.Connection, kind: str) -> VectorStore:
    from ...core.vectors import VectorStore

    return VectorStore(conn, f"vectors_{kind}")


class DenseState:
    """Whether matching by meaning is on for the schema it was read from (``schema`` is
    ``schema/wiki.yaml``'s text), and why it cannot be used when it cannot (``note``: the one-line
    message of ``embedding.Unavailable``; '' when the vectors and the query file are in place)."""

    __slots__ = ("schema", "on", "note")

    def __init__(self, schema: str, on: bool, note: str = ""):
        self.schema, self.on, self.note = schema, on, note

    @property
    def usable(self) -> bool:
        return self.on and not self.note

    def as_json(self) -> str:
        return json.dumps([self.schema, self.on, self.note])

    @classmethod
    def from_json(cls, text: str) -> DenseState:
        schema, on, note = json.loads(text)
        return cls(schema, bool(on), str(note))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DenseState) and (self.schema, self.on, self.note) == (
            other.schema,
            other.on,
            other.note,
        )


def sync_vectors(
    conn: sqlite3.Connection, embedder: Callable[[], BatchEmbedder], jobs: int = 1
) -> tuple[int, int]:
    """Give every chunk of ``KINDS`` its vector (embedded in ``jobs`` processes) and drop the
    vectors no chunk names: (embedded, removed). ``embedder`` is called only when a text needs
    embedding; its ``Unavailable`` is the caller's to report."""
    embedded = removed = 0
    embed: Callable[[list[str]], object] | None = None
    with contextlib.ExitStack() as stack:
        for kind in KINDS:
            store = vector_store(conn, kind)
            keys = [k for (k,) in conn.execute("SELECT DISTINCT vkey FROM chunks WHERE kind=?", (kind,))]
            missing = store.missing(keys)
            if missing:
                pooled = jobs if len(missing) >= POOLED_FROM else 1
                embed = embed or stack.enter_context(_embedding(embedder(), pooled))
                store.put_batches(
                    (part, embed([text for _, text in texts])) for part, texts in _texts(conn, kind, missing)
                )
                embedded += len(missing)
            removed += store.keep(keys)
    return embedded, removed


def _embed_part(texts: list[str]) -> object:
    assert _MODEL is not None
    return _MODEL.embed(texts)


@contextlib.contextmanager
def _embedding(model: BatchEmbedder, jobs: int) -> Iterator[Callable[[list[str]], object]]:
    """``model.embed``, or the same done in ``jobs`` processes forked with the model loaded, each
    embedding consecutive parts of a batch (a text's vector does not depend on its batch)."""
    from ...core import pool  # here: a search that embeds nothing never imports it

    global _MODEL
    if jobs <= 1 or not pool.can_fork():
        yield model.embed
        return
    import numpy as np

    _MODEL = model
    try:
        with pool.forked(jobs) as processes:

            def embed(texts: list[str]) -> object:
                cuts = [len(texts) * i // (2 * jobs) for i in range(2 * jobs + 1)]
                parts = [texts[a:b] for a, b in zip(cuts, cuts[1:])]
                return np.concatenate(processes.map(_embed_part, parts, chunksize=1))

            yield embed
    finally:
        _MODEL = None


def _texts(conn: sqlite3.Connection, kind: str, keys: Sequence[str]) -> Iterator[tuple[list[str], list]]:
    """(keys, [(key, embedded text)]) of ``keys``, ``BATCH`` at a time."""
    for start in range(0, len(keys), BATCH):
        part = keys[start : start + BATCH]
        found: dict[str, str] = {}
        for at in range(0, len(part), 500):
            some = part[at : at + 500]
            rows = conn.execute(
                "SELECT vkey, title, headings, body FROM chunks WHERE kind=? AND vkey IN"
                f" ({','.join('?' * len(some))})",
                [kind, *some],
            )
            for key, title, headings, body in rows:
                found.setdefault(key, embed_text(title, headings, body))
        yield part, [(key, found[key]) for key in part]


def ensure_query_file(root: Path) -> bool:
    """Write ``.wikic/embedding.bin`` unless it is there and whole; True when written.
    ``Unavailable`` when the model's files cannot be used."""
    from ...core.embedding import QUERY_ASSETS, QueryEmbedder, Unavailable, model_files, write_query_assets

    path = root / QUERY_ASSETS
    try:
        QueryEmbedder.open(path).close()
        return False
    except Unavailable:
        return write_query_assets(path, model_files())
