"""The vector store: unit vectors kept by the hash of their text, re-embedded only when the text
changes, and the nearest to a query found as exact cosine would find them."""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

import pytest

from wikic.core import embedding, vectors
from wikic.core.vectors import VectorStore, embed_missing, text_key


class CountingEmbedder:
    """Deterministic stand-in vectors (from each text's hash), counting what it is asked for."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self) -> CountingEmbedder:
        return self

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        rngs = [random.Random(t) for t in texts]
        return [embedding.unit([rng.gauss(0, 1) for _ in range(embedding.DIM)]) for rng in rngs]


def test_the_store_embeds_only_the_texts_that_changed(tmp_path: Path) -> None:
    db = tmp_path / "vectors.sqlite"
    conn = sqlite3.connect(db)
    store, embedder = VectorStore(conn, "sections"), CountingEmbedder()
    texts = [f"section {i} about {word}" for i, word in enumerate(["tanks", "lights", "pods", "seeds"])]
    assert embed_missing(store, texts, embedder) == 4 and len(embedder.seen) == 4
    before, changes = db.read_bytes(), conn.total_changes
    assert embed_missing(store, texts, embedder) == 0 and store.keep(map(text_key, texts)) == 0
    assert conn.total_changes == changes and db.read_bytes() == before  # a no-change run writes nothing
    texts[2] = "section 2 about pods, edited"
    assert embed_missing(store, texts, embedder) == 1 and embedder.seen[-1] == texts[2]
    assert store.keep(map(text_key, texts)) == 1 and sorted(store.keys()) == sorted(map(text_key, texts))
    query = embedder.embed([texts[2]])[0]
    assert store.nearest(query, 2)[0] == (pytest.approx(1.0, abs=1e-3), text_key(texts[2]))
    other = VectorStore(sqlite3.connect(db), "sections")  # another connection sees the same vectors
    assert [k for _, k in other.nearest(query, 4)] == [k for _, k in store.nearest(query, 4)]


def test_vectors_of_another_model_are_dropped(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "vectors.sqlite")
    old, embedder = VectorStore(conn, "sections", model="old-model"), CountingEmbedder()
    embed_missing(old, ["a text"], embedder)
    new = VectorStore(conn, "sections")
    assert new.keys() == [] and new.nearest(embedder.embed(["a text"])[0]) == []
    assert embed_missing(new, ["a text"], embedder) == 1 and old.keys() == []


def test_numpy_and_the_standard_library_store_the_same_bytes() -> None:
    np = pytest.importorskip("numpy")
    rows = np.random.default_rng(3).standard_normal((20, embedding.DIM)).astype(np.float32)
    rows[0, :5] = 0.0  # ties and zeros: the order of the largest components must agree too
    rows[1, 100:200] = rows[1, 3]  # a tie across the half that is kept: the lower indices are
    rows[2] = 0.5  # every component the same size
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    assert vectors.encode(rows) == vectors.encode(rows.tolist())
    for bad in (rows[:, :128], rows.reshape(-1)[: embedding.DIM * 2].reshape(1, -1), rows * np.nan):
        with pytest.raises(ValueError, match="finite numbers"):
            vectors.encode(bad)
        with pytest.raises(ValueError, match="finite numbers"):
            vectors.encode(bad.tolist())


def test_nearest_finds_what_exact_cosine_finds(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    # 500 groups of 10 vectors around a centre each: the first few for a query near a centre are
    # its group, in an order only the exact cosine gives; the passes before it must keep them all.
    centres = rng.standard_normal((500, 1, embedding.DIM))
    rows = (centres + 0.7 * rng.standard_normal((500, 10, embedding.DIM))).reshape(-1, embedding.DIM)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    keys = [f"k{i:05d}" for i in range(len(rows))]
    store = VectorStore(sqlite3.connect(tmp_path / "v.sqlite"), "sections")
    store.put(keys, rows)
    stored = rows.astype(np.float16).astype(np.float64)
    for group in rng.choice(len(centres), 20, replace=False):
        query = centres[group, 0] + 0.7 * rng.standard_normal(embedding.DIM)
        query = (query / np.linalg.norm(query)).tolist()
        scores = stored @ np.array(query)
        exact = np.argsort(-scores)[:5]
        found = store.nearest(query, 5)
        assert [k for _, k in found] == [keys[i] for i in exact]
        assert len(store.nearest(query, 150)) == 150  # more than the passes keep by default
        assert [s for s, _ in found] == pytest.approx(scores[exact].tolist(), abs=1e-9)
        subset = set(keys[1::2])
        within = store.nearest(query, 3, candidates=subset)
        best_in_subset = [keys[i] for i in np.argsort(-scores) if keys[i] in subset][:3]
        assert [k for _, k in within] == best_in_subset


def test_a_matrix_of_stored_vectors_is_the_same_embedded_or_found(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    conn = sqlite3.connect(tmp_path / "v.sqlite")
    store, embedder = VectorStore(conn, "docs"), CountingEmbedder()
    texts = ["tank", "light", "tank", "pods"]
    first = vectors.stored_or_embedded(None, texts, embedder.embed)
    assert first.shape == (4, embedding.DIM) and first.dtype == np.float32 and len(embedder.seen) == 3
    fresh = np.array(embedder.embed(texts), dtype=np.float32)
    assert np.array_equal(first, fresh.astype(np.float16).astype(np.float32))  # the stored float16 values
    embed_missing(store, ["tank", "light"], embedder)
    seen, changes = len(embedder.seen), conn.total_changes
    again = vectors.stored_or_embedded(store, texts, embedder.embed)
    assert np.array_equal(first, again)
    assert (
        embedder.seen[seen:] == ["pods"] and conn.total_changes == changes
    )  # found, or embedded: never written


def test_the_passes_keep_what_their_definitions_say() -> None:
    """The sign pass keeps every member closer than the first distance that reaches ``keep``
    (ties included, a distance of 256 too); the two-bit pass keeps the ``keep`` of least cost,
    ties in pool order: checked against the definitions written out, on masks made to tie."""
    rng = random.Random(5)
    base = rng.getrandbits(embedding.DIM)
    signs = [
        base ^ sum(1 << rng.randrange(embedding.DIM) for _ in range(rng.randrange(8))) for _ in range(300)
    ]
    larges = [rng.getrandbits(embedding.DIM) for _ in signs]
    full = (1 << embedding.DIM) - 1
    packed = b"".join(m.to_bytes(embedding.DIM // 8, "big") for m in signs)
    scan = vectors._Scan(1, struct.pack("<300q", *range(300)), packed, packed)
    planes = scan.sign_planes()
    assert planes == [
        sum((m >> (embedding.DIM - 1 - j) & 1) << i for i, m in enumerate(signs)) for j in range(256)
    ]
    for query, pool in [
        (base, range(300)),
        (base ^ 7, list(range(0, 300, 2))),
        (full ^ signs[3], range(300)),
    ]:
        distance = {i: (query ^ signs[i]).bit_count() for i in pool}
        limit = sorted(distance.values())[49] + 1
        kept = vectors.by_signs(query, signs, pool, 50)
        assert list(kept) == [i for i in pool if distance[i] < limit] and len(kept) > 50  # ties
        if pool == range(300):  # and from the masks bit-sliced, as a store searched again reads them
            assert vectors.by_signs_sliced(query, planes, 300, 50) == list(kept)
        ql = larges[0]
        cost = {}
        for i in kept:
            d, both = query ^ signs[i], ql & larges[i]
            cost[i] = (
                d.bit_count()
                + 2 * (d & ql).bit_count()
                + 2 * (d & larges[i]).bit_count()
                + 4 * (d & both).bit_count()
                - 2 * both.bit_count()
            )
        best = sorted(kept, key=lambda i: (cost[i], i))[:20]
        assert list(vectors.by_two_bits(query, ql, signs, larges, kept, 20)) == best


def test_a_search_reads_the_vectors_a_writer_replaced(tmp_path: Path) -> None:
    """Vectors read by one search are kept for the next, until a writer changes the store: then
    the new ones are read, even under the rowids the old ones had."""
    db = tmp_path / "v.sqlite"
    reader, writer = VectorStore(sqlite3.connect(db), "s"), VectorStore(sqlite3.connect(db), "s")
    embedder = CountingEmbedder()
    keys = [f"k{i}" for i in range(5)]
    writer.put(keys, embedder.embed(keys))
    query = embedder.embed(["k2"])[0]
    assert reader.nearest(query, 1)[0] == (pytest.approx(1.0, abs=1e-3), "k2")
    writer.keep([])  # every row gone: the next rows take the same rowids
    writer.put(keys, embedder.embed([f"other {k}" for k in keys]))
    assert reader.nearest(query, 5) == writer.nearest(query, 5)
    assert reader.nearest(query, 1)[0][0] < 0.5
