"""Fusing a question's ranked lists into one ranking of layer-1 sections, by mode.

Every function here is pure: it reads the question's ``Candidates`` (its term counts and lists,
read in one pass, ``search.py``) and the wiki's entities, and queries nothing. ``PLANS`` says
which lists each mode fuses, so that the pass reads them all at once.

- ``raw``: BM25 over layer-1 sections alone (the plain-RAG baseline);
- ``search`` (``hybrid``): the lists fused by RRF at the level of the sections they cite:
  layer-1 sections; wiki pages and headings resolved through their citations; whole documents,
  each by its best section; the sections the wiki files under entities the question names; and
  an LLM's rewrites of the question when the first list is weak. The question is searched as
  respelled ('sweetcorn' → 'sweet corn'). Raw BM25's first hits are kept among the first results;
- ``index`` (``routed``): the agent protocol: read ``index.md``, open the pages whose index
  lines, text and headings match best (``route``), search within them (their headings and the
  sources they cite), and fuse that with the hybrid search for what those pages miss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..compile.searchindex.chunks import split_ref
from ..compile.searchindex.entities import Entities
from .counts import TermCounts
from .search import (
    DENSE,
    EXPANSION_WEIGHT,
    ORIGINAL_WEIGHT,
    RRF_K,
    TOP_BONUS,
    Candidates,
    Hit,
    ListSpec,
    Ranked,
)

MODES = ("index", "search", "raw")
DEPTH = 30
ORDER_DEPTH = 400  # how deep the source list is read to order the sections other lists name
INDEX_PAGES = 12  # pages an agent opens after reading index.md
SKIM_WEIGHT = 0.5  # pages chosen by their whole text, against their index lines
HEADING_WEIGHT = 1.5  # pages chosen by their best-matching sections, against their index lines
ROUTE_WEIGHT = 1.0  # the sections found in the pages the index leads to, against the search's
SEARCH_PAGES = 2  # whole-page hits whose citations join the fused list
PAGE_REFS = 3  # cited sections taken from each such page
WIKI_WEIGHT = 0.05  # the wiki's lists (pages, headings) against the source sections' list
DOC_WEIGHT = 0.05  # the whole-document list against the source sections' list
RAW_KEPT = 2  # raw BM25's first hits kept among the first KEEP_WITHIN results
KEEP_WITHIN = 5
ENTITY_WEIGHT = 0.5  # the list of sections the wiki files under entities the question names
ENTITY_REFS = 3  # sections taken from each named entity, best-matching first
ENTITY_RARE = 0.03  # a name counts only if one of its words is in at most this share of sections
# The question's dense lists (search.semantic): the sections nearest it by meaning, and the
# documents nearest it, each by its best-matching section; weighted as its source list, and
# earning no top-rank bonus (tuned on the FarmBot dev questions, checked on held-out ones).
DENSE_WEIGHT = ORIGINAL_WEIGHT
DENSE_DOC_WEIGHT = ORIGINAL_WEIGHT
DENSE_BONUS = False

_HYBRID = (
    ListSpec("source", ORDER_DEPTH),
    ListSpec("page", DEPTH),
    ListSpec("doc", DEPTH),
    ListSpec("source", DEPTH, dense=True),
    ListSpec("doc", DEPTH, dense=True),
)
# The lists each mode fuses. In index mode the typed question's page, source and document lists
# are read whole: the pages the index leads to are known only once the lists are, and are read
# within them.
PLANS: dict[str, tuple[ListSpec, ...]] = {
    "raw": (ListSpec("source", DEPTH, typed=True),),
    "search": _HYBRID,
    "index": (
        ListSpec("index", DEPTH, typed=True),
        *(ListSpec(kind, None, typed=True) for kind in ("page", "source", "doc")),
        *_HYBRID,
    ),
}


@dataclass(frozen=True)
class Fused:
    """One ranking of layer-1 section refs (``path#anchor``), the wiki pages read on the way, and
    the wiki ``file#heading`` each section was read in."""

    ranked: list[str]
    pages: list[str] = field(default_factory=list)
    via: dict[str, str] = field(default_factory=dict)


def fuse(got: Candidates, mode: str, entities: Entities) -> Fused:
    if mode == "raw":
        return Fused(flatten(got.hits("source", got.question, DEPTH)))
    if mode == "search":
        return hybrid(got, entities)
    return routed(got, entities)


def hybrid(got: Candidates, entities: Entities) -> Fused:
    """The search mode's ranking: for the respelled question (weight 2) and each rewrite (1), the
    source sections, the sections the best pages and headings cite, and whole documents; for the
    question itself, the sections filed under the entities it names."""
    texts = [(ORIGINAL_WEIGHT, got.spelled), *((EXPANSION_WEIGHT, q) for q in got.expanded)]
    unnamed = unnamed_entries(got, entities)
    lists: list[tuple[float, list[str]]] = []
    pages: list[str] = []
    headed: list[Hit] = []  # the page headings found, best first: where each section was read
    for n, (weight, text) in enumerate(texts):
        sources = got.hits("source", text, ORDER_DEPTH)
        order = ranks(sources)
        found = got.hits("page", text, DEPTH)
        whole = [h for h in found if not h.anchor][:SEARCH_PAGES]
        lists.append((weight, flatten(sources[:DEPTH])))
        lists.append((weight * WIKI_WEIGHT, page_refs([h for h in whole if h.path not in unnamed], order)))
        lists.append((weight * WIKI_WEIGHT, flatten([h for h in found if h.anchor], order)))
        lists.append((weight * DOC_WEIGHT, doc_refs(got.ranked("doc", text), order)))
        pages += [h.path for h in whole]
        headed += [h for h in found if h.anchor]
        if n == 0:  # entities the question itself names, and what is nearest it by meaning
            lists.append((ENTITY_WEIGHT, entity_refs(entities, got.counts, text, order)))
            lists.append((DENSE_WEIGHT, flatten(got.hits(DENSE + "source", text, DEPTH)), DENSE_BONUS))
            lists.append((DENSE_DOC_WEIGHT, doc_refs(got.ranked(DENSE + "doc", text), order), DENSE_BONUS))
    first = flatten(got.hits("source", got.spelled, RAW_KEPT))
    return Fused(keep_first(fuse_refs(lists), first), list(dict.fromkeys(pages)), read_in(headed))


def read_in(hits: list[Hit]) -> dict[str, str]:
    """{section ref: the page heading it was read in}: the heading that shows that section (its
    anchor, or its anchor with a date: '…#what-is-the-return-policy'), else the best heading
    citing it (not a 'Filed under' table that cites every entry of its page)."""
    best: dict[str, str] = {}
    shown: dict[str, str] = {}
    for h in hits:
        for r in h.refs:
            best.setdefault(r, h.target)
            anchor = r.partition("#")[2]
            if anchor and h.anchor.startswith(anchor):
                shown.setdefault(r, h.target)
    return {**best, **shown}


def routed(got: Candidates, entities: Entities) -> Fused:
    """The index mode's ranking: the sections found within the pages ``route`` opens (their
    headings, the sources they cite, those sources whole), fused with the hybrid search."""
    question = got.question
    chosen = route(got, entities)
    inside = got.hits("page", question, DEPTH, within=chosen)
    cited = {split_ref(r)[0] for h in inside for r in h.refs}
    order = ranks(got.hits("source", question, ORDER_DEPTH, within=cited))
    sections = [h for h in inside if h.anchor]
    whole = [h for h in inside if not h.anchor]
    found = fuse_refs(
        [
            (ORIGINAL_WEIGHT, sorted(order, key=order.__getitem__)[:DEPTH]),
            (ORIGINAL_WEIGHT * WIKI_WEIGHT, flatten(sections, order)),
            (ORIGINAL_WEIGHT * WIKI_WEIGHT, page_refs(whole, order)),
            (ORIGINAL_WEIGHT * DOC_WEIGHT, doc_refs(got.ranked("doc", question), order, cited)),
        ]
    )
    # and searches for what those pages miss, as the protocol says
    searched = hybrid(got, entities)
    via = {**searched.via, **read_in(sections)}  # the opened pages first
    ranked = fuse_refs([(ROUTE_WEIGHT, found), (1.0, searched.ranked)])
    return Fused(ranked, list(dict.fromkeys([*chosen, *searched.pages])), via)


def route(got: Candidates, entities: Entities) -> list[str]:
    """The pages an agent opens after reading ``index.md``: those whose index lines match the
    question best, fused with those whose whole text and whose headings do. An entry's own page
    (a crop's) is opened when the question names the entry, by its title or an alias, not when it
    shares a word with the question ('cap' of Cinnamon Cap Mushroom, for a cap on log messages):
    its text is short, so one shared word ranks it first; the search finds its sections as any
    other's."""
    question = got.question
    shut = unnamed_entries(got, entities)
    entries = got.hits("index", question, DEPTH, without=shut)
    skimmed = got.hits("page", question, DEPTH, without=shut)
    routes = [
        (1.0, list(dict.fromkeys(h.path for h in entries))),
        (SKIM_WEIGHT, [h.path for h in skimmed if not h.anchor]),
        # a page of many entries (25 crops) is found by the entry's heading, not its index line
        (HEADING_WEIGHT, list(dict.fromkeys(h.path for h in skimmed if h.anchor))),
    ]
    return fuse_refs(routes)[:INDEX_PAGES]


def unnamed_entries(got: Candidates, entities: Entities) -> set[str]:
    """The entries' own pages (a crop's) that the question does not name by a title or alias. Such
    a page is only its entry's document, which the lists of sections and documents rank already:
    counted as a page too, its short text ranks it first on any word it shares with the question
    ('brick top', a mushroom, for a power brick)."""
    return set(entities.pages) - entities.pages_named_in(got.question, got.spelled)


def ranks(hits: Sequence[Hit]) -> dict[str, int]:
    """Each listed layer-1 section's rank in a source list."""
    return {h.refs[0]: i for i, h in enumerate(hits) if h.refs}


def page_refs(pages: Sequence[Hit], order: dict[str, int], per: int = PAGE_REFS) -> list[str]:
    """The citations of whole pages that match, best-matching cited sections first."""
    out: dict[str, None] = {}
    for h in pages:
        for r in sorted((r for r in h.refs if r in order), key=order.__getitem__)[:per]:
            out.setdefault(r, None)
    return list(out)


def doc_refs(docs: Ranked, order: dict[str, int], within: set[str] | None = None) -> list[str]:
    """Whole documents ranked by BM25 (only those ``within`` when given), each standing for its
    best-matching section, else its lead section: a document can answer with words spread over
    sections that no single section holds together."""
    best: dict[str, str] = {}
    for ref in sorted(order, key=order.__getitem__):
        best.setdefault(split_ref(ref)[0], ref)
    return [best.get(h.path) or docs.leads.get(h.path, h.path) for h in docs.hits(DEPTH, within)]


def entity_refs(
    entities: Entities, counts: TermCounts, question: str, order: dict[str, int], per: int = ENTITY_REFS
) -> list[str]:
    """Sections the wiki files under the distinctive entities the question names (a name
    whose words are all common, like 'seed' or 'plant', says nothing), best-matching first."""
    out: dict[str, None] = {}
    for name in entities.named_in(question):
        if min(counts.df(w) for w in name) > ENTITY_RARE * counts.sources:
            continue
        refs = sorted(entities.refs[name], key=lambda r: order.get(r, len(order)))
        for r in refs[:per]:
            out.setdefault(r, None)
    return list(out)


def flatten(hits: Sequence[Hit], order: dict[str, int] | None = None) -> list[str]:
    """Ranked refs from ranked hits; a hit citing several sections lists the best-matching first."""
    out: dict[str, None] = {}
    for h in hits:
        refs = list(h.refs)
        if order is not None and len(refs) > 1:
            refs = [r for r in sorted(refs, key=lambda r: order.get(r, len(order))) if r in order][
                :3
            ] or refs[:1]
        for r in refs:
            out.setdefault(r, None)
    return list(out)


def fuse_refs(lists: Sequence[tuple], k: int = RRF_K) -> list[str]:
    """Reciprocal Rank Fusion of ranked ref lists, each (weight, refs) or (weight, refs, bonus):
    the same constants and top-rank bonus as search, which a list given with ``bonus`` False
    does not earn."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for weight, refs, *bonus in lists:
        for rank, r in enumerate(refs, 1):
            scores[r] = scores.get(r, 0.0) + weight / (k + rank)
            if not bonus or bonus[0]:
                best[r] = min(best.get(r, rank), rank)
    for r, rank in best.items():
        scores[r] += TOP_BONUS.get(rank, 0.0)
    return sorted(scores, key=lambda r: (-scores[r], r))


def keep_first(fused: Sequence[str], top: Sequence[str], within: int = KEEP_WITHIN) -> list[str]:
    """``fused`` with each of ``top`` (a single list's first hits) moved up, when fusion ranked it
    lower, to the last places of the first ``within``: fusion adds evidence, it does not lose
    what plain BM25 found first."""
    out = list(fused)
    for i, ref in enumerate(top):
        spot = within - len(top) + i
        if ref in out[:within]:
            continue
        if ref in out:
            out.remove(ref)
        out.insert(spot, ref)
    return out


def files_first(refs: Sequence[str]) -> list[str]:
    """The best section of every file, in rank order, then the files' other sections: the first
    results an agent reads are distinct documents rather than three parts of one."""
    seen: set[str] = set()
    first, rest = [], []
    for r in refs:
        path = split_ref(r)[0]
        (rest if path in seen else first).append(r)
        seen.add(path)
    return first + rest


__all__ = ["MODES", "PLANS", "Fused", "files_first", "fuse", "fuse_refs"]
