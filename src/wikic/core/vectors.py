"""Unit vectors kept in SQLite by the content hash of the text they stand for, and the nearest of
them to a query, found with the standard library.

A store is two tables in any SQLite database (its own file, or the search index's):

- ``<name>`` holds one row per text: its key, its float16 vector and two 256-bit masks — the
  signs of the vector's components, and which half of them are the largest in size;
- ``<name>_scan`` holds one row: every key, rowid and both masks packed in key order, rewritten
  in the same transaction as any change, so that a search reads three blobs instead of a row per
  text (and the keys only when it filters by them).

``nearest`` narrows the texts in three passes, each cheap enough for the number it sees:

1. the sign masks: how many signs differ (one XOR and a bit count per text; for a store searched
   again in one process, every text at once from the masks bit-sliced) keeps ``SIGN_KEEP``;
2. both masks: the dot product of the two vectors with each component reduced to ±1 or ±3
   (five bit counts) keeps ``TWO_BIT_KEEP``;
3. the float16 vectors of those: their exact cosine orders the result.

On 10,000 sections the ten nearest by exact cosine are found 98% of the time; signs alone would
need about four times as many exact cosines for 94%.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import sqlite3
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, repeat
from operator import add, and_, mul, sub

from .embedding import DIM, MODEL, BatchEmbedder

TYPE_CHECKING = False  # not typing's: a search imports this module
if TYPE_CHECKING:
    import numpy as np

SIGN_KEEP = 1000
TWO_BIT_KEEP = 100
MASK_BYTES = DIM // 8
_ROW = struct.Struct(f"<{DIM}e")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")

Vector = Sequence[float]


def text_key(text: str) -> str:
    """The key of a text: the first 128 bits of its SHA-256, in hex."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class VectorStore:
    """The vectors of one kind of text (``name``) in ``conn``'s database, for ``model``."""

    def __init__(self, conn: sqlite3.Connection, name: str = "vectors", model: str = MODEL):
        if not _NAME.match(name):
            raise ValueError(f"vector store name {name!r}: use lower-case letters, digits and '_'")
        self.conn, self.name, self.model = conn, name, model
        self._scan: _Scan | None = None

    # -- writing (each call is one transaction, or part of the caller's if one is open)

    def put(self, keys: Sequence[str], vectors: Sequence[Vector] | np.ndarray) -> int:
        """Store ``vectors`` (a numpy array of rows, or sequences of floats) under ``keys``,
        replacing what those keys held. Returns how many were stored."""
        if not len(keys) and not len(vectors):
            return 0
        return self.put_batches([(keys, vectors)])

    def put_batches(self, batches: Iterable[tuple[Sequence[str], Sequence[Vector] | np.ndarray]]) -> int:
        """``put`` each (keys, vectors) of ``batches`` (which may be made as they are asked for),
        in one transaction that packs the masks once. Returns how many were stored."""
        stored = 0
        with self._writing():
            for keys, vectors in batches:
                if len(keys) != len(vectors):
                    raise ValueError(f"{len(keys)} keys for {len(vectors)} vectors")
                if any("\n" in key for key in keys):
                    raise ValueError("a key holds a line break")
                rows = zip(keys, *encode(vectors))
                self.conn.executemany(f"INSERT OR REPLACE INTO {self.name} VALUES (?, ?, ?)", rows)
                stored += len(keys)
            if stored:
                self._write_scan()
        return stored

    def keep(self, keys: Iterable[str]) -> int:
        """Delete every vector whose key is not in ``keys``; returns how many. Writes nothing
        when there is nothing to delete."""
        wanted = set(keys)
        gone = [k for k in self.keys() if k not in wanted]
        if gone or not self._same_model():
            with self._writing():
                for start in range(0, len(gone), 500):
                    part = gone[start : start + 500]
                    marks = ",".join("?" * len(part))
                    self.conn.execute(f"DELETE FROM {self.name} WHERE key IN ({marks})", part)
                self._write_scan()
        return len(gone)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Create the tables if needed, drop vectors of another model, and commit at the end
        unless the caller has a transaction open (then it commits)."""
        own = not self.conn.in_transaction
        with self.conn if own else contextlib.nullcontext():
            self.conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.name} (key TEXT PRIMARY KEY, masks BLOB, vec BLOB)"
            )
            self.conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.name}_scan (id INTEGER PRIMARY KEY CHECK (id = 0),"
                " model TEXT, generation INTEGER, keys TEXT, rowids BLOB, signs BLOB, larges BLOB)"
            )
            if not self._same_model():
                self.conn.execute(f"DELETE FROM {self.name}")
            yield
        self._scan = None

    def _write_scan(self) -> None:
        rows = self.conn.execute(f"SELECT rowid, key, masks FROM {self.name} ORDER BY key").fetchall()
        generation = (self._row("generation") or 0) + 1
        self.conn.execute(
            f"INSERT OR REPLACE INTO {self.name}_scan VALUES (0, ?, ?, ?, ?, ?, ?)",
            (
                self.model,
                generation,
                "\n".join(k for _, k, _ in rows),
                struct.pack(f"<{len(rows)}q", *(r for r, _, _ in rows)),
                b"".join(m[:MASK_BYTES] for _, _, m in rows),
                b"".join(m[MASK_BYTES:] for _, _, m in rows),
            ),
        )

    # -- reading (never writes; a store never written to reads as empty)

    def _row(self, column: str) -> int | str | None:
        try:
            row = self.conn.execute(f"SELECT {column} FROM {self.name}_scan WHERE id = 0").fetchone()
        except sqlite3.OperationalError:  # no such table: nothing stored yet
            return None
        return row[0] if row else None

    def _same_model(self) -> bool:
        return self._row("model") in (None, self.model)

    def keys(self) -> list[str]:
        """Every key stored, in order."""
        scan = self._load()
        if scan is None:
            return []
        if scan.keys is None:
            (text,) = self.conn.execute(f"SELECT keys FROM {self.name}_scan WHERE id = 0").fetchone()
            scan.keys = text.split("\n")
        return list(scan.keys)

    def missing(self, keys: Iterable[str]) -> list[str]:
        """The keys in ``keys`` that hold no vector, in their order, once each."""
        have = set(self.keys())
        return [k for k in dict.fromkeys(keys) if k not in have]

    def get(self, keys: Iterable[str]) -> dict[str, bytes]:
        """{key: its vector as DIM little-endian float16} for the keys that hold one."""
        wanted = list(dict.fromkeys(keys))
        return dict(self._where_in("key, vec", "key", wanted)) if wanted and self._load() else {}

    def _where_in(self, columns: str, column: str, values: list) -> Iterator[tuple]:
        """``columns`` of the rows whose ``column`` is one of ``values``."""
        for start in range(0, len(values), 500):
            part = values[start : start + 500]
            sql = f"SELECT {columns} FROM {self.name} WHERE {column} IN ({','.join('?' * len(part))})"
            yield from self.conn.execute(sql, part)

    def _load(self) -> _Scan | None:
        """The packed masks, read again only when a writer has changed them since; None when the
        store is empty or holds another model."""
        try:
            row = self.conn.execute(f"SELECT generation, model FROM {self.name}_scan WHERE id = 0").fetchone()
        except sqlite3.OperationalError:  # no such table: nothing stored yet
            return None
        if row is None or row[1] != self.model:
            return None
        if self._scan is None or self._scan.generation != row[0]:
            self._scan = _Scan(
                row[0],
                *self.conn.execute(
                    f"SELECT rowids, signs, larges FROM {self.name}_scan WHERE id = 0"
                ).fetchone(),
            )
        return self._scan if self._scan.rowids else None

    def nearest(
        self, query: Vector, k: int = 10, candidates: Iterable[str] | None = None
    ) -> list[tuple[float, str]]:
        """The ``k`` stored vectors with the highest cosine to ``query`` (a unit vector), as
        (cosine, key), best first; only among ``candidates`` when given."""
        scan = self._load()
        if scan is None or k < 1 or not any(query):
            return []
        pool: Sequence[int] = range(len(scan.rowids))
        if candidates is not None:
            wanted = set(candidates)
            pool = [i for i, key in enumerate(self.keys()) if key in wanted]
        query_signs, query_larges = masks(query)
        exact = max(TWO_BIT_KEEP, k)
        keep = max(SIGN_KEEP, 10 * exact)
        if candidates is None and scan.searched():
            pool = by_signs_sliced(query_signs, scan.sign_planes(), len(scan.rowids), keep)
        else:
            pool = by_signs(query_signs, scan.signs, pool, keep)
        pool = by_two_bits(query_signs, query_larges, scan.signs, scan.larges, pool, exact)
        scored = [(sum(map(mul, query, _ROW.unpack(vec))), key) for key, vec in self._vectors(scan, pool)]
        scored.sort(key=lambda s: (-s[0], s[1]))
        return scored[:k]

    def _vectors(self, scan: _Scan, pool: Sequence[int]) -> list[tuple[str, bytes]]:
        """(key, vector) of the members of ``pool``: those read before from ``scan``'s generation
        of the store are not read again."""
        rowids = [scan.rowids[i] for i in pool]
        seen = scan.vectors
        missing = [r for r in rowids if r not in seen]
        rows = self._where_in("rowid, key, vec", "rowid", missing)
        seen.update((rowid, (key, vec)) for rowid, key, vec in rows)
        return [seen[r] for r in rowids if r in seen]


class _Scan:
    """What a search reads of a store: the rowid, sign mask and large mask of every vector, in
    key order; the keys themselves only when they are asked for; and, for the next searches of
    the same generation, the (key, vector) of each rowid a search has read and the sign masks
    bit-sliced (``sign_planes``: a process that searches once does not make them)."""

    __slots__ = ("generation", "rowids", "signs", "larges", "keys", "vectors", "packed", "planes", "searches")

    def __init__(self, generation: int, rowids: bytes, signs: bytes, larges: bytes):
        n = len(rowids) // 8
        self.generation = generation
        self.rowids = struct.unpack(f"<{n}q", rowids)
        self.signs = _ints(signs, n)
        self.larges = _ints(larges, n)
        self.keys: list[str] | None = None
        self.vectors: dict[int, tuple[str, bytes]] = {}
        self.packed, self.planes, self.searches = signs, None, 0

    def searched(self) -> bool:
        """Whether this generation was searched before (counting this search)."""
        self.searches += 1
        return self.searches > 1

    def sign_planes(self) -> list[int]:
        """Plane j: an integer whose bit i is set when component j (from the top) of vector i
        is above zero."""
        if self.planes is None:
            self.planes = []
            for c in range(MASK_BYTES):
                column = self.packed[c::MASK_BYTES][::-1]  # the last vector first: vector i is bit i
                self.planes += [int(column.translate(_bit_digits(b)), 2) for b in range(7, -1, -1)]
        return self.planes


def _ints(packed: bytes, n: int) -> list[int]:
    """``n`` masks of ``MASK_BYTES`` packed one after another, as integers."""
    return list(map(int.from_bytes, struct.unpack(f"{MASK_BYTES}s" * n, packed), repeat("big")))


# ---------------------------------------------------------------- the passes


def by_signs(query: int, signs: list[int], pool: Sequence[int], keep: int) -> Sequence[int]:
    """The members of ``pool`` whose sign masks differ least from ``query``'s: at least ``keep``
    of them (all those tied with the last one kept)."""
    if len(pool) <= keep:
        return pool
    masks = signs if pool == range(len(signs)) else [signs[i] for i in pool]
    try:  # one byte per member: how many of its signs differ (at most 255)
        distance = bytes(map(int.bit_count, map(query.__xor__, masks)))
    except ValueError:  # a member whose every sign differs
        return _by_signs_counted(list(map(int.bit_count, map(query.__xor__, masks))), pool, keep)
    limit = _least_limit(lambda under: distance.translate(_below(under)).count(1), keep, DIM)
    return list(compress(pool, distance.translate(_below(limit))))


def by_signs_sliced(query: int, planes: list[int], n: int, keep: int) -> Sequence[int]:
    """``by_signs`` over all ``n`` vectors, from their sign masks bit-sliced: each operation
    counts the differing signs of every vector at once."""
    if n <= keep:
        return range(n)
    every = (1 << n) - 1
    differ = [p ^ every if query >> (DIM - 1 - j) & 1 else p for j, p in enumerate(planes)]
    distance = _column_sum(differ)
    limit = _least_limit(lambda under: _under(distance, under, every).bit_count(), keep, DIM + 1)
    kept = format(_under(distance, limit, every), f"0{n}b")[::-1].encode().translate(_DIGIT_BITS)
    return list(compress(range(n), kept))


def _least_limit(kept: Callable[[int], int], keep: int, most: int) -> int:
    """The least limit up to ``most`` for which ``kept(limit)``, the members whose distance is
    under it, are at least ``keep`` (``kept(most)`` is every member)."""
    lo, hi = 1, most
    while lo < hi:
        mid = (lo + hi) // 2
        if kept(mid) >= keep:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _column_sum(planes: list[int]) -> list[int]:
    """The bits, lowest first, of how many of ``planes`` have each bit set: full adders over
    whole planes, three planes of one weight making one of it and a carry of the next."""
    columns: list[list[int]] = [list(planes)]
    out: list[int] = []
    while len(out) < len(columns):
        column, carries = columns[len(out)], []
        while len(column) > 1:
            a, b = column.pop(), column.pop()
            c = column.pop() if column else 0
            half = a ^ b
            column.append(half ^ c)
            carries.append((a & b) | (half & c))
        if carries and len(columns) == len(out) + 1:
            columns.append(carries)
        elif carries:
            columns[len(out) + 1] += carries
        out.append(column[0] if column else 0)
    return out


def _under(bits: list[int], limit: int, every: int) -> int:
    """The rows whose number (``bits``, lowest first, one plane each) is under ``limit``."""
    under, equal = 0, every
    for k in range(max(len(bits), limit.bit_length()) - 1, -1, -1):
        plane = bits[k] if k < len(bits) else 0
        if limit >> k & 1:
            under |= equal & (every ^ plane)
            equal &= plane
        else:
            equal &= every ^ plane
    return under


@functools.cache
def _bit_digits(b: int) -> bytes:
    """A ``bytes.translate`` table: the digit '1' for a byte with bit ``b`` set, else '0'."""
    return bytes(49 if v >> b & 1 else 48 for v in range(256))


_DIGIT_BITS = bytes.maketrans(b"01", b"\x00\x01")


def _by_signs_counted(distance: list[int], pool: Sequence[int], keep: int) -> list[int]:
    counts = Counter(distance)
    limit = kept = 0
    while kept < keep:
        kept += counts.get(limit, 0)
        limit += 1
    return list(compress(pool, map(limit.__gt__, distance)))


def _below(limit: int) -> bytes:
    """A ``bytes.translate`` table: 1 for a byte under ``limit``, 0 for the others."""
    return b"\x01" * limit + bytes(256 - limit)


def by_two_bits(
    query_signs: int, query_larges: int, signs: list[int], larges: list[int], pool: Sequence[int], keep: int
) -> Sequence[int]:
    """The ``keep`` members of ``pool`` nearest to the query with every component reduced to
    ±1 or ±3 (±3 for the largest half in size), ties in pool order. Their dot product is 768 +
    4·|both large| minus twice the weight of the components whose signs differ, weighing 1, 3
    or 9; so the ones with the least ``differ + 2·(differ & (large q | large v)) + 6·(differ &
    both) − 2·both`` come first."""
    if len(pool) <= keep:
        return pool
    ql, count = query_larges, int.bit_count
    differ = list(map(query_signs.__xor__, [signs[i] for i in pool]))
    large = [larges[i] for i in pool]
    both = list(map(ql.__and__, large))
    either = map(count, map(and_, differ, map(ql.__or__, large)))
    weighed = map(add, either, map((3).__mul__, map(count, map(and_, differ, both))))
    cost = list(map(add, map(count, differ), map((2).__mul__, map(sub, weighed, map(count, both)))))
    order = sorted(range(len(pool)), key=cost.__getitem__)
    return [pool[j] for j in order[:keep]]


def masks(vector: Vector) -> tuple[int, int]:
    """(signs, larges) of a vector rounded to float16: bit j (from the top) of ``signs`` is set
    when component j is above zero, of ``larges`` when it is among the DIM/2 largest in size
    (ties go to the lower index)."""
    rounded = _ROW.unpack(_ROW.pack(*vector))
    signs = int("".join("1" if x > 0 else "0" for x in rounded), 2)
    order = sorted(range(DIM), key=lambda j: -abs(rounded[j]))
    larges = sum(1 << (DIM - 1 - j) for j in order[: DIM // 2])
    return signs, larges


def encode(vectors: Sequence[Vector] | np.ndarray) -> tuple[list[bytes], list[bytes]]:
    """(masks, float16 vector) of each vector, as stored: numpy arrays are encoded with numpy,
    other sequences with the standard library, to the same bytes. A ValueError for a vector of
    another length or with a component that is not a finite number."""
    if hasattr(vectors, "dtype"):
        return _encode_numpy(vectors)
    out_masks, out_vecs = [], []
    for vector in vectors:
        if len(vector) != DIM or not all(map(math.isfinite, vector)):
            raise ValueError(f"a vector to store must be {DIM} finite numbers")
        signs, larges = masks(vector)
        out_masks.append(signs.to_bytes(MASK_BYTES, "big") + larges.to_bytes(MASK_BYTES, "big"))
        out_vecs.append(_ROW.pack(*vector))
    return out_masks, out_vecs


def _encode_numpy(vectors: np.ndarray) -> tuple[list[bytes], list[bytes]]:
    import numpy as np

    if vectors.ndim != 2 or vectors.shape[1] != DIM or not np.isfinite(vectors).all():
        raise ValueError(f"vectors to store must be rows of {DIM} finite numbers, got shape {vectors.shape}")
    half = vectors.astype("<f2")
    # the DIM/2 largest in size, ties to the lower index: all above the row's (DIM/2)th size, and
    # of those equal to it, the first few (a partition, not a sort of float16s: several times quicker)
    size = np.abs(half).astype(np.float32)
    k = DIM // 2
    nth = -np.partition(-size, k - 1, axis=1)[:, k - 1 : k]
    above, tied = size > nth, size == nth
    large = above | (tied & (np.cumsum(tied, axis=1) <= k - above.sum(axis=1, keepdims=True)))
    packed = np.concatenate([np.packbits(half > 0, axis=1), np.packbits(large, axis=1)], axis=1)
    return [row.tobytes() for row in packed], [row.tobytes() for row in half]


def embed_missing(
    store: VectorStore,
    texts: Iterable[str],
    embedder: Callable[[], BatchEmbedder],
    key: Callable[[str], str] = text_key,
) -> int:
    """Embed and store the texts whose key the store lacks (loading the embedder only if there
    is one); returns how many. A run where none is missing writes nothing."""
    by_key = {key(t): t for t in texts}
    todo = store.missing(by_key)
    if todo:
        store.put(todo, embedder().embed([by_key[k] for k in todo]))
    return len(todo)


def stored_or_embedded(
    store: VectorStore | None,
    texts: Sequence[str],
    embed: Callable[[list[str]], Sequence[Vector] | np.ndarray],
) -> np.ndarray:
    """A float32 numpy array (len(texts), DIM) of the vectors of ``texts`` as a store keeps them
    (float16 values): those ``store`` holds read from it, the others embedded by ``embed``, and
    nothing written. A text found and the same text embedded give the same row."""
    import numpy as np

    keys = [text_key(t) for t in texts]
    found = store.get(keys) if store is not None else {}
    todo = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
    if todo:
        half = np.asarray(embed(todo), dtype=np.float32).astype("<f2")
        found.update(zip(map(text_key, todo), (row.tobytes() for row in half), strict=True))
    data = b"".join(found[k] for k in keys)
    return np.frombuffer(data, dtype="<f2").reshape(len(keys), DIM).astype(np.float32)
