"""The search index's database: its tables, and keeping them in step with the knowledge base.

The index lives in ``.wikic/search.sqlite`` (derived, git-ignored, always rebuildable: a file
written by another version of the schema is rebuilt). It holds one FTS5 table per kind of chunk
(``chunks.py``), the chunks themselves, the layer-1 documents as parsed, and what a lookup would
otherwise read every file for: the wiki's entities, which documents are superseded, and the
backend the schema configures.

It is updated by content hash: a file whose bytes did not change is not touched, and a run with
no change writes nothing. With ``search.semantic`` on (``schema/wiki.yaml``), the layer-1
sections and documents also have vectors (``dense.py``), embedded when their text is new.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sqlite3
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from ...core.errors import ConfigError, KBError
from ...core.fsutil import sha256_tag
from .cjk import index_text
from .dense import STATE, SYNCED, DenseState, vector_key
from .entities import Entities
from .files import TABLES, kb_files

TYPE_CHECKING = False  # not typing's: a search imports this module
if TYPE_CHECKING:
    from ...core.models import SourceDoc
    from ..report import CompileReport
    from .chunks import Chunk

DB_PATH = ".wikic/search.sqlite"
SCHEMA_VERSION = 11
SETTLED = 2  # seconds after its last change a file's size and time are trusted to mark it unchanged
_CORRUPT = re.compile(r"malformed|not a database|corrupt|disk image", re.I)


def _unsynced(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn`` writing without waiting for the disk at each commit (about a hundred waits a
    compile, half its time on a small KB): the index is derived state, a killed wikic loses
    nothing (the system still writes what it was handed), and the damage a power cut may leave
    is found on open and rebuilt (``_rebuild``), or else mended by the next update. Raises
    ``sqlite3.DatabaseError`` when the file is no database."""
    conn.execute("PRAGMA synchronous=OFF")
    return conn


class UpdateStats:
    """What an update did. (A plain class, as are ``search.Hit`` and ``SearchResult``: a search
    that imported ``dataclasses`` would pay for it, and ``inspect``, at every start.)"""

    def __init__(self) -> None:
        self.added = self.changed = self.removed = self.unchanged = self.chunks = 0
        self.skipped: list[str] = []  # files that cannot be read, with the reason
        self.rebuilt = ""  # why a corrupt database was rebuilt
        self.embedded = 0  # texts given a vector
        self.semantic = ""  # why matching by meaning is off though the schema asks for it ('' if it is not)

    def __repr__(self) -> str:
        return f"UpdateStats({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    @property
    def wrote(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.embedded)


_DDL = [
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, kind TEXT NOT NULL, sha256 TEXT NOT NULL,"
    " stat TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, file TEXT NOT NULL, kind TEXT NOT NULL,"
    " path TEXT NOT NULL, anchor TEXT NOT NULL, heading TEXT NOT NULL, title TEXT NOT NULL,"
    " headings TEXT NOT NULL, body TEXT NOT NULL, refs TEXT NOT NULL,"
    " vkey TEXT NOT NULL, type TEXT NOT NULL, names TEXT NOT NULL)",  # vkey: the key of its vector
    # (dense.py), '' for a kind without; type: a whole wiki page's (entity, topic…), '' for any other
    # chunk; names: its subject's other names, searched with its title (what its FTS row is made of)
    "CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file)",
    "CREATE INDEX IF NOT EXISTS chunks_vkey ON chunks(vkey)",  # a dense list's hits
    "CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path, anchor)",  # the shown hits' snippets
    # every layer-1 document as parsed, so a lookup reads the ones it needs instead of all files
    "CREATE TABLE IF NOT EXISTS docs(path TEXT PRIMARY KEY, source TEXT NOT NULL, id TEXT NOT NULL,"
    " key TEXT NOT NULL, title TEXT NOT NULL, names TEXT NOT NULL, meta TEXT NOT NULL, body TEXT NOT NULL,"
    " sha256 TEXT NOT NULL, lead TEXT NOT NULL)",  # lead: the section a whole-document hit stands for
    # contentless: the text is in ``chunks`` (a search reads the FTS tables for matches and scores
    # only), and a chunk's FTS row is deleted with the values it was made of (``_delete``)
    *[
        f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{k} USING fts5(title, headings, body, content='',"
        " tokenize='porter unicode61 remove_diacritics 2')"
        for k in TABLES
    ],
]


class IndexStore:
    """The FTS5 database of one KB and what it holds: ``update()`` syncs it with the files.
    Reading it for a question is ``search.SearchIndex``'s part; that never writes."""

    def __init__(self, root: Path, db_path: Path | None = None):
        self.root = root
        self.db_path = db_path or root / DB_PATH
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self.rebuilt = ""  # why the database was found corrupt and rebuilt, if it was
        if self.db_path.exists() and not self.db_path.is_file():
            raise ConfigError(f"{self.db_path}: not a database file; remove it (wikic rebuilds the index)")
        self.conn = sqlite3.connect(self.db_path, check_same_thread=False)
        try:
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            self._rebuild(exc)

    def _rebuild(self, exc: sqlite3.DatabaseError) -> None:
        """Start over from an empty database: the index is derived state. Only corruption leads
        here; any other database error (such as a locked file) is raised."""
        if not _CORRUPT.search(str(exc)):
            raise exc
        self.conn.close()
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(str(self.db_path) + suffix).unlink(missing_ok=True)
        self.rebuilt = f"{self.db_path}: {exc}; rebuilt it"
        self.conn = sqlite3.connect(self.db_path, check_same_thread=False)
        self._ensure_schema()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_schema(self) -> None:
        c = _unsynced(self.conn)
        exists = c.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone()
        if exists:
            row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            found = int(row[0]) if row else None
            if found == SCHEMA_VERSION:
                return
            # derived state written by another version of wikic: start afresh, update() refills it
            c.close()
            self.db_path.unlink()
            self.conn = c = _unsynced(sqlite3.connect(self.db_path, check_same_thread=False))
        with c:
            for stmt in _DDL:
                c.execute(stmt)
            c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    # -- writing

    def update(
        self,
        files: dict[str, str] | None = None,
        docs: Mapping[str, SourceDoc] | None = None,
        semantic: bool | None = None,
        check: bool = False,
        stamps: bool = True,
        jobs: int = 1,
        kinds: Collection[str] | None = None,
        pages: Mapping[str, Made] | None = None,
    ) -> UpdateStats:
        """Sync with the KB by content hash: only added, changed and deleted files touch the DB.

        A file whose size and modification time are what they were when it was indexed, at least
        ``SETTLED`` seconds after it was last modified, is not read again; any other file is
        hashed, and indexed again only if its bytes changed (``docs``: layer-1 documents already
        parsed, used when their hash matches). A corrupt database is rebuilt from scratch
        (``rebuilt`` says why). Then the vectors (``sync_dense``): ``semantic`` is the schema's
        ``search.semantic`` (None: as remembered for this ``schema/wiki.yaml``, else read from it);
        ``check`` looks for missing vectors even when no change is pending. Without ``stamps``, the size
        and time of files found unchanged are noted only along with a change (compile: a run
        that changed nothing writes nothing). ``jobs`` processes read and chunk the files (when
        there are many) and embed the texts. ``kinds`` (of ``files.TABLES``) limits the update to
        the files of those kinds: the others are left as they are. ``pages``: the chunk rows of
        wiki pages already made from their text (``page_rows``), used when the hash matches."""
        try:
            stats = self._update(files, docs, stamps, jobs, kinds, pages)
        except sqlite3.DatabaseError as exc:
            self._rebuild(exc)
            stats = self._update(files, docs, stamps, jobs, kinds, pages)
        stats.rebuilt = self.rebuilt
        self.sync_dense(stats, semantic, check, jobs)
        return stats

    def _update(
        self,
        files: dict[str, str] | None = None,
        docs: Mapping[str, SourceDoc] | None = None,
        stamps: bool = True,
        jobs: int = 1,
        kinds: Collection[str] | None = None,
        pages: Mapping[str, Made] | None = None,
    ) -> UpdateStats:
        files = kb_files(self.root) if files is None else files
        known = {
            p: (k, h, st)
            for p, k, h, st in self.conn.execute("SELECT path, kind, sha256, stat FROM files")
            if kinds is None or k in kinds
        }
        if kinds is not None:
            files = {p: k for p, k in files.items() if k in kinds}
        stats = UpdateStats()
        refreshed: list[tuple[str, str]] = []  # (stat, path) of unchanged files to note
        sources_changed = False  # only a source's chunks have vectors (dense.KINDS)
        with self.conn:  # one transaction, the changed files written a few thousand rows at a time
            pending = _Pending(self.conn)
            for rel, kind, digest, stamp, rows, doc_values in self._changed(
                files, known, docs, stats, refreshed, jobs, pages
            ):
                if rel in known:
                    sources_changed = sources_changed or known[rel][0] == "source"
                    pending.flush()  # the rows before it take the ids they would have, one by one
                    self._delete(rel)
                pending.add(rel, rows, doc_values, (rel, kind, digest, stamp))
                sources_changed = sources_changed or kind == "source"
                stats.chunks += len(rows)
            pending.flush()
            gone = sorted(set(known) - set(files))
            stats.removed = len(gone)
            for rel in gone:
                self._delete(rel)
                self.conn.execute("DELETE FROM files WHERE path=?", (rel,))
            sources_changed = sources_changed or any(known[rel][0] == "source" for rel in gone)
            changed = bool(stats.added or stats.changed or gone)
            if refreshed and (stamps or changed):
                self.conn.executemany("UPDATE files SET stat=? WHERE path=?", refreshed)
            if changed:
                self._store("entities", Entities(self.entries(), self.doc_names()).as_json())
            if sources_changed:  # pages and index entries have no vectors: theirs alone change none
                self.conn.execute("DELETE FROM meta WHERE key=?", (SYNCED,))  # vectors to sync
        if sources_changed or self._supersession()[0] != self._schema_key():
            with self.conn:
                self._store_supersession(docs)
        return stats

    def _changed(
        self,
        files: dict[str, str],
        known: dict[str, tuple[str, str, str]],
        docs: Mapping[str, SourceDoc] | None,
        stats: UpdateStats,
        refreshed: list[tuple[str, str]],
        jobs: int = 1,
        pages: Mapping[str, Made] | None = None,
    ) -> Iterator[tuple[str, str, str, str, list[tuple], tuple | None]]:
        """(path, kind, hash, stamp, chunk rows, docs row) of each file of ``files`` added or
        changed since ``known``, counted in ``stats``, in order; an unchanged file whose size or
        time moved goes into ``refreshed``. Many files are read and chunked in ``jobs`` processes
        (``_examined``), a slice at a time, while this one writes what they sent back."""
        now = time.time_ns()
        examine = functools.partial(_examined, self.root, known, docs or {}, now, pages=pages or {})
        items = [item for item in files.items() if not _unmoved(self.root, known, now, item)]
        stats.unchanged += len(files) - len(items)
        wiki = sum(1 for _, kind in items if kind != "source")  # a page takes many sources' time
        if jobs > 1 and (len(items) >= POOLED_FILES or wiki >= POOLED_PAGES):
            from ...core.pool import streamed  # here: a search on a settled index forks nothing

            found_all: Iterable[tuple] = streamed(examine, items, jobs)
        else:
            found_all = map(examine, items)
        for found in found_all:
            if found[0] == _SAME:
                stats.unchanged += 1
                if found[1]:
                    refreshed.append((found[1], found[2]))
            elif found[0] == _SKIPPED:
                stats.skipped.append(found[1])
            else:
                if found[1] in known:
                    stats.changed += 1
                else:
                    stats.added += 1
                yield found[1:]

    # -- the vectors

    def dense_state(self) -> DenseState | None:
        """What the vectors are, as last brought up to date (None: never)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (STATE,)).fetchone()
        return DenseState.from_json(row[0]) if row else None

    def sync_dense(self, stats: UpdateStats, semantic: bool | None, check: bool, jobs: int = 1) -> None:
        """Bring the vectors up to date when chunks changed since they last were (a mark dropped
        in the same transaction as the change, so a run killed in between leaves it to the next),
        or the schema or its ``search.semantic`` changed, or they could not be made last time, or
        the caller asks (``check``): with it off, nothing is embedded (the vectors already made are
        kept for when it is on again). A model that cannot be used is noted in ``stats.semantic``
        and remembered, never raised."""
        schema = self._schema_key()
        known = self.dense_state()
        if semantic is None:
            semantic = known.on if known is not None and known.schema == schema else self._schema_semantic()
        state = DenseState(schema, semantic)
        synced = self.conn.execute("SELECT 1 FROM meta WHERE key=?", (SYNCED,)).fetchone() is not None
        if semantic and (check or known != state or not synced):
            from ...core.embedding import Unavailable, shared_embedder
            from .dense import ensure_query_file, sync_vectors

            try:
                stats.embedded, _ = sync_vectors(self.conn, shared_embedder, jobs)
                ensure_query_file(self.root)
                with self.conn:
                    self._store(SYNCED, "1")
            except Unavailable as exc:
                state.note = str(exc)
        stats.semantic = state.note
        if known != state:
            with self.conn:
                self._store(STATE, state.as_json())

    def usable_dense(self) -> bool:
        """Whether the vectors are on and could be made."""
        state = self.dense_state()
        return state is not None and state.on and not state.note

    def _schema_semantic(self) -> bool:
        """``search.semantic`` of ``schema/wiki.yaml`` (on when the file is missing)."""
        from ..schema import load_wiki_schema

        return (
            load_wiki_schema(self.root).semantic if (self.root / "schema" / "wiki.yaml").is_file() else True
        )

    def _store_supersession(self, docs: Mapping[str, SourceDoc] | None = None) -> None:
        """Which layer-1 documents (or sections) are superseded, and by which: worked out when the
        sources or ``schema/wiki.yaml`` (its version chains) change, since it needs every document,
        so a lookup reads it instead of reading them all (from ``docs`` when they are the ones
        indexed, as compile parsed them)."""
        from ..versions import schema_chains, supersession

        indexed = self.doc_names()
        every = [docs[p] for p in indexed] if docs is not None and set(docs) == set(indexed) else self.docs()
        value = [self._schema_key(), supersession(every, schema_chains(self.root))]
        self._store("superseded", json.dumps(value, sort_keys=True))

    def store_outdated(self, outdated: Mapping[str, Iterable[str]]) -> None:
        """Keep the statements a newer source changed ({layer-1 path: sentences}, the compile
        plan's timeline), so an answer states what holds now; written only when they change."""
        value = json.dumps({p: sorted(set(found)) for p, found in sorted(outdated.items()) if found})
        row = self.conn.execute("SELECT value FROM meta WHERE key='outdated'").fetchone()
        if row is None or row[0] != value:
            with self.conn:
                self._store("outdated", value)

    def outdated(self) -> dict[str, frozenset[str]]:
        """{layer-1 path: the sentences of it a newer source changed}, as ``store_outdated`` kept
        them (spaces collapsed)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='outdated'").fetchone()
        found = json.loads(row[0]) if row else {}
        return {p: frozenset(" ".join(x.split()) for x in xs) for p, xs in found.items()}

    def _supersession(self) -> tuple[str, dict[str, str]]:
        row = self.conn.execute("SELECT value FROM meta WHERE key='superseded'").fetchone()
        if row is None:
            return "-", {}
        digest, found = json.loads(row[0])
        return digest, found

    def _store(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- layer-1 documents

    def doc(self, path: str) -> SourceDoc | None:
        """One layer-1 document as last indexed, or None."""
        row = self.conn.execute(f"SELECT {_DOC} FROM docs WHERE path=?", (path,)).fetchone()
        return _doc(row) if row else None

    def docs(self) -> list[SourceDoc]:
        """Every layer-1 document as last indexed, in path order."""
        return [_doc(row) for row in self.conn.execute(f"SELECT {_DOC} FROM docs ORDER BY path")]

    def doc_names(self) -> dict[str, tuple[str, str, str, str, tuple[str, ...]]]:
        """{path: (source, id, key, title, aliases)} of every layer-1 document, without reading
        their bodies."""
        rows = self.conn.execute("SELECT path, source, id, key, title, names FROM docs ORDER BY path")
        return {p: (s, i, k, t, tuple(json.loads(n))) for p, s, i, k, t, n in rows}

    def entries(self) -> list[tuple[str, str, tuple[str, ...], str]]:
        """The wiki's entries: every page whole and every level-2 section of it, with the sections
        it cites, as (page path, the page's title or the section's heading, the layer-1 sections
        cited, the page's type for the whole page or '' for a section), in page order."""
        out: dict[tuple[str, str, str], dict[str, None]] = {}
        rows = self.conn.execute(
            "SELECT path, anchor, title, headings, refs, type FROM chunks WHERE kind='page' ORDER BY path, id"
        )
        for path, anchor, title, headings, refs, kind in rows:
            key = (path, headings.split(" > ")[0], "") if anchor else (path, title, kind)
            out.setdefault(key, {}).update(dict.fromkeys(json.loads(refs)))
        return [(path, name, tuple(refs), kind) for (path, name, kind), refs in out.items()]

    def backend(self) -> str | None:
        """The librarian backend ``schema/wiki.yaml`` configures, as remembered for this version of
        the file; None when the file changed since (or was never read)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='backend'").fetchone()
        if row is None:
            return None
        key, backend = json.loads(row[0])
        return backend if key == self._schema_key() else None

    def remember_backend(self, backend: str) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('backend', ?)",
                (json.dumps([self._schema_key(), backend]),),
            )

    def _schema_key(self) -> str:
        """What the remembered backend and supersession are valid for: ``schema/wiki.yaml``'s
        text itself. It is a few kilobytes, and comparing it costs less than importing hashlib."""
        path = self.root / "schema" / "wiki.yaml"
        return path.read_bytes().decode("utf-8", "replace") if path.is_file() else ""

    def entities(self) -> Entities:
        """The names the wiki has entries for, and the sections filed under each (see Entities)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='entities'").fetchone()
        return Entities.from_json(row[0]) if row else Entities([], {})

    def superseded(self) -> dict[str, str]:
        """{superseded layer-1 path, or path#anchor for one section: the path of the document
        that replaces it} (``versions.supersession``)."""
        return self._supersession()[1]

    def _delete(self, rel: str) -> None:
        rows = self.conn.execute(
            "SELECT id, kind, title, names, headings, body FROM chunks WHERE file=?", (rel,)
        ).fetchall()
        for rowid, kind, title, names, headings, body in rows:
            self.conn.execute(
                f"INSERT INTO fts_{kind}(fts_{kind}, rowid, title, headings, body) VALUES ('delete', ?, ?, ?, ?)",
                (rowid, *fts_values(title, names, headings, body)),
            )
        self.conn.execute("DELETE FROM chunks WHERE file=?", (rel,))
        self.conn.execute("DELETE FROM docs WHERE path=?", (rel,))

    def add_chunks(self, file: str, chunks: Iterable[Chunk]) -> None:
        """Insert chunks (inside the caller's transaction). Also used by the benchmark."""
        pending = _Pending(self.conn)
        pending.add(file, chunk_rows(chunks))
        pending.flush()

    def count(self, kind: str) -> int:
        return int(self.conn.execute("SELECT count(*) FROM chunks WHERE kind=?", (kind,)).fetchone()[0])

    def _rows(self, sql: str, args: Sequence) -> list:
        """Run a read; a database found corrupt only now is rebuilt and the read run again."""
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            self._rebuild(exc)
            self._update()
            return self.conn.execute(sql, args).fetchall()


class _Pending:
    """Rows of changed files on their way into the database, written a few thousand at a time,
    one statement per table (a statement per row cost more than the rows themselves). A chunk
    gets the id the database would give it inserted alone, one above the largest: ``flush``
    before anything is deleted, so the ids, and the order of hits tied in score, stay the same."""

    LIMIT = 4096  # chunks held before they are written

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.chunks: list[tuple[str, str, tuple, tuple]] = []  # (file, kind, chunks values, FTS values)
        self.docs: list[tuple] = []
        self.files: list[tuple[str, str, str, str]] = []

    def add(
        self,
        file: str,
        rows: Iterable[tuple],
        doc_values: tuple | None = None,
        file_values: tuple | None = None,
    ) -> None:
        """Note the ``chunk_rows`` of ``file``, its ``docs`` row and its ``files`` row (each if any)."""
        self.chunks += [(file, kind, values, fts) for kind, values, fts in rows]
        if doc_values is not None:
            self.docs.append(doc_values)
        if file_values is not None:
            self.files.append(file_values)
        if len(self.chunks) >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        """Write what is held (inside the caller's transaction)."""
        if self.chunks:
            (first,) = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()
            numbered = list(enumerate(self.chunks, first))
            self.conn.executemany(
                "INSERT INTO chunks(id, file, kind, path, anchor, heading, title, headings, body, refs, vkey,"
                " type, names) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(rowid, file, kind, *values) for rowid, (file, kind, values, _) in numbered],
            )
            for table in TABLES:
                self.conn.executemany(
                    f"INSERT INTO fts_{table}(rowid, title, headings, body) VALUES (?, ?, ?, ?)",
                    [(rowid, *fts) for rowid, (_, kind, _, fts) in numbered if kind == table],
                )
        if self.docs:
            self.conn.executemany(
                "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self.docs
            )
        if self.files:
            self.conn.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", self.files)
        self.chunks, self.docs, self.files = [], [], []


POOLED_FILES = 2000  # from this many files to read, an update with processes reads them there
POOLED_PAGES = 64  # or from this many of the wiki's files (each is chunked sentence by sentence)
_SAME, _SKIPPED, _INDEX = "same", "skipped", "index"  # what ``_examined`` found


def _examined(
    root: Path,
    known: dict[str, tuple[str, str, str]],
    docs: Mapping[str, SourceDoc],
    now: int,
    item: tuple[str, str],
    pages: Mapping[str, Made] = MappingProxyType({}),
) -> tuple:
    """What indexing one file (``item``: path and kind) takes, given what the index ``known`` of
    it: (_SAME, stamp to note or '', path) when its bytes are as indexed; (_SKIPPED, why) when it
    cannot be read; else (_INDEX, path, kind, hash, stamp, chunk rows, docs row or None). (A file
    that is as indexed by its size and time, ``_unmoved``, is not asked about.) A parsed document
    of ``docs`` with the file's hash is used as it is, and so are a page's rows in ``pages``."""
    rel, kind = item
    stamp = _stamp(root, rel, now)
    old = known.get(rel)
    data = (root / rel).read_bytes()
    digest = sha256_tag(data)
    if old is not None and old[:2] == (kind, digest):
        return _SAME, stamp if stamp != old[2] else "", rel
    made = pages.get(rel)
    if made is not None and made[0] == digest and kind == "page":
        return _INDEX, rel, kind, digest, stamp, made[1], None
    from .chunks import chunks_of  # here: a search on a settled index makes no chunk

    parsed = docs.get(rel)
    try:
        chunks, doc = chunks_of(root, rel, kind, data, parsed if parsed and parsed.sha256 == digest else None)
    except KBError as exc:  # e.g. broken frontmatter: its old chunks stay, the rest is indexed
        return _SKIPPED, str(exc)
    return _INDEX, rel, kind, digest, stamp, chunk_rows(chunks), None if doc is None else doc_row(doc)


def _stamp(root: Path, rel: str, now: int) -> str:
    """'size:mtime' of a file last changed at least ``SETTLED`` seconds before ``now``, else ''."""
    st = os.stat(os.path.join(root, rel))
    return f"{st.st_size}:{st.st_mtime_ns}" if now - st.st_mtime_ns > SETTLED * 1_000_000_000 else ""


def _unmoved(root: Path, known: dict[str, tuple[str, str, str]], now: int, item: tuple[str, str]) -> bool:
    """Whether a file is as indexed by its size and time alone (``_examined`` would not read it)."""
    old = known.get(item[0])
    if old is None or old[0] != item[1] or not old[2]:
        return False
    try:
        return _stamp(root, item[0], now) == old[2]
    except OSError:
        return False  # ``_examined`` says why


Made = tuple[str, list[tuple]]  # a wiki page's hash (``sha256_tag`` of its bytes) and its chunk rows


def indexed_pages(root: Path) -> dict[str, str]:
    """{path: hash} of the wiki pages the search index holds now ({} when it holds none, or
    cannot be read): a page written with the same bytes needs no rows made (``page_rows``)."""
    path = root / DB_PATH
    if not path.is_file():
        return {}
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            return dict(conn.execute("SELECT path, sha256 FROM files WHERE kind = 'page'"))
    except sqlite3.Error:
        return {}


def page_rows(rel: str, text: str, parts: tuple[dict, str, str] | None = None) -> Made:
    """What indexing the wiki page ``rel`` whose text is ``text`` writes (its hash and chunk rows),
    made where the page is made: ``update`` then uses it instead of chunking the page again.
    ``parts``: the frontmatter (a dict, its YAML) and body its writer joined into ``text``, read
    instead of parsing it again (``chunks.page_chunks``)."""
    from .chunks import page_chunks

    return sha256_tag(text.encode("utf-8")), chunk_rows(page_chunks(rel, text, parts))


def chunk_rows(chunks: Iterable[Chunk]) -> list[tuple[str, tuple, tuple[str, str, str]]]:
    """(kind, the chunks row after its file and kind, the FTS row after its rowid) of each chunk."""
    return [
        (
            ch.kind,
            (
                ch.path,
                ch.anchor,
                ch.heading,
                ch.title,
                ch.headings,
                ch.body,
                json.dumps(ch.refs),
                vector_key(ch.kind, ch.title, ch.headings, ch.body),
                ch.page_type,
                ch.names,
            ),
            fts_values(ch.title, ch.names, ch.headings, ch.body),
        )
        for ch in chunks
    ]


def fts_values(title: str, names: str, headings: str, body: str) -> tuple[str, str, str]:
    """The FTS row of a chunk (after its rowid): its title searched with its other names, CJK text
    as bigrams (``index_text``). Deleting the row takes these values again."""
    return index_text(f"{title} {names}".strip()), index_text(headings), index_text(body)


def doc_row(doc: SourceDoc) -> tuple:
    """The ``docs`` row of a layer-1 document."""
    from ...core.facts import aliases  # here: a search on a settled index indexes nothing
    from .chunks import lead_ref

    return (
        doc.path,
        doc.source,
        doc.id,
        doc.key,
        doc.title,
        json.dumps(aliases(doc.meta), ensure_ascii=False),
        json.dumps(doc.meta, ensure_ascii=False, default=str),
        doc.body,
        doc.sha256,
        lead_ref(doc),
    )


_DOC = "path, source, id, key, title, meta, body, sha256"  # the columns a SourceDoc is made of


def _doc(row: tuple) -> SourceDoc:
    from ...core.markdown import split_sections  # here: a search reads no document
    from ...core.models import SourceDoc

    path, source, id_, key, title, meta, body, digest = row
    return SourceDoc(
        source, id_, key, path, title, json.loads(meta), body, digest, tuple(split_sections(body))
    )


def mend_query_file(root: Path) -> str:
    """Write the query path's embedding file again if it is missing or damaged: '' when it is
    whole, else why it cannot be (the model's package is missing, say)."""
    from ...core.embedding import Unavailable
    from .dense import ensure_query_file

    try:
        ensure_query_file(root)
    except Unavailable as exc:
        return str(exc)
    return ""


def reported(report: CompileReport, stats: UpdateStats) -> None:
    """Add what an update did to ``report``: the files indexed again, the texts embedded, and
    its notes (a rebuilt database, matching by meaning off)."""
    done = report.search_index
    report.search_index = {
        "files": done.get("files", 0) + stats.added + stats.changed + stats.removed,
        "embedded": done.get("embedded", 0) + stats.embedded,
    }
    report.notes += [n for n in (stats.rebuilt, stats.semantic) if n and n not in report.notes]


def update_layer1(root: Path, semantic: bool, docs: Mapping[str, SourceDoc] | None = None) -> UpdateStats:
    """Layer 1 alone brought into the index (its documents, sections and their vectors), as
    compile does in a process of its own while it plans and writes the pages: ``update_index``
    then finds layer 1 in place. The pages' chunks are left as they are."""
    with IndexStore(root) as index:
        return index.update(docs=docs, semantic=semantic, stamps=False, kinds=("source",))


def update_index(
    root: Path,
    semantic: bool,
    docs: Mapping[str, SourceDoc] | None = None,
    report: CompileReport | None = None,
    jobs: int = 1,
    outdated: Mapping[str, Iterable[str]] | None = None,
    kinds: Collection[str] | None = None,
    pages: Mapping[str, Made] | None = None,
) -> UpdateStats:
    """Compile's last step: the search index brought up to date with the files just written (and
    ``docs``, layer 1 as compile parsed it), its vectors checked (new texts embedded in ``jobs``
    processes), and the statements newer sources changed (``outdated``) kept for answers, so the
    first query after a compile finds it ready; what it did goes into ``report``. Nothing
    changed: nothing written. ``kinds``: only the files of those kinds (the wiki's, when layer 1
    was just indexed by ``update_layer1``); ``pages``: the rows of the pages just written, as
    their writer made them (``page_rows``)."""
    with IndexStore(root) as index:
        stats = index.update(docs=docs, semantic=semantic, stamps=False, jobs=jobs, kinds=kinds, pages=pages)
        if not stats.semantic and index.usable_dense():
            stats.semantic = mend_query_file(root)
        if report is not None:
            reported(report, stats)
        if outdated is not None:
            index.store_outdated(outdated)
        return stats
