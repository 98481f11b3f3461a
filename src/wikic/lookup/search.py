"""Reading the search index for a question, in one pass, and the hybrid search over it.

A question's pass (``SearchIndex.retrieve``) reads everything its lookup needs from the index,
and nothing is read after it:

1. the term counts of its words (``counts.py``): one statement, and one more for the words of it
   no source holds, from which it is respelled as searched ('sweetcorn' → 'sweet corn');
2. every BM25 list the lookup fuses, in one statement: the lists its plan names (``ListSpec``),
   each the chunks of one kind (``chunks.py``) matching the question as typed or as respelled,
   best first, with their features (kind, page, heading, cited sections, a whole document's
   lead section).

What the lookup does next (fusing, judging, composing the answer) is a pure function of the
pass's ``Candidates``. With an LLM backend, a weak first list makes the backend rewrite the
question, and the rewrites' lists are read in one more statement (``expand``).

``search`` is that pass with its own plan: the page, source and index lists of the respelled
query, fused with Reciprocal Rank Fusion (RRF). Queries never write.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path

from ..compile.searchindex.store import IndexStore, UpdateStats
from ..transform.layer1 import require_sources
from .counts import Term, TermCounts, alternatives_wanted, wanted
from .respell import respell
from .text import check_query, is_strong_signal, match_expression, query_terms, snippet

TYPE_CHECKING = False  # not typing's: importing typing costs a search more than its lookup
if TYPE_CHECKING:
    from .dense import DenseReader

KINDS = ("page", "source", "index")  # what ``search`` fuses
DENSE = "dense:"  # a dense list's kind in ``Candidates.lists``: ``dense:source`` (ListSpec.name)
# bm25() weights for (title, headings, body): a match in a title or heading counts above the body.
WEIGHTS = (4.0, 2.5, 1.0)
RRF_K = 60
ORIGINAL_WEIGHT = 2.0
EXPANSION_WEIGHT = 1.0
DENSE_WEIGHT = ORIGINAL_WEIGHT  # the question's dense list, as each of its BM25 lists (no top-rank bonus)
DENSE_KINDS = ("source",)  # the dense lists ``search`` fuses
TOP_BONUS = {1: 0.05, 2: 0.02, 3: 0.02}
DEPTH_DENSE = 30  # a dense list read with no depth of its own
MAX_TERMS = 400  # terms counted in one statement (two bound values each; SQLite allows 999 at least)

Expander = Callable[[str], Sequence[str]]


class Hit:
    """One ranked result, a value. ``score`` is the BM25 score in single lists (SQLite's,
    negative: lower is better), the fused RRF score in fused ones. (A plain class, as is
    ``SearchResult``: a dataclass would cost ``wikic search`` the import of ``dataclasses``.)"""

    __slots__ = ("kind", "path", "anchor", "heading", "title", "score", "snippet", "refs")

    def __init__(
        self,
        kind: str,
        path: str,
        anchor: str,
        heading: str,
        title: str,
        score: float,
        snippet: str,
        refs: tuple[str, ...] = (),
    ):
        self.kind, self.path, self.anchor, self.heading = kind, path, anchor, heading
        self.title, self.score, self.snippet, self.refs = title, score, snippet, refs

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if isinstance(other, Hit) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Hit{self._values()!r}"

    def with_snippet(self, snippet: str) -> Hit:
        return Hit(*self._values()[:6], snippet, self.refs)

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


class SearchResult:
    def __init__(
        self,
        query: str,
        hits: list[Hit],
        expanded: list[str] | None = None,
        strong_signal: bool = False,
        searched: str = "",
    ):
        self.query, self.hits = query, hits
        self.expanded = expanded if expanded is not None else []  # the extra queries that were searched
        self.strong_signal = strong_signal
        self.searched = searched  # the query as searched, run-together words split (see respell)


class ListSpec:
    """One ranked list a lookup fuses: the chunks of ``kind`` matching the question as respelled
    (or as ``typed``), best first, ``depth`` of them (None: every match, for a list read only
    within the pages or documents the other lists lead to). By BM25, or with ``dense`` by the
    cosine of their vectors to the question's (``dense.py``; read only when the BM25 probe is not
    already a strong signal, and when the index has vectors). (A plain class, as is
    ``Candidates``: a dataclass costs ``wikic search`` its making at every start.)"""

    __slots__ = ("kind", "depth", "typed", "dense")

    def __init__(self, kind: str, depth: int | None, typed: bool = False, dense: bool = False):
        self.kind = kind
        self.depth = depth
        self.typed = typed
        self.dense = dense

    @property
    def name(self) -> str:
        """The list's kind in ``Candidates.lists``: its chunks' kind, ``dense:`` before it for a dense list."""
        return DENSE + self.kind if self.dense else self.kind


class Ranked:
    """One BM25 list as read, best first; a row becomes a ``Hit`` when it is asked for."""

    # a row: (list, id, kind, path, anchor, heading, title, refs as JSON, score, lead section or None)
    def __init__(self, rows: Sequence[tuple] = ()):
        self.rows = rows
        self._hits: dict[int, Hit] = {}

    def hits(
        self, depth: int | None = None, within: Iterable[str] | None = None, without: Iterable[str] = ()
    ) -> list[Hit]:
        """The first ``depth`` hits (all when None), only those whose path is ``within`` when given
        and none whose path is ``without``."""
        paths = None if within is None else set(within)
        skip = set(without)
        out: list[Hit] = []
        for i, row in enumerate(self.rows):
            if depth is not None and len(out) >= depth:
                break
            if (paths is None or row[3] in paths) and row[3] not in skip:
                out.append(self._hit(i))
        return out

    def _hit(self, i: int) -> Hit:
        if i not in self._hits:
            _, _, kind, path, anchor, heading, title, refs, score, _ = self.rows[i]
            self._hits[i] = Hit(kind, path, anchor, heading, title, score, "", tuple(json.loads(refs)))
        return self._hits[i]

    @cached_property
    def leads(self) -> dict[str, str]:
        """{document path: the section its whole-document hit stands for} (``chunks.lead_ref``)."""
        return {row[3]: row[9] for row in self.rows if row[9] is not None}


class Candidates:
    """Everything the index says about one question, read in one pass: its term counts and every
    ranked list its lookup fuses, keyed by (kind, the text searched); a dense list by its own
    kind (``dense:source``), present only when it was read."""

    __slots__ = ("question", "spelled", "counts", "lists", "expanded")

    def __init__(
        self,
        question: str,
        spelled: str,
        counts: TermCounts,
        lists: Mapping[tuple[str, str], Ranked],
        expanded: tuple[str, ...] = (),
    ):
        self.question = question
        self.spelled = spelled  # as searched: run-together words split (respell)
        self.counts = counts
        self.lists = lists
        self.expanded = expanded  # an LLM's rewrites of the question, searched too

    def ranked(self, kind: str, text: str) -> Ranked:
        """A list the pass read; a dense list it did not read (the probe was strong, or the
        index has no vectors) is empty."""
        if kind.startswith(DENSE):
            return self.lists.get((kind, text)) or Ranked()
        return self.lists[(kind, text)]

    @property
    def strong(self) -> bool:
        """Whether the BM25 probe (the sections matching the question as searched) already
        answers it: its best hit clearly ahead (``text.is_strong_signal``)."""
        probe = self.lists.get(("source", self.spelled))
        return probe is not None and is_strong_signal([row[8] for row in probe.rows[:2]])

    def hits(
        self,
        kind: str,
        text: str,
        depth: int | None = None,
        within: Iterable[str] | None = None,
        without: Iterable[str] = (),
    ) -> list[Hit]:
        return self.ranked(kind, text).hits(depth, within, without)

    @property
    def asked(self) -> str:
        """The question as answered: a derived word no source uses written as the word it
        derives from ('crusty' → 'crust'), so the answer's units are matched to the sources' words."""
        return respell(self.question, self.counts.spelling_count, self.counts.known, split=False, derive=True)


class SearchIndex(IndexStore):
    """The FTS5 index of one KB, read for questions (``IndexStore`` keeps it up to date).
    ``semantic`` False reads no dense list whatever the index holds (None: as it says)."""

    def __init__(self, root: Path, db_path: Path | None = None, semantic: bool | None = None):
        super().__init__(root, db_path)
        if semantic is False:
            self.semantic = False

    @cached_property
    def sources(self) -> int:
        """How many layer-1 sections there are (at least 1): what a term's rarity is relative to."""
        return max(1, self.count("source"))

    # -- the pass

    def retrieve(self, question: str, plan: Sequence[ListSpec], weigh: bool = True) -> Candidates:
        """One question's pass: its term counts (with ``weigh``, those its answer is weighed by
        too), then the BM25 lists of ``plan`` for it as respelled or as typed, in one statement;
        then, unless they are a strong signal, its dense lists."""
        check_query(question)
        counts = self.term_counts(question, weigh)
        # by meaning, a derived word no source holds is read as its base ('crusty' → 'crust'), as
        # answers read it; matching by words alone keeps the question's words as typed
        spelled = respell(question, counts.spelling_count, counts.known, derive=self.by_meaning)
        texts = {True: question, False: spelled}
        depths = deepest(((s.kind, texts[s.typed]), s.depth) for s in plan if not s.dense)
        wanted = {(s.kind, texts[s.typed]): s.depth or DEPTH_DENSE for s in plan if s.dense}
        if not (wanted and self.semantic):
            return Candidates(question, spelled, counts, self.lists(depths))
        from .soon import Soon

        reading = Soon(lambda: self.lists(depths))  # while the dense lists are read here
        dense = self.dense_lists(self.dense.nearest(wanted))
        lists = reading.result()
        got = Candidates(question, spelled, counts, lists)
        if not got.strong:
            lists.update(dense)
        return got

    @property
    def by_meaning(self) -> bool:
        """Whether a search reads a dense list: matching by meaning is on, and its vectors and
        query file can be used."""
        return self.semantic and self.dense.embedder() is not None

    @cached_property
    def semantic(self) -> bool:
        """Whether the index matches by meaning too (``search.semantic``, as last brought up to date)."""
        return self.dense.on

    @property
    def semantic_note(self) -> str:
        """Why matching by meaning is off though the schema asks for it ('' when it is not): the
        note a command shows once."""
        return self.dense.note if self.semantic else ""

    @cached_property
    def dense(self) -> DenseReader:
        """The vectors of this index, read for questions (``dense.py``)."""
        from .dense import DenseReader

        return DenseReader(self.db_path, self.root, self.dense_state())

    def dense_lists(
        self, nearest: Mapping[tuple[str, str], Sequence[tuple[float, str]]]
    ) -> dict[tuple[str, str], Ranked]:
        """The dense list of each (kind, text) from its nearest vector keys (``DenseReader``):
        their chunks, best first (score: minus the cosine), read in one statement on the dense
        reader's own connection (the caller's may be busy with the BM25 lists). Empty lists when
        the index has no usable vectors."""
        asked = [(n, kind, found) for n, ((kind, _), found) in enumerate(nearest.items()) if found]
        found: dict[int, list[tuple]] = {n: [] for n in range(len(nearest))}
        if asked:
            for row in self.dense.conn().execute(*_dense_statement(asked)):
                found[row[0]].append(row)
        return {
            (DENSE + kind, text): Ranked(sorted(found[n], key=_rank))
            for n, (kind, text) in enumerate(nearest)
        }

    def expand(self, got: Candidates, expander: Expander, plan: Sequence[ListSpec]) -> Candidates:
        """``got`` with the lists of ``plan`` for the expander's rewrites of the question too, read
        in one more statement."""
        texts = expansions(expander, got.question)
        for text in texts:
            check_query(text)
        lists = self.lists(deepest(((s.kind, t), s.depth) for t in texts for s in plan if not s.typed))
        return Candidates(got.question, got.spelled, got.counts, {**lists, **got.lists}, tuple(texts))

    def term_counts(self, question: str, weigh: bool = True) -> TermCounts:
        """The counts ``question`` needs (see counts.py): of its own words, in one statement, and
        of the words the ones no source holds may be written as, in one more when there are any."""
        counts = TermCounts(self.counts, lambda: self.sources)
        counts.add(wanted(question, weigh))
        counts.add(alternatives_wanted(counts, question, weigh))
        return counts

    def counts(self, terms: Mapping[Term, int], kind: str = "source") -> dict[Term, int]:
        """How many chunks of ``kind`` hold each term (as the tokenizer stems it; with prefix, a
        word it begins), counting at most its cap of them (-1: all), in one statement."""
        items = list(terms.items())
        out: dict[Term, int] = {}
        for start in range(0, len(items), MAX_TERMS):
            part = items[start : start + MAX_TERMS]
            exprs = [match_expression([t], prefix) for (t, prefix), _ in part]
            try:
                rows = self._rows(*_count_statement(kind, exprs, [cap for _, cap in part]))
            except sqlite3.OperationalError:  # e.g. a term the tokenizer reduces to nothing
                rows = [
                    (i, self._count_alone(kind, e, cap)) for i, (e, (_, cap)) in enumerate(zip(exprs, part))
                ]
            out |= {part[i][0]: int(n) for i, n in rows}
        return out

    def _count_alone(self, kind: str, expr: str, cap: int) -> int:
        try:
            return self._rows(*_count_statement(kind, [expr], [cap]))[0][1]
        except sqlite3.OperationalError:
            return 0

    def lists(self, depths: Mapping[tuple[str, str], int | None]) -> dict[tuple[str, str], Ranked]:
        """The BM25 list of each (kind, text), as deep as ``depths`` says (None: every match), in
        one statement."""
        queries = [(kind, tuple(query_terms(text)), depth) for (kind, text), depth in depths.items()]
        return dict(zip(depths, self.ranked(queries)))

    def ranked(self, queries: Sequence[tuple[str, Sequence[str], int | None]]) -> list[Ranked]:
        """The BM25 list of each (kind, terms, depth), in one statement."""
        asked = [(n, q) for n, q in enumerate(queries) if q[1]]
        if not asked:
            return [Ranked() for _ in queries]
        try:
            rows = self._rows(*_list_statement(asked))
        except sqlite3.OperationalError:  # one list's terms cannot be matched: read the rest alone
            rows = [row for one in asked for row in self._list_alone(one)]
        found: dict[int, list[tuple]] = {n: [] for n in range(len(queries))}
        for row in rows:
            found[row[0]].append(row)
        return [Ranked(sorted(found[n], key=_rank)) for n in range(len(queries))]

    def _list_alone(self, query: tuple[int, tuple]) -> list:
        try:
            return self._rows(*_list_statement([query]))
        except sqlite3.OperationalError:
            return []

    # -- single reads, and the hybrid search

    def query(self, kind: str, query: str | Sequence[str], limit: int = 20) -> list[Hit]:
        """One BM25-ranked list of chunks of ``kind``, without snippets (``with_snippets`` cuts
        them for the hits that are shown)."""
        if isinstance(query, str):
            check_query(query)
        terms = query_terms(query) if isinstance(query, str) else list(query)
        return self.ranked([(kind, terms, limit)])[0].hits()

    def doc_freq(self, kind: str, term: str, cap: int = -1, prefix: bool = False) -> int:
        """How many chunks of ``kind`` contain ``term`` (with ``prefix``, a word it begins),
        counting at most ``cap`` of them when it is given (``cap=1`` asks only whether any does)."""
        return self.counts({(term, prefix): cap}, kind)[(term, prefix)]

    def respell(self, query: str, split: bool = True, derive: bool = False) -> str:
        """The query with words no layer-1 section contains written as words some do (respell.py)."""
        counts = self.term_counts(query, weigh=False)
        return respell(query, counts.spelling_count, counts.known, split, derive)

    def search(
        self,
        query: str,
        k: int = 10,
        expander: Expander | None = None,
        kinds: Sequence[str] = KINDS,
        depth: int = 30,
    ) -> SearchResult:
        """Hybrid search: BM25 lists per kind for the query (and, when the probe is weak and an
        expander is given, for its expansions), and the dense list of layer-1 sections when the
        probe is weak, fused with Reciprocal Rank Fusion."""
        plan = [ListSpec(kind, depth) for kind in kinds]
        got = self.retrieve(
            query, [*plan, *(ListSpec(k, depth, dense=True) for k in DENSE_KINDS)], weigh=False
        )
        original = {kind: got.hits(kind, got.spelled) for kind in kinds}
        strong = is_strong_signal(
            [h.score for h in original.get("source") or next(iter(original.values()), [])]
        )
        if expander is not None and not strong:
            got = self.expand(got, expander, plan)
        lists = [(ORIGINAL_WEIGHT, hits) for hits in original.values()]
        lists += [(DENSE_WEIGHT, got.hits(DENSE + k, got.spelled), False) for k in DENSE_KINDS]
        lists += [(EXPANSION_WEIGHT, got.hits(kind, q)) for q in got.expanded for kind in kinds]
        terms = list(dict.fromkeys(t for q in [got.spelled, *got.expanded] for t in query_terms(q)))
        hits = self.with_snippets(rrf(lists)[:k], terms)
        return SearchResult(query, hits, list(got.expanded), strong, got.spelled)

    def close(self) -> None:
        if "dense" in self.__dict__:
            self.dense.close()
        super().close()

    def with_snippets(self, hits: Sequence[Hit], terms: Sequence[str]) -> list[Hit]:
        """``hits`` with their snippets: made only for the hits shown, not for every hit fused."""
        if not hits:
            return []
        paths = sorted({h.path for h in hits})
        rows = self._rows(
            f"SELECT kind, path, anchor, body FROM chunks WHERE path IN ({','.join('?' * len(paths))})", paths
        )
        bodies = {(kind, path, anchor): body for kind, path, anchor, body in rows}
        return [h.with_snippet(snippet(bodies.get((h.kind, h.path, h.anchor), ""), terms)) for h in hits]


def deepest(wanted: Iterable[tuple[tuple[str, str], int | None]]) -> dict[tuple[str, str], int | None]:
    """Each (kind, text) once, as deep as its deepest request (None: every match)."""
    out: dict[tuple[str, str], int | None] = {}
    for key, depth in wanted:
        if key not in out:
            out[key] = depth
        elif out[key] is not None:
            out[key] = None if depth is None else max(depth, out[key])
    return out


def _count_statement(kind: str, exprs: Sequence[str], caps: Sequence[int]) -> tuple[str, list]:
    """SQL counting the chunks that match each expression, up to its cap: one part per cap."""
    by_cap: dict[int, list[int]] = {}
    for i, cap in enumerate(caps):
        by_cap.setdefault(int(cap), []).append(i)
    parts, args = [], []
    for cap, items in by_cap.items():
        parts.append(
            f"SELECT t.column1, (SELECT count(*) FROM (SELECT 1 FROM fts_{kind} WHERE fts_{kind} MATCH t.column2"
            f" LIMIT {cap})) FROM (VALUES {','.join('(?, ?)' for _ in items)}) AS t"
        )
        args += [a for i in items for a in (i, exprs[i])]
    return " UNION ALL ".join(parts), args


def _list_statement(queries: Sequence[tuple[int, tuple]]) -> tuple[str, list]:
    """SQL reading the ranked lists ``queries`` ((number, (kind, terms, depth))), best first
    within each (ties in the order the chunks were indexed): each ranked inside FTS first, then
    joined to its chunks (and, for whole documents, to the section each stands for)."""
    w = ", ".join(str(x) for x in WEIGHTS)
    parts, args = [], []
    for n, (kind, terms, depth) in queries:
        ranked = (
            f"(SELECT rowid, bm25(fts_{kind}, {w}) AS s FROM fts_{kind} WHERE fts_{kind} MATCH ?"
            " ORDER BY s, rowid LIMIT ?) r"
        )
        parts.append(_rows_of(n, kind, "r.s", ranked, "c.id = r.rowid"))
        args += [match_expression(terms), -1 if depth is None else depth]
    return " UNION ALL ".join(parts), args


def _rows_of(n: int, kind: str, score: str, source: str, on: str) -> str:
    """One ranked list's rows in the shape every list shares: its number, the chunk, its score,
    and for whole documents the section each stands for."""
    lead = "d.lead" if kind == "doc" else "NULL"
    docs = " LEFT JOIN docs d ON d.path = c.path" if kind == "doc" else ""
    return (
        f"SELECT {int(n)}, c.id, c.kind, c.path, c.anchor, c.heading, c.title, c.refs, {score}, {lead}"
        f" FROM {source} JOIN chunks c ON {on}{docs}"
    )


def _dense_statement(asked: Sequence[tuple[int, str, Sequence[tuple[float, str]]]]) -> tuple[str, list]:
    """SQL reading the chunks of each dense list ((number, kind, [(cosine, vector key)])), in the
    row shape of ``_list_statement`` (score: minus the cosine)."""
    parts, args = [], []
    for n, kind, found in asked:
        keys = f"(VALUES {','.join('(?, ?)' for _ in found)}) v"
        parts.append(_rows_of(n, kind, "-v.column2", keys, "c.vkey = v.column1 AND c.kind = ?"))
        args += [a for cosine, key in found for a in (key, cosine)] + [kind]
    return " UNION ALL ".join(parts), args


def _rank(row: tuple) -> tuple[float, int]:
    """A list's order: best score first, ties in the order the chunks were indexed."""
    return row[8], row[1]


def expansions(expander: Expander, query: str) -> list[str]:
    """The expander's rewrites of ``query``: distinct, non-empty, none the query itself."""
    out: list[str] = []
    for q in expander(query):
        q = " ".join(str(q).split())
        if q and q.lower() != query.lower() and q not in out:
            out.append(q)
    return out


def rrf(lists: Sequence[tuple], k: int = RRF_K) -> list[Hit]:
    """Reciprocal Rank Fusion of (weight, hits) or (weight, hits, bonus) lists: Σ weight / (k +
    rank) over the lists, plus a bonus for a document ranked #1 (+0.05) or #2–3 (+0.02) in any
    list but those given with ``bonus`` False. Hits are keyed by (path, anchor)."""
    scores: dict[tuple[str, str], float] = {}
    best_rank: dict[tuple[str, str], int] = {}
    first: dict[tuple[str, str], Hit] = {}
    refs: dict[tuple[str, str], list[str]] = {}
    for weight, hits, *bonus in lists:
        for rank, hit in enumerate(hits, 1):
            key = hit.key
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            if not bonus or bonus[0]:
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
    "Candidates",
    "Hit",
    "ListSpec",
    "Ranked",
    "SearchIndex",
    "SearchResult",
    "open_index",
    "rrf",
]
