"""The link graph: which subjects have a page (or an entry on one), and which pages link where.

Everything here is computed from the plan and the layer-1 text, before any page is drafted, so a
page's links are part of its fingerprint and a recompile rewrites exactly the pages whose links
changed:

- ``Names``: subject names (devices, and entries whose title is a name, like a crop or a part)
  matched in text as whole words, longest first, plural-insensitive;
- ``anchors``: the heading anchor of each source's entry on its home page, when it is certain
  (a heading earlier on the page with the same slug would make GitHub number it; then the link
  goes to the page);
- ``see_also``: related pages ranked by links, shared sources, shared subjects and page series;
- ``backlinks``: every page that links to a page.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

from ..core.markdown import github_slug, plain_inline
from ..core.models import SourceDoc

_WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*")
_QUESTION = re.compile(
    r"^(how|what|why|when|where|which|who|can|could|do|does|did|is|are|should|will)\b", re.I
)
MAX_NAME_WORDS = 5
COMMON_SHARE = 0.1  # a one-word name in more than this share of documents is too common to link
SEE_ALSO = 5


@lru_cache(maxsize=1 << 16)  # a corpus has a few tens of thousands of distinct words
def stem(word: str) -> str:
    """'tomatoes' → 'tomato', 'berries' → 'berry', 'beans' → 'bean' (names match singular or plural)."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("oes"):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def key_of(name: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in _WORD.findall(name))


_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+(.+?)[ \t]*$", re.MULTILINE)
MIN_TITLE_WORDS = 2  # a one-word item ('Water') is a word of a list, not a title


def listed_titles(body: str, titles: dict[tuple[str, ...], Target]) -> set[tuple[str, ...]]:
    """The ``titles`` that a list item of ``body`` is, whole: a list of other articles ('- [Support
    Policy](…)' read as 'Support Policy'), whose items link to where each is shown."""
    return item_keys(body) & titles.keys() if titles else set()


def item_keys(body: str) -> set[tuple[str, ...]]:
    """The name key of each list item of ``body``, read whole."""
    return {key_of(plain_inline(m.group(1))) for m in _ITEM.finditer(body)}


def unique_titles(entries: list[tuple[str, Target]]) -> dict[tuple[str, ...], Target]:
    """Titles of at least two words that name one entry each, and where that entry is."""
    seen = Counter(key_of(title) for title, _ in entries)
    return {
        k: target for title, target in entries if seen[k := key_of(title)] == 1 and len(k) >= MIN_TITLE_WORDS
    }


@dataclass(frozen=True)
class Target:
    path: str  # wiki page path
    anchor: str = ""

    @property
    def href(self) -> str:
        return self.path + (f"#{self.anchor}" if self.anchor else "")


class Names:
    """Subject names → where they live; ``spans`` finds them in text, longest first.

    A name in ``proper`` (a one-word title that is also a common word: 'Points', 'Tools', 'Help')
    counts only where it is written as a name, capitalised and not opening a sentence ('open the
    Points panel'), never as the word ('a rogue access point', 'in the event', 'writing tool')."""

    def __init__(
        self,
        names: dict[tuple[str, ...], Target],
        proper: frozenset = frozenset(),
        compounds: dict[str, frozenset[str]] | None = None,
    ):
        self.targets = names
        self.proper = frozenset(k for k in proper if k in names)
        # a one-word name's stem → the words that make it part of a longer name ('Raspberry Pi'),
        # known from the corpus (``corpus.Corpus.compounds``) and kept for the names here only
        longer = compounds or {}
        self.compounds = {k[0]: longer[k[0]] for k in names if len(k) == 1 and longer.get(k[0])}
        found: dict[str, set[int]] = {}  # first word → the lengths of names starting with it
        for key in names:
            found.setdefault(key[0], set()).add(len(key))
        self.lengths = {w: sorted(ns, reverse=True) for w, ns in found.items()}

    def spans(self, text: str) -> list[tuple[int, int, tuple[str, ...]]]:
        """(start, end, name key) of every name in ``text``, without overlaps, in order. A name
        written capitalised and followed by another capitalised word is part of a longer name
        and is not this one: 'Raspberry Pi' does not name the raspberry; nor does a one-word
        name used as a verb ('it can help')."""
        if not self.targets:
            return []
        stems = list(map(stem, _WORD.findall(text)))
        lengths, targets = self.lengths, self.targets
        toks: list[re.Match] = []  # the words with their places, found once a name is
        out = []
        n, taken = len(stems), 0  # words before ``taken`` are part of a name found
        for i in [i for i, s in enumerate(stems) if s in lengths]:  # where a name could start
            if i < taken:
                continue
            for size in lengths[stems[i]]:
                key = tuple(stems[i : i + size])
                if len(key) == size and key in targets:
                    toks = toks or list(_WORD.finditer(text))
                    if _broken(text, toks[i : i + size]):  # 'Express (XL)': the longer name, oddly
                        taken = i + size  # written; neither it nor a shorter one links there
                        break
                    last = toks[i + size - 1]
                    after = toks[i + size] if i + size < n else None
                    verb = size == 1 and (
                        (
                            i > 0
                            and _is_verb(toks[i - 1].group(), last.group(), after.group() if after else "")
                        )
                        or _imperative(text, last, after)
                    )
                    common = key in self.proper and not _written_as_name(text, toks[i])
                    longer = _continued(text, last, after) or (
                        size == 1
                        and (
                            _within_longer(text, toks, i, (stems[i + 1],) in targets if after else False)
                            or _compound(text, last, after, self.compounds.get(key[0]))
                        )
                    )
                    if not verb and not common and not longer:
                        out.append((toks[i].start(), _closed(text, toks[i].start(), last.end()), key))
                    taken = i + size
                    break
        return out

    def keys_in(self, text: str) -> set[tuple[str, ...]]:
        """The names in ``text`` (``spans`` without positions, for scanning whole documents)."""
        return {key for _, _, key in self.spans(text)} if self.targets else set()


_QUOTES = "'\"‘’“”"


def _broken(text: str, words: list[re.Match]) -> bool:
    """Whether anything but spaces, a hyphen or a quotation mark stands between the words of a
    name as written."""
    return any(text[a.end() : b.start()].strip(" -\u00a0" + _QUOTES) for a, b in zip(words, words[1:]))


def _closed(text: str, start: int, end: int) -> int:
    """The end of a name that opens a quotation ("Purple Basil 'Dark Opal'"), past the mark
    that closes it, so the link holds both marks."""
    for mark, close in (("'", "'"), ("‘", "’"), ("“", "”"), ('"', '"')):
        opened = text.count(mark, start, end) - (text.count(close, start, end) if close != mark else 0)
        if (opened % 2 if close == mark else opened > 0) and text.startswith(close, end):
            return end + 1
    return end


_OPENS = re.compile(r"(?:^|[.!?:;—–]|\s-|\n)[\s\"'(\[*_>#-]*$")  # after a full stop, a dash, a line break


def _written_as_name(text: str, word: re.Match) -> bool:
    """A word written as a name: capitalised, and not merely because it opens a sentence, a list
    item or a heading."""
    w = word.group()
    shouting = len(w) > 4 and w.isupper()  # a button label ('press MOVE'), not the page's name
    return w[0].isupper() and not shouting and not _OPENS.search(text[: word.start()])


_MODALS = frozenset("can could will would shall should may might must cannot".split())
# what follows a verb and never a noun ending a phrase: 'to help you', 'to group the plants'
_OBJECTS = frozenset("the a an you your it its them their us our me my this that these those".split())


def _is_verb(before: str, word: str, after: str) -> bool:
    """Whether ``word``, a one-word name, is used as a verb: written in lowercase, not as a
    plural, after a modal ('it can help') or after 'to' with an object next ('to help you');
    names are nouns. 'similar to watercress' is a noun."""
    if not word.islower() or stem(word) != word:
        return False
    before = before.lower()
    return before in _MODALS or (before == "to" and after.lower() in _OBJECTS)


_NUMBERS = frozenset("one two three four five six seven eight nine ten each every some all".split())
_OPENS = re.compile(
    r"(?:^|[.!?:;(\"“‘]|(?:^|\n)\s*(?:[-*+]|\d+[.)]))\s*$"
)  # a sentence, item or quotation starts


def _imperative(text: str, word: re.Match, after: re.Match | None) -> bool:
    """Whether a one-word name opens a sentence, an item or a quotation as a verb does, an object
    next: 'Plant one seed', 'Water the tray' (a name would go on 'Plants need …', 'Help is …')."""
    w = word.group()
    return (
        after is not None
        and text[word.end() : after.start()] == " "  # 'Plant one', not '(Express) | 1'
        and w[:1].isupper()
        and w[1:].islower()
        and stem(w.lower()) == w.lower()  # not a plural: 'Plants need light' names them
        and (
            after.group().lower() in _OBJECTS or after.group().lower() in _NUMBERS or after.group().isdigit()
        )
        and bool(_OPENS.search(text[max(0, word.start() - 12) : word.start()]))
    )


def _continued(text: str, last: re.Match, after: re.Match | None) -> bool:
    """Whether a capitalised name runs on into the next word, also capitalised, with only a
    space between them ('Raspberry Pi')."""
    return (
        after is not None
        and last.group()[0].isupper()
        and after.group()[0].isupper()
        and text[last.end() : after.start()] == " "
    )


def _compound(text: str, last: re.Match, after: re.Match | None, seconds: frozenset[str] | None) -> bool:
    """Whether a one-word name runs on into a word that, with it, makes a longer name the corpus
    writes capitalised ('Raspberry pi power', where other documents write 'Raspberry Pi')."""
    return (
        bool(seconds)
        and after is not None
        and text[last.end() : after.start()] == " "
        and after.group().lower() in seconds
    )


def _within_longer(text: str, toks: list[re.Match], i: int, name_follows: bool) -> bool:
    """Whether a one-word name is a word of a longer one: after a word written as a name
    ("Johnny's Selected Seeds"), or before another name ('ginger mint' is a mint)."""
    word = toks[i]
    before = toks[i - 1] if i > 0 else None
    after_name = (
        before is not None
        and word.group()[0].isupper()
        and text[before.end() : word.start()] == " "
        and _written_as_name(text, before)
    )
    compound = name_follows and text[word.end() : toks[i + 1].start()] == " "
    return after_name or compound


def is_name(title: str) -> bool:
    """Whether an entry title names a thing (a crop, a part) rather than asking or telling."""
    words = _WORD.findall(title)
    return (
        0 < len(words) <= MAX_NAME_WORDS
        and not _QUESTION.match(title)
        and not any(ch in title for ch in "?:!;")
        and len(" ".join(words)) >= 4
    )


def outline_of(entries: list[tuple[str, SourceDoc]]) -> list[tuple[str, str]]:
    """The headings a page of entries will have, in page order, as (heading, key): each entry's
    heading keyed by its document's path, then each section heading of that document keyed
    'path#anchor'. A superset of what is rendered, so an anchor called certain is certain; a
    heading with no text of its own under it is not shown on a home ('# Tools and seed containers'
    right above its '## Creating …'), so it is no place to link to."""
    out: list[tuple[str, str]] = []
    for heading, doc in entries:
        out.append((heading, doc.path))
        out += [
            (s.heading, f"{doc.path}#{s.anchor}")
            for s in doc.sections
            if s.heading and s.heading != doc.title and s.text.strip()
        ]
    return out


def outline_anchors(title: str, outline: list[tuple[str, str]]) -> dict[str, str]:
    """{key: anchor} for the headings of an outline whose slug occurs once on the page (with its
    title), so GitHub gives them the plain slug; other keys are left out and linked as the page."""
    counts = Counter(github_slug(h) for h, _ in outline)
    counts[github_slug(title)] += 1
    return {key: slug for h, key in outline if (slug := github_slug(h)) and counts[slug] == 1}


@dataclass
class Graph:
    names: Names
    links: dict[str, dict[tuple[str, ...], Target]] = field(default_factory=dict)  # page → name → target
    see_also: dict[str, tuple[str, ...]] = field(default_factory=dict)
    backlinks: dict[str, tuple[str, ...]] = field(default_factory=dict)


SHARED_SOURCE = 4  # pages quoting one source, up to which it relates each pair of them fully


def rank_see_also(
    pages: list[str],
    sources: dict[str, set[str]],
    subjects: dict[str, set[tuple[str, ...]]],
    linked: dict[str, set[str]],
    series: dict[str, str],
    families: dict[str, str] | None = None,
    limit: int = SEE_ALSO,
    akin: dict[str, set[str]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Up to ``limit`` related pages each, best first, that the page does not link already: a page
    linking to it scores 3, each shared source 1, each shared subject 1 (rarer subjects more),
    the next or previous part of the same series 2, a page on the same subject (``akin``) 2, a
    page of the same family (its group a sibling in the source's own structure) 1. A page that
    shares nothing with another is never listed."""
    families = families or {}
    akin = akin or {}
    holders: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for p in pages:
        for k in subjects.get(p, ()):
            holders[k].add(p)
    by_source: dict[str, set[str]] = defaultdict(set)
    for p in pages:
        for s in sources.get(p, ()):
            by_source[s].add(p)
    order = {p: i for i, p in enumerate(pages)}
    linking: dict[str, list[str]] = defaultdict(list)  # page → the pages that link to it
    for q, targets in linked.items():
        for t in targets:
            linking[t].append(q)
    mates: dict[str, list[str]] = defaultdict(list)  # series → its parts, in page order
    part: dict[str, int] = {}  # page → its place in its series
    for q in pages:
        if series.get(q):
            part[q] = len(mates[series[q]])
            mates[series[q]].append(q)
    kin: dict[str, list[str]] = defaultdict(list)  # family → its pages
    for q, fam in families.items():
        kin[fam].append(q)
    out = {}
    for p in pages:
        score: Counter = Counter()
        for q in linking.get(p, ()):
            score[q] += 3
        for s in sources.get(p, ()):
            share = by_source[s]
            for q in share:  # a source many pages quote relates them less ('Getting Started')
                score[q] += 1 if len(share) <= SHARED_SOURCE else Fraction(SHARED_SOURCE, len(share))
        for k in subjects.get(p, ()):
            share = holders[k]
            if len(share) <= 10:
                for q in share:  # exact: a float sum would depend on the order of the set
                    score[q] += Fraction(2, len(share))
        if series.get(p):
            i = part[p]
            for q in mates[series[p]][max(0, i - 1) : i + 2]:
                score[q] += 2
        if families.get(p):
            for q in kin[families[p]]:
                score[q] += 1
        for q in akin.get(p, ()):
            score[q] += 2
        for q in (p, *linked.get(p, ())):  # what its text links already is no 'see also'
            score.pop(q, None)
        ranked = sorted((q for q, s in score.items() if s >= 1), key=lambda q: (-score[q], order[q]))
        out[p] = tuple(ranked[:limit])
    return out


def backlinks(outgoing: dict[str, set[str]]) -> dict[str, tuple[str, ...]]:
    inbound: dict[str, set[str]] = defaultdict(set)
    for p, targets in outgoing.items():
        for t in targets:
            if t != p:
                inbound[t].add(p)
    return {p: tuple(sorted(inbound.get(p, ()))) for p in outgoing}


# -- the sources' own links ------------------------------------------------------------------------

# a Markdown link, not an image: '[Install FarmBot OS](../farmbot-os/intro.md)', '[Code 1](#code-1)'
_SOURCE_LINK = re.compile(r"(?<!!)\[([^\[\]]{1,80})\]\(([^()\s]+)\)")
_PAGE_SUFFIXES = (".md", ".html", ".htm")
# (its section's anchor, its text, the target's path, anchor, its sentence up to and with its text)
SourceLink = tuple[str, str, str, str, str]


def url_key(url: str) -> str:
    """A web address as a lookup key: host and path, in lower case, without a trailing slash or a
    page suffix ('https://x.org/v15/app/plants.md' and 'https://x.org/v15/app/plants/' are one)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for suffix in _PAGE_SUFFIXES:
        if path.lower().endswith(suffix):
            path = path[: -len(suffix)]
    return f"{parts.netloc}{path}".lower()


def source_links(docs: list[SourceDoc]) -> dict[str, tuple[SourceLink, ...]]:
    """Per layer-1 document, the links of its text that lead to another source (or to a section
    of one): a help center's 'see [here](../app/plants.md)' is read against the document's own
    ``url`` (and ``html_url``) and found among the other documents' ``url`` or ``html_url``; '[Code 1](#code-1)'
    leads to a section of the same document. Links that lead elsewhere are left as text."""
    by_url: dict[str, str] = {}
    for d in docs:
        for address in _addresses(d):
            by_url.setdefault(url_key(address), d.path)
    by_path = {d.path: d for d in docs}
    out: dict[str, tuple[SourceLink, ...]] = {}
    for d in docs:
        if "](" not in d.body:
            continue
        found: list[SourceLink] = []
        for section in d.sections:
            for m in _SOURCE_LINK.finditer(section.text):
                target = _target_of(m.group(2), d.path, _addresses(d), by_url)
                text = " ".join(plain_inline(m.group(1)).split())
                if target is None or not text:
                    continue
                path, fragment = target
                anchor = fragment if any(x.anchor == fragment for x in by_path[path].sections) else ""
                if (path, anchor) != (d.path, section.anchor):
                    found.append((section.anchor, text, path, anchor, _lead_up(section.text, m)))
        if found:
            out[d.path] = tuple(dict.fromkeys(found))
    return out


LEAD_UP = 40  # characters of a link's sentence, up to and with its text, that say where it stands
_MARKER = re.compile(r"^(?:[-*+>]|\d{1,3}[.)])\s+")  # a list item's or a quotation's mark


def _lead_up(text: str, link: re.Match) -> str:
    """The plain words of a link's sentence up to and with its text ('See the seeds'), at most
    ``LEAD_UP`` characters: where the sentence that holds the link is recognised on a page."""
    start = text.rfind("\n", 0, link.start()) + 1
    said = " ".join(plain_inline(text[start : link.start()] + link.group(1)).split())
    said = re.split(r"(?<=[.!?])\s+", _MARKER.sub("", said))[-1]
    return said[-LEAD_UP:]


def _addresses(doc: SourceDoc) -> list[str]:
    """A document's web addresses: where it was fetched from and where it is published."""
    return [v for name in ("url", "html_url") if isinstance(v := doc.meta.get(name), str) and "://" in v]


def _target_of(href: str, path: str, bases: list[str], by_url: dict[str, str]) -> tuple[str, str] | None:
    """(layer-1 path, fragment) a link of document ``path`` leads to, read against each of its
    web addresses (``bases``: a file fetched from a folder has its published address as well)."""
    if href.startswith("#"):
        return path, href[1:]
    for base in bases if "://" not in href else [""]:
        address, _, fragment = urljoin(base, href).partition("#")
        if found := by_url.get(url_key(address)):
            return found, fragment
    return None


# a section that sends the reader on to the next document: its first link is what comes next
NEXT = re.compile(r"^(?:what'?s next|what comes next|next steps?|next|up next|read next)\b", re.IGNORECASE)


def leads_on(doc: SourceDoc, linked: dict[str, tuple[SourceLink, ...]]) -> str | None:
    """The source a document's 'What's next?' section links to first (``source_links``), if any."""
    headings = {s.anchor: s.heading for s in doc.sections}
    return next(
        (
            to
            for anchor, _, to, _, _ in linked.get(doc.path, ())
            if to != doc.path and NEXT.match(headings.get(anchor, ""))
        ),
        None,
    )


def next_listed(doc: SourceDoc, linked: dict[str, tuple[SourceLink, ...]]) -> list[str]:
    """The sources a document's 'What's next?' section links to, in its order."""
    headings = {s.anchor: s.heading for s in doc.sections}
    found = [to for anchor, _, to, _, _ in linked.get(doc.path, ()) if NEXT.match(headings.get(anchor, ""))]
    return [to for to in dict.fromkeys(found) if to != doc.path]


def reading_order(members: list[SourceDoc], linked: dict[str, tuple[SourceLink, ...]]) -> list[SourceDoc]:
    """``members`` in the order their sources lead a reader on: a document whose 'What's next?'
    section links first to another member comes before it ('Assembly Prep' → 'Construct the
    Gantry' → 'Attach the Z-Axis' → 'Mount FarmBot to the Bed'), and the members it lists there
    come in its order; otherwise in the order they are given in. Documents whose links go round
    in a circle come after the others, from the first of them in that order."""
    place = {d.path: i for i, d in enumerate(members)}
    follows: dict[int, list[int]] = defaultdict(list)
    before = [0] * len(members)
    for i, d in enumerate(members):
        nxt = leads_on(d, linked)
        listed = [place[p] for p in next_listed(d, linked) if p in place]
        # a section's index lists its articles in order ('Configurator', 'Status LEDs', …): each
        # comes after the one listed before it
        pairs = ([(i, place[nxt])] if nxt in place else []) + (
            list(zip(listed, listed[1:])) if len(listed) > 1 else []
        )
        for a, b in pairs:
            follows[a].append(b)
            before[b] += 1
    ready = [i for i, n in enumerate(before) if n == 0]
    heapq.heapify(ready)
    done: list[int] = []
    left = set(range(len(members)))
    chain: list[int] = []  # what the document just placed leads on to, read next
    while left:
        if chain:
            i = chain.pop()
        elif ready:
            i = heapq.heappop(ready)
        else:
            i = min(left)  # a circle: the first of it in the given order
        if i not in left:
            continue
        left.discard(i)
        done.append(i)
        for j in follows[i]:
            before[j] -= 1
            if before[j] == 0 and j in left:
                chain.append(j)
    return [members[i] for i in done]
