"""Hybrid search: an SQLite FTS5 index over the wiki, layer-1 sections and ``index.md``, fused with RRF.

The index lives in ``.wikic/search.sqlite`` (derived, git-ignored, always rebuildable: a file
written by another version of the schema is rebuilt). It holds four FTS5 tables, one per kind of
chunk, each with the columns ``title``, ``headings`` and ``body`` so BM25 can weight titles and
headings above body text:

- ``page``: every wiki page whole, plus one chunk per heading (with the citations in it);
- ``source``: every layer-1 section, carrying its heading path;
- ``doc``: every layer-1 document whole, for answers spread over its sections;
- ``index``: every ``index.md`` entry (title, keywords, summary), keyed by the page it links.

A layer-1 document's other names (``common_names``, ``aliases``…) are searched with its title, so
'rocket' finds the sections of the arugula entry.

It is updated by content hash: a file whose bytes did not change is not touched, and a run with
no change writes nothing. Chinese, Japanese and Korean text is indexed as overlapping character
bigrams (the unicode61 tokenizer would keep a whole run of CJK characters as one token), and
queries are split the same way.

A query is never an AND of all its words: content words are quoted (so user input cannot break
the FTS syntax) and OR-ed, and BM25 ranks documents by how many, and how rare, the words they hold.
Before the hybrid search runs, a word no source contains but which is two words they do contain
is split ('sweetcorn' → 'sweet corn'); the single lists (``query``) search words as given.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.errors import ConfigError, KBError, UsageError
from ..core.facts import aliases, plural_stem
from ..core.fsutil import sha256_tag, walk_files
from ..core.markdown import STOPWORDS, plain_inline, split_sections, words
from ..core.models import SourceDoc
from ..transform.layer1 import LAYER1, parse_doc, require_sources

DB_PATH = ".wikic/search.sqlite"
SCHEMA_VERSION = 7
KINDS = ("page", "source", "index")  # what ``search`` fuses
TABLES = (*KINDS, "doc")
# bm25() weights for (title, headings, body): a match in a title or heading counts above the body.
WEIGHTS = (4.0, 2.5, 1.0)
RRF_K = 60
ORIGINAL_WEIGHT = 2.0
EXPANSION_WEIGHT = 1.0
TOP_BONUS = {1: 0.05, 2: 0.02, 3: 0.02}
STRONG_TOP = 0.85
STRONG_GAP = 0.15
_CORRUPT = re.compile(r"malformed|not a database|corrupt|disk image", re.I)
MAX_QUERY_CHARS = 2000  # a question, not a document
MAX_WORD_CHARS = 100  # no word is longer; matching cost grows with the square of a word's length
COMPOUND_PART = 3  # shortest half when an unknown word is split in two
PREFIX_MIN = 4  # shortest term searched as a prefix in prefix queries
SETTLED = 2  # seconds after its last change a file's size and time are trusted to mark it unchanged
RESPELL_CAP = 1000  # document counts past this make no difference when choosing a split

Expander = Callable[[str], Sequence[str]]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


@functools.cache
def _cjk() -> tuple[re.Pattern, re.Pattern]:
    """(a run of CJK characters, one CJK character): compiled when first needed, since building
    these character classes costs more than the rest of a search."""
    return re.compile(f"[{_CJK}]+"), re.compile(f"[{_CJK}]")


def has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk()[1].search(text) is not None


# ---------------------------------------------------------------- text handling


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run ('水箱容量' → 水箱 箱容 容量); one char stays one."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """Text as stored in FTS: CJK runs become space-separated bigrams, everything else is kept."""
    if not has_cjk(text):
        return text
    return _cjk()[0].sub(lambda m: " " + " ".join(cjk_bigrams(m.group())) + " ", text)


def query_terms(query: str) -> list[str]:
    """The words of a natural-language query worth searching for: stopwords and the pronouns and
    negations of contractions dropped ("I've", "don't"; "bot's" is searched as "bot") unless
    nothing else is left, CJK runs split into bigrams, duplicates removed, order kept."""
    latin: list[str] = []
    cjk: list[str] = []
    for w in map(uncontract, words(query)):
        if not w:
            continue
        if has_cjk(w):
            run_of = _cjk()[0]
            for run in run_of.findall(w):
                cjk.extend(cjk_bigrams(run))
            rest = run_of.sub(" ", w).split()
            latin.extend(rest)
        else:
            latin.append(w)
    content = [w for w in latin if w not in STOPWORDS]
    return list(dict.fromkeys((content or latin) + cjk))


def check_query(query: str) -> None:
    """A UsageError for a query past the caps, before any work is done on it."""
    longest = max(query.split(), key=len, default="")
    if len(longest) > MAX_WORD_CHARS:
        raise UsageError(
            f"the query has a {len(longest):,}-character word ({longest[:20]}…); words longer than "
            f"{MAX_WORD_CHARS} characters are not searched"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are searched. "
            "Ask with fewer words"
        )


_CONTRACTED = re.compile(r"^(\w+)['’](s|m|ve|ll|re|d|t)$")


def uncontract(word: str) -> str:
    """'bot's' → 'bot', "it'll" → 'it', "don't" → '' (a negation says nothing to search for)."""
    m = _CONTRACTED.match(word)
    if not m:
        return word
    return "" if m.group(2) == "t" else m.group(1)


def match_expression(terms: Sequence[str], prefix: bool = False) -> str:
    """An FTS5 MATCH string that ORs the quoted terms; a lone CJK character matches as a prefix,
    and with ``prefix`` so does every Latin term of ``PREFIX_MIN`` letters or more ('safe' finds
    'safety', 'rain' finds 'rainproof')."""
    parts = []
    for t in terms:
        quoted = '"' + t.replace('"', '""') + '"'
        if (len(t) == 1 and has_cjk(t)) or (prefix and len(t) >= PREFIX_MIN and t.isalpha()):
            quoted += "*"
        parts.append(quoted)
    return " OR ".join(parts)


def normalise(score: float) -> float:
    """A BM25 score mapped into [0, 1): |x| / (1 + |x|). SQLite's bm25() is negative, better = lower."""
    x = abs(score)
    return x / (1.0 + x)


def is_strong_signal(scores: Sequence[float], top: float = STRONG_TOP, gap: float = STRONG_GAP) -> bool:
    """True when the BM25 probe already answers the query: the normalised top score is ≥ ``top``
    and its gap to the second is ≥ ``gap`` (a lone hit has the whole score as its gap)."""
    if not scores:
        return False
    norm = sorted((normalise(s) for s in scores), reverse=True)
    second = norm[1] if len(norm) > 1 else 0.0
    return norm[0] >= top and norm[0] - second >= gap


def split_compound(
    word: str, doc_freq: Callable[[str], int], known: Callable[[str], bool] | None = None
) -> str | None:
    """A word the index has never seen split into two words it has ('sweetcorn' → 'sweet corn',
    'bluetooth' → 'blue tooth'), choosing the split whose rarer half is most common; None when
    the word is known, short, not plain Latin letters, or splits into nothing known. ``known``
    is a cheaper test than ``doc_freq`` for whether the whole word occurs."""
    if len(word) < 2 * COMPOUND_PART + 1 or not (word.isascii() and word.isalpha()):
        return None
    if (known or doc_freq)(word):
        return None
    best: tuple[int, str] | None = None
    for i in range(COMPOUND_PART, len(word) - COMPOUND_PART + 1):
        left, right = word[:i], word[i:]
        common = min(doc_freq(left), doc_freq(right))
        if common and (best is None or common > best[0]):
            best = (common, f"{left} {right}")
    return best[1] if best else None


# Endings that make an adjective or adverb of a word, and what the word ended in before them:
# 'crusty' → 'crust', 'slimy' → 'slime', 'easily' → 'easy', 'greenish' → 'green'.
_DERIVED = (("ily", ("y",)), ("ly", ("",)), ("ish", ("", "e")), ("y", ("", "e")))
BASE_MIN = 3  # shortest base a derived word is searched as


def base_form(word: str, known: Callable[[str], bool]) -> str | None:
    """A word the index has never seen searched as the word it derives from, when the index
    has that one ('crusty' → 'crust', 'muddy' → 'mud'); None when the word is known or derives
    from nothing known."""
    if not (word.isascii() and word.isalpha()) or known(word):
        return None
    for suffix, ends in _DERIVED:
        if not word.endswith(suffix):
            continue
        root = word[: -len(suffix)]
        undoubled = root[:-1] if root[-2:-1] == root[-1:] else root  # 'mudd' → 'mud'
        for base in dict.fromkeys([*(root + end for end in ends), undoubled]):
            if len(base) >= BASE_MIN and known(base):
                return base
    return None


def snippet(text: str, terms: Sequence[str], width: int = 160) -> str:
    """A window of ``text`` around the first query term it contains, on one line."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    low = flat.lower()
    best = -1
    for t in terms:
        i = low.find(t.lower()) if has_cjk(t) else _word_find(low, t.lower())
        if i >= 0 and (best < 0 or i < best):
            best = i
    start = max(0, best - width // 3) if best >= 0 else 0
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < best else start
    out = flat[start : start + width].rstrip()
    return ("…" if start else "") + out + ("…" if start + width < len(flat) else "")


def _word_find(text: str, term: str) -> int:
    m = re.search(r"\b" + re.escape(term[: max(4, len(term) - 2)]), text)
    return m.start() if m else -1


# ---------------------------------------------------------------- chunks


@dataclass(frozen=True)
class Chunk:
    """One searchable unit. ``path`` is the file a hit opens (for index entries, the page they link);
    ``refs`` are the layer-1 sections it stands for (``path#anchor``): a source section itself, or
    the citations inside a wiki chunk."""

    kind: str
    path: str
    anchor: str
    heading: str
    title: str
    headings: str
    body: str
    refs: tuple[str, ...] = ()
    names: str = ""  # other names of the subject, searched with the title


def source_chunks(doc: SourceDoc) -> list[Chunk]:
    """One chunk per section of a layer-1 document, then the document whole (kind ``doc``)."""
    names = ", ".join(n for n in aliases(doc.meta) if n.lower() != doc.title.lower())
    out = []
    for s in doc.sections:
        ref = doc.path + (f"#{s.anchor}" if s.anchor else "")
        body = plain_inline(s.text)
        if not s.anchor:
            desc = doc.meta.get("description")
            if isinstance(desc, str) and desc not in body:
                body = (desc + "\n" + body).strip()
        out.append(
            Chunk("source", doc.path, s.anchor, s.heading, doc.title, " > ".join(s.path), body, (ref,), names)
        )
    if not out:  # a file with frontmatter only is still findable by its title
        out.append(Chunk("source", doc.path, "", "", doc.title, "", "", (doc.path,), names))
    whole = "\n".join(ch.body for ch in out)
    heads = " ; ".join(s.heading for s in doc.sections if s.heading)
    out.append(Chunk("doc", doc.path, "", "", doc.title, heads, whole, (doc.path,), names))
    return out


def page_chunks(rel: str, text: str) -> list[Chunk]:
    """A wiki page whole, then one chunk per heading; citations become ``refs``, not text."""
    import frontmatter
    import yaml

    from ..compile.draft import parse_citations, strip_citations

    try:
        post = frontmatter.loads(text)
    except (ValueError, yaml.YAMLError):
        return []
    meta = post.metadata
    body = post.content
    title = str(meta.get("title") or Path(rel).stem)
    sections = split_sections(body)
    chunks: list[Chunk] = []
    all_refs: list[str] = []
    all_text: list[str] = []
    heads: list[str] = []
    for s in sections:
        lines = s.text.split("\n")
        refs: list[str] = []
        plain: list[str] = []
        for line in lines:
            refs += [str(c) for c in parse_citations(line, rel)]
            plain.append(plain_inline(strip_citations(line)))
        refs = list(dict.fromkeys(refs))
        text_ = "\n".join(p for p in plain if p.strip())
        if s.level == 1:  # the page title: its text joins the whole-page chunk only
            all_text.append(text_)
            all_refs += refs
            continue
        if s.heading == "See also":
            continue
        heads.append(s.heading)
        all_text.append(text_)
        all_refs += refs
        if text_ or refs:
            chunks.append(
                Chunk("page", rel, s.anchor, s.heading, title, " > ".join(s.path[1:]), text_, tuple(refs))
            )
    extra = " ".join([str(meta.get("summary") or ""), " ".join(map(str, meta.get("keywords") or []))])
    whole = Chunk(
        "page",
        rel,
        "",
        "",
        title,
        " ; ".join(heads) + " " + extra,
        "\n".join(all_text),
        tuple(dict.fromkeys(all_refs)),
    )
    return [whole, *chunks]


_ENTRY = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<href>[^)\s]+)\)\s*(?:—\s*(?P<rest>.*))?$")


@dataclass(frozen=True)
class IndexEntry:
    path: str  # the wiki page it links, relative to the KB root
    title: str
    summary: str
    keywords: tuple[str, ...]
    line: str


def parse_index(rel: str, text: str) -> tuple[list[IndexEntry], list[str]]:
    """Entries of an index file, and the sub-index files it links (two-level indexes)."""
    from ..compile.draft import resolve_href

    entries, subs = [], []
    for line in text.split("\n"):
        m = _ENTRY.match(line.strip())
        if not m:
            continue
        target = resolve_href(rel, m.group("href"))
        if target.startswith("wiki/index/") or target == "wiki/index.md":
            subs.append(target)
            continue
        rest = m.group("rest") or ""
        summary, _, kws = rest.partition("*Keywords:*")
        keywords = tuple(k.strip() for k in kws.split(",") if k.strip())
        entries.append(IndexEntry(target, m.group("title"), summary.strip(), keywords, line.strip()))
    return entries, subs


def read_index_entries(root: Path) -> list[IndexEntry]:
    """Every entry of ``wiki/index.md``, following a two-level index into its parts."""
    out: list[IndexEntry] = []
    todo, seen = ["wiki/index.md"], set()
    while todo:
        rel = todo.pop(0)
        if rel in seen or not (root / rel).is_file():
            continue
        seen.add(rel)
        entries, subs = parse_index(rel, (root / rel).read_text("utf-8"))
        out += entries
        todo += subs
    return out


def index_chunks(rel: str, text: str) -> list[Chunk]:
    entries, _ = parse_index(rel, text)
    return [Chunk("index", e.path, "", "", e.title, ", ".join(e.keywords), e.summary) for e in entries]


def is_index_file(rel: str) -> bool:
    return rel == "wiki/index.md" or rel.startswith("wiki/index/")


def kb_files(root: Path) -> dict[str, str]:
    """{path: kind} of every file the search index covers."""
    out = dict.fromkeys(markdown_files(root, LAYER1), "source")
    for rel in markdown_files(root, "wiki"):
        if rel != "wiki/log.md":
            out[rel] = "index" if is_index_file(rel) else "page"
    return out


def markdown_files(root: Path, folder: str) -> list[str]:
    """The ``.md`` files under ``root/folder`` as sorted root-relative paths, hidden files and
    folders and symbolic links aside (one ``scandir`` per folder: a search runs this on every call)."""
    return walk_files(root, folder)[0]


def chunks_of(root: Path, rel: str, kind: str, data: bytes) -> tuple[list[Chunk], SourceDoc | None]:
    """The chunks of one file, and the layer-1 document it is when it is a source."""
    if kind == "source":
        doc = parse_doc(root, root / rel, data)
        return source_chunks(doc), doc
    text = data.decode("utf-8", errors="replace")
    return (index_chunks(rel, text) if kind == "index" else page_chunks(rel, text)), None


# ---------------------------------------------------------------- the index


@dataclass
class UpdateStats:
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    skipped: list[str] = field(default_factory=list)  # files that cannot be read, with the reason
    rebuilt: str = ""  # why a corrupt database was rebuilt

    @property
    def wrote(self) -> bool:
        return bool(self.added or self.changed or self.removed)


@dataclass(frozen=True)
class Hit:
    """One ranked result. ``score`` is the normalised BM25 score in single lists, the fused RRF
    score in fused ones."""

    kind: str
    path: str
    anchor: str
    heading: str
    title: str
    score: float
    snippet: str
    refs: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.path, self.anchor)

    @property
    def target(self) -> str:
        return self.path + (f"#{self.anchor}" if self.anchor else "")

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "heading": self.heading or self.title,
            "anchor": self.anchor,
            "kind": self.kind,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "refs": list(self.refs),
        }


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    expanded: list[str] = field(default_factory=list)  # the extra queries that were searched
    strong_signal: bool = False
    searched: str = ""  # the query as searched, run-together words split (see respell)


_DDL = [
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, kind TEXT NOT NULL, sha256 TEXT NOT NULL,"
    " stat TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, file TEXT NOT NULL, kind TEXT NOT NULL,"
    " path TEXT NOT NULL, anchor TEXT NOT NULL, heading TEXT NOT NULL, title TEXT NOT NULL,"
    " headings TEXT NOT NULL, body TEXT NOT NULL, refs TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file)",
    "CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path, anchor)",  # the shown hits' snippets
    # every layer-1 document as parsed, so a lookup reads the ones it needs instead of all files
    "CREATE TABLE IF NOT EXISTS docs(path TEXT PRIMARY KEY, source TEXT NOT NULL, id TEXT NOT NULL,"
    " key TEXT NOT NULL, title TEXT NOT NULL, names TEXT NOT NULL, meta TEXT NOT NULL, body TEXT NOT NULL,"
    " sha256 TEXT NOT NULL)",
    *[
        f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{k} USING fts5(title, headings, body,"
        " tokenize='porter unicode61 remove_diacritics 2')"
        for k in TABLES
    ],
]


class SearchIndex:
    """The FTS5 database of one KB. ``update()`` syncs it with the files; queries never write."""

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

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_schema(self) -> None:
        c = self.conn
        exists = c.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone()
        if exists:
            row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            found = int(row[0]) if row else None
            if found == SCHEMA_VERSION:
                return
            # derived state written by another version of wikic: start afresh, update() refills it
            c.close()
            self.db_path.unlink()
            self.conn = c = sqlite3.connect(self.db_path, check_same_thread=False)
        with c:
            for stmt in _DDL:
                c.execute(stmt)
            c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    # -- writing

    def update(self, files: dict[str, str] | None = None) -> UpdateStats:
        """Sync with the KB by content hash: only added, changed and deleted files touch the DB.

        A file whose size and modification time are what they were when it was indexed, at least
        ``SETTLED`` seconds after it was last modified, is not read again; any other file is
        hashed, and indexed again only if its bytes changed. A corrupt database is rebuilt from
        scratch (``rebuilt`` says why)."""
        try:
            stats = self._update(files)
        except sqlite3.DatabaseError as exc:
            self._rebuild(exc)
            stats = self._update(files)
        stats.rebuilt = self.rebuilt
        return stats

    def _update(self, files: dict[str, str] | None = None) -> UpdateStats:
        files = kb_files(self.root) if files is None else files
        known = {
            p: (k, h, st) for p, k, h, st in self.conn.execute("SELECT path, kind, sha256, stat FROM files")
        }
        stats = UpdateStats()
        pending: list[tuple[str, str, str, str, list[Chunk], SourceDoc | None]] = []
        refreshed: list[tuple[str, str]] = []  # (stat, path) of unchanged files to note
        now = time.time_ns()
        base = str(self.root)
        for rel, kind in files.items():
            st = os.stat(os.path.join(base, rel))
            settled = now - st.st_mtime_ns > SETTLED * 1_000_000_000
            stamp = f"{st.st_size}:{st.st_mtime_ns}" if settled else ""
            old = known.get(rel)
            if old is not None and old[0] == kind and stamp and old[2] == stamp:
                stats.unchanged += 1
                continue
            data = (self.root / rel).read_bytes()
            digest = sha256_tag(data)
            if old is not None and old[:2] == (kind, digest):
                stats.unchanged += 1
                if stamp != old[2]:
                    refreshed.append((stamp, rel))
                continue
            try:
                chunks, doc = chunks_of(self.root, rel, kind, data)
            except KBError as exc:  # e.g. broken frontmatter: its old chunks stay, the rest is indexed
                stats.skipped.append(str(exc))
                continue
            pending.append((rel, kind, digest, stamp, chunks, doc))
            if old is None:
                stats.added += 1
            else:
                stats.changed += 1
        gone = sorted(set(known) - set(files))
        stats.removed = len(gone)
        if pending or gone or refreshed:
            with self.conn:
                for rel in gone:
                    self._delete(rel)
                    self.conn.execute("DELETE FROM files WHERE path=?", (rel,))
                for rel, kind, digest, stamp, chunks, doc in pending:
                    if rel in known:
                        self._delete(rel)
                    self.add_chunks(rel, chunks)
                    if doc is not None:
                        self._add_doc(doc)
                    self.conn.execute(
                        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", (rel, kind, digest, stamp)
                    )
                    stats.chunks += len(chunks)
                self.conn.executemany("UPDATE files SET stat=? WHERE path=?", refreshed)
                if gone or pending:
                    self._store("entities", Entities(self.entries(), self.doc_names()).as_json())
        sources_changed = any(known[rel][0] == "source" for rel in gone) or any(
            p[5] is not None for p in pending
        )
        if sources_changed or self._supersession()[0] != self._schema_key():
            with self.conn:
                self._store_supersession()
        return stats

    def _add_doc(self, doc: SourceDoc) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc.path,
                doc.source,
                doc.id,
                doc.key,
                doc.title,
                json.dumps(aliases(doc.meta), ensure_ascii=False),
                json.dumps(doc.meta, ensure_ascii=False, default=str),
                doc.body,
                doc.sha256,
            ),
        )

    def _store_supersession(self) -> None:
        """Which layer-1 documents (or sections) are superseded, and by which: worked out when the
        sources or ``schema/wiki.yaml`` (its version chains) change, since it needs every document,
        so a lookup reads it instead of reading them all."""
        from ..compile.versions import schema_chains, supersession

        value = [self._schema_key(), supersession(self.docs(), schema_chains(self.root))]
        self._store("superseded", json.dumps(value, sort_keys=True))

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
        row = self.conn.execute("SELECT * FROM docs WHERE path=?", (path,)).fetchone()
        return _doc(row) if row else None

    def docs(self) -> list[SourceDoc]:
        """Every layer-1 document as last indexed, in path order."""
        return [_doc(row) for row in self.conn.execute("SELECT * FROM docs ORDER BY path")]

    def doc_names(self) -> dict[str, tuple[str, str, str, str, tuple[str, ...]]]:
        """{path: (source, id, key, title, aliases)} of every layer-1 document, without reading
        their bodies."""
        rows = self.conn.execute("SELECT path, source, id, key, title, names FROM docs ORDER BY path")
        return {p: (s, i, k, t, tuple(json.loads(n))) for p, s, i, k, t, n in rows}

    def entries(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """The wiki's entries: every level-2 section of every page with the sections under it, as
        (page path, heading, the layer-1 sections it cites), in page order."""
        out: dict[tuple[str, str], dict[str, None]] = {}
        rows = self.conn.execute(
            "SELECT path, headings, refs FROM chunks WHERE kind='page' AND anchor != '' ORDER BY path, id"
        )
        for path, headings, refs in rows:
            out.setdefault((path, headings.split(" > ")[0]), {}).update(dict.fromkeys(json.loads(refs)))
        return [(path, name, tuple(refs)) for (path, name), refs in out.items()]

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
        for rowid, kind in self.conn.execute("SELECT id, kind FROM chunks WHERE file=?", (rel,)).fetchall():
            self.conn.execute(f"DELETE FROM fts_{kind} WHERE rowid=?", (rowid,))
        self.conn.execute("DELETE FROM chunks WHERE file=?", (rel,))
        self.conn.execute("DELETE FROM docs WHERE path=?", (rel,))

    def add_chunks(self, file: str, chunks: Iterable[Chunk]) -> None:
        """Insert chunks (inside the caller's transaction). Also used by the benchmark."""
        for ch in chunks:
            cur = self.conn.execute(
                "INSERT INTO chunks(file, kind, path, anchor, heading, title, headings, body, refs)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    file,
                    ch.kind,
                    ch.path,
                    ch.anchor,
                    ch.heading,
                    ch.title,
                    ch.headings,
                    ch.body,
                    json.dumps(ch.refs),
                ),
            )
            self.conn.execute(
                f"INSERT INTO fts_{ch.kind}(rowid, title, headings, body) VALUES (?, ?, ?, ?)",
                (
                    cur.lastrowid,
                    index_text(f"{ch.title} {ch.names}".strip()),
                    index_text(ch.headings),
                    index_text(ch.body),
                ),
            )

    # -- reading

    def query(
        self,
        kind: str,
        query: str | Sequence[str],
        limit: int = 20,
        paths: Iterable[str] | None = None,
    ) -> list[Hit]:
        """One BM25-ranked list of chunks of ``kind`` (optionally only chunks in ``paths``),
        without snippets: ``with_snippets`` cuts them for the hits that are shown."""
        if isinstance(query, str):
            check_query(query)
        terms = query_terms(query) if isinstance(query, str) else list(query)
        if not terms:
            return []
        w = ", ".join(str(x) for x in WEIGHTS)
        args: list = [match_expression(terms)]
        cols = "c.kind, c.path, c.anchor, c.heading, c.title, c.refs"
        if paths is None:
            # rank inside FTS first, then join only the rows kept
            sql = (
                f"SELECT {cols}, r.s FROM (SELECT rowid, bm25(fts_{kind}, {w}) AS s FROM fts_{kind}"
                f" WHERE fts_{kind} MATCH ? ORDER BY s LIMIT ?) r JOIN chunks c ON c.id = r.rowid ORDER BY r.s"
            )
            args.append(limit)
        else:
            paths = list(paths)
            if not paths:
                return []
            sql = (
                f"SELECT {cols}, bm25(fts_{kind}, {w}) AS s FROM fts_{kind} JOIN chunks c"
                f" ON c.id = fts_{kind}.rowid WHERE fts_{kind} MATCH ?"
                f" AND c.path IN ({','.join('?' * len(paths))}) ORDER BY s LIMIT ?"
            )
            args += [*paths, limit]
        try:
            rows = self._rows(sql, args)
        except sqlite3.OperationalError:  # e.g. a term the tokenizer reduces to nothing
            return []
        return [Hit(k, p, a, h, t, s, "", tuple(json.loads(r))) for k, p, a, h, t, r, s in rows]

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

    def doc_freq(self, kind: str, term: str, cap: int = -1, prefix: bool = False) -> int:
        """How many chunks of ``kind`` contain ``term`` (as the tokenizer stems it; with ``prefix``,
        a word it begins), counting at most ``cap`` of them when it is given (``cap=1`` asks only
        whether any does)."""
        try:
            row = self.conn.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM fts_{kind} WHERE fts_{kind} MATCH ? LIMIT ?)",
                (match_expression([term], prefix), cap),
            ).fetchone()
        except sqlite3.OperationalError:
            return 0
        return int(row[0])

    def respell(self, query: str, split: bool = True, derive: bool = False) -> str:
        """The query with words no layer-1 section contains written as words some do contain;
        the rest is kept exactly as typed. With ``split``, two words run together are written as
        those two ('fulltank' → 'full tank'); with ``derive``, a derived word as the word it
        derives from ('crusty' → 'crust')."""

        def df(word: str) -> int:
            return self.doc_freq("source", word, cap=RESPELL_CAP)

        def known(word: str) -> bool:
            return self.doc_freq("source", word, cap=1) > 0

        def fix(m: re.Match) -> str:
            word = m.group().lower()
            if split and (whole := split_compound(word, df, known)):
                return whole
            return (derive and base_form(word, known)) or m.group()

        return re.sub(r"[A-Za-z]+", fix, query)

    def count(self, kind: str) -> int:
        return int(self.conn.execute("SELECT count(*) FROM chunks WHERE kind=?", (kind,)).fetchone()[0])

    def search(
        self,
        query: str,
        k: int = 10,
        expander: Expander | None = None,
        kinds: Sequence[str] = KINDS,
        depth: int = 30,
    ) -> SearchResult:
        """Hybrid search: BM25 lists per kind for the query (and, when the probe is weak and an
        expander is given, for its expansions), fused with Reciprocal Rank Fusion."""
        check_query(query)
        spelled = self.respell(query)
        original = {kind: self.query(kind, spelled, depth) for kind in kinds}
        probe = [h.score for h in original.get("source") or next(iter(original.values()), [])]
        strong = is_strong_signal(probe)
        lists: list[tuple[float, list[Hit]]] = [(ORIGINAL_WEIGHT, hits) for hits in original.values()]
        expanded = expansions(expander, query) if expander is not None and not strong else []
        for q in expanded:
            lists += [(EXPANSION_WEIGHT, self.query(kind, q, depth)) for kind in kinds]
        terms = list(dict.fromkeys(t for q in [spelled, *expanded] for t in query_terms(q)))
        return SearchResult(query, self.with_snippets(rrf(lists)[:k], terms), expanded, strong, spelled)

    def with_snippets(self, hits: Sequence[Hit], terms: Sequence[str]) -> list[Hit]:
        """``hits`` with their snippets: made only for the hits shown, not for every hit fused."""
        if not hits:
            return []
        paths = sorted({h.path for h in hits})
        rows = self._rows(
            f"SELECT kind, path, anchor, body FROM chunks WHERE path IN ({','.join('?' * len(paths))})", paths
        )
        bodies = {(kind, path, anchor): body for kind, path, anchor, body in rows}
        return [replace(h, snippet=snippet(bodies.get((h.kind, h.path, h.anchor), ""), terms)) for h in hits]


def expansions(expander: Expander, query: str) -> list[str]:
    """The expander's rewrites of ``query``: distinct, non-empty, none the query itself."""
    out: list[str] = []
    for q in expander(query):
        q = " ".join(str(q).split())
        if q and q.lower() != query.lower() and q not in out:
            out.append(q)
    return out


class Entities:
    """What the wiki has an entry for (a crop, an article, a part): each level-2 heading of a page,
    known by its heading and, when it is a source's title, that source's aliases. A question that
    names one is linked to the sections the wiki files under it, which plain retrieval finds only
    if the rest of the question happens to use the sources' words."""

    def __init__(self, entries: Sequence[tuple[str, str, Sequence[str]]], docs: dict[str, tuple]):
        """``docs``: {path: (source, id, key, title, aliases)} (``SearchIndex.doc_names``)."""
        self.refs: dict[tuple[str, ...], dict[str, None]] = {}  # name words → cited sections, in order
        for _, heading, refs in entries:
            names = [heading]
            for path in dict.fromkeys(r.partition("#")[0] for r in refs):
                doc = docs.get(path)
                if doc is not None and doc[3] == heading:
                    names += doc[4]
            for name in names:
                key = tuple(plural_stem(w) for w in words(name))
                if key and len(" ".join(key)) >= 4:
                    self.refs.setdefault(key, {}).update(dict.fromkeys(refs))
        self.longest = max((len(k) for k in self.refs), default=0)

    def as_json(self) -> str:
        return json.dumps([[list(k), list(v)] for k, v in self.refs.items()], ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Entities:
        out = cls([], {})
        out.refs = {tuple(k): dict.fromkeys(v) for k, v in json.loads(text)}
        out.longest = max((len(k) for k in out.refs), default=0)
        return out

    def named_in(self, text: str) -> list[tuple[str, ...]]:
        """The entity names that occur in ``text`` as whole words, longest first."""
        toks = [plural_stem(w) for w in words(text)]
        found = {
            tuple(toks[i : i + n])
            for n in range(1, self.longest + 1)
            for i in range(len(toks) - n + 1)
            if tuple(toks[i : i + n]) in self.refs
        }
        return sorted(found, key=lambda k: (-len(k), k))


def _doc(row: tuple) -> SourceDoc:
    path, source, id_, key, title, _, meta, body, digest = row
    return SourceDoc(
        source, id_, key, path, title, json.loads(meta), body, digest, tuple(split_sections(body))
    )


def rrf(lists: Sequence[tuple[float, Sequence[Hit]]], k: int = RRF_K) -> list[Hit]:
    """Reciprocal Rank Fusion: Σ weight / (k + rank) over the lists, plus a bonus for a document
    ranked #1 (+0.05) or #2–3 (+0.02) in any list. Hits are keyed by (path, anchor)."""
    scores: dict[tuple[str, str], float] = {}
    best_rank: dict[tuple[str, str], int] = {}
    first: dict[tuple[str, str], Hit] = {}
    refs: dict[tuple[str, str], list[str]] = {}
    for weight, hits in lists:
        for rank, hit in enumerate(hits, 1):
            key = hit.key
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            best_rank[key] = min(best_rank.get(key, rank), rank)
            if key not in first or (first[key].kind == "index" and hit.kind != "index"):
                first[key] = hit
            refs.setdefault(key, []).extend(hit.refs)
    for key, rank in best_rank.items():
        scores[key] += TOP_BONUS.get(rank, 0.0)
    ranked = sorted(scores, key=lambda key: (-scores[key], key))
    out = []
    for key in ranked:
        h = first[key]
        out.append(
            Hit(
                h.kind,
                h.path,
                h.anchor,
                h.heading,
                h.title,
                scores[key],
                h.snippet,
                tuple(dict.fromkeys(refs[key])),
            )
        )
    return out


def open_index(root: Path, refresh: bool = True) -> tuple[SearchIndex, UpdateStats]:
    """The KB's search index, brought up to date with its files unless ``refresh`` is False."""
    require_sources(root, "search")
    index = SearchIndex(root)
    stats = index.update() if refresh else UpdateStats()
    return index, stats


__all__ = [
    "Chunk",
    "Hit",
    "IndexEntry",
    "SearchIndex",
    "SearchResult",
    "is_strong_signal",
    "normalise",
    "open_index",
    "query_terms",
    "read_index_entries",
    "rrf",
]
