"""Topic groups by subject: folders as the sources file them, corrected where a folder is no subject.

A source often files its records in folders (``section: v1.1/bom/drivetrain``). The folder is a
good first grouping, but not a title: 'docs' or 'intro' say where a page was filed, not what it is
about. So, for path-like group values:

- a document that introduces a sub-folder (its title is the folder's name, or spells out its
  initials: 'Drivetrain' for ``…/drivetrain``, 'Bill of Materials' for ``…/bom``) joins that
  folder and names it;
- a folder whose name is not a subject of its documents (fewer than half of them use the word)
  and that no document introduces joins its parent folder when there is one;
- a group is titled by its introducing document, else by its folder's name when that is a
  subject of its documents, else by its documents' titles.

A group too large for one page is split by the words its members' titles share ('Fasteners and
hardware: screws'), and only then into numbered parts. Every step is a pass over the groups or
their members: nothing is pairwise over documents.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from functools import cached_property

from ..core.markdown import STOPWORDS, github_slug, plain_inline, words
from ..core.models import SourceDoc
from ..core.words import listing
from .similarity import terms, vectors

_VERSION = re.compile(r"^v?\d+(?:[._]\d+)*$", re.IGNORECASE)
SUBJECT_SHARE = 0.5  # a word is a group's subject when at least this share of its members use it
LISTED = 3  # titles named in a title made of its members' titles
SPLIT_SLACK = 1.5  # a group is split only when it has this many times max_sources
FITS = 0.5  # a document joins another group when that group's titles and headings share half its title
SPLIT_MIN = 3  # a page split from a group by what its members' titles name has this many, at least


def segments(value: str) -> list[str]:
    """The folder names of a path-like value, version segments ('v1.1') left out."""
    return [p for p in value.split("/") if p and not _VERSION.match(p)]


def parent_of(value: str) -> str:
    return value.rpartition("/")[0]


def initials(title: str) -> str:
    return "".join(w[0] for w in words(title)).lower()


def introduces(doc: SourceDoc, folder: str) -> bool:
    """Whether ``doc`` is the page of the folder named ``folder`` (its last segment): its title is
    the folder's name ('Drivetrain' for 'drivetrain') or its initials ('Bill of Materials' for
    'bom')."""
    slug = github_slug(doc.title)
    return bool(folder) and (slug == folder or (len(folder) >= 3 and initials(doc.title) == folder))


def _uses(doc: SourceDoc, phrase: list[str]) -> bool:
    """Whether a document uses every word of ``phrase``, in any of its forms ('assembly',
    'assembled', 'assembling')."""
    text = f"{doc.title} {plain_inline(doc.body)}".lower()
    return all(re.search(rf"\b{re.escape(w[: max(4, len(w) - 2)])}", text) for w in phrase)


def is_subject(name: str, members: list[SourceDoc]) -> bool:
    """Whether the words of ``name`` ('pre-assembly', 'docs') are what most members talk about."""
    phrase = [w for w in words(name.replace("-", " ").replace("_", " ")) if w not in STOPWORDS]
    if not phrase or not members:
        return False
    return sum(1 for d in members if _uses(d, phrase)) >= SUBJECT_SHARE * len(members)


def folder_groups(
    groups: dict[str, list[SourceDoc]], cap: int, by_meaning: bool = True
) -> tuple[dict[str, list], dict[str, SourceDoc], set[str]]:
    """The groups of path-like values corrected by subject (see the module's notes), the document
    that introduces each folder, and the folders whose name is their documents' subject."""
    groups = {v: list(ds) for v, ds in groups.items()}
    children: dict[str, list[str]] = defaultdict(list)
    for v in groups:
        if "/" in v:
            children[parent_of(v)].append(v)
    intro: dict[str, SourceDoc] = {}
    for value in sorted(groups):
        for d in list(groups[value]):
            for child in sorted(children.get(value, ())):
                last = (segments(child) or [""])[-1]
                if child not in intro and introduces(d, last):
                    groups[value].remove(d)
                    groups[child].insert(0, d)
                    intro[child] = d
                    break
    for value in sorted(groups, key=lambda v: -v.count("/")):  # deepest first
        parent = parent_of(value)
        members = groups.get(value) or []
        last = (segments(value) or [""])[-1]
        if not members or value in intro or not segments(parent) or parent not in groups:
            continue  # a folder at the top (below a version) has no parent to join
        if is_subject(last, members):
            continue
        if len(groups[parent]) + len(members) <= cap:
            groups[parent] += members
            groups[value] = []
    groups = {v: ds for v, ds in groups.items() if ds}
    loose = {
        v for v, ds in groups.items() if "/" in v and v not in intro and not is_subject(segments(v)[-1], ds)
    }
    targets = {v: ds for v, ds in groups.items() if v not in loose}
    subjects = {v for v in targets if "/" in v and v not in intro}
    index = Profiles(targets, by_meaning) if loose and targets else None
    for value in sorted(loose):  # what is left of folders that are no subject: by subject, one by one
        for d in list(groups[value]):
            home = index.best(d) if index is not None else None
            groups[value].remove(d)
            groups.setdefault(home or f"{value}/{github_slug(d.title)}", []).append(d)
            if home is None:
                intro[f"{value}/{github_slug(d.title)}"] = d  # a page of its own, titled by itself
    return {v: ds for v, ds in groups.items() if ds}, intro, subjects


def _profile(doc: SourceDoc) -> str:
    return " ".join([doc.title, *(s.heading for s in doc.sections if s.heading)])


class Profiles:
    """The groups a loose document may join, each known by its members' titles and headings:
    indexed once by word, so finding a document's group reads only the groups that share a word
    of its title (never every pair of documents)."""

    def __init__(self, groups: dict[str, list[SourceDoc]], by_meaning: bool = True):
        self.values = sorted(groups)
        self.texts = [" ".join(_profile(d) for d in groups[v]) for v in self.values]
        self.held = [terms(t) for t in self.texts]
        self.by_word: dict[str, list[int]] = defaultdict(list)
        for i, held in enumerate(self.held):
            for t in held:
                self.by_word[t].append(i)
        self.by_meaning = by_meaning

    def best(self, doc: SourceDoc) -> str | None:
        """The group whose titles and headings share most of ``doc``'s title (rarer words weigh
        more; meaning breaks ties where an embedding is installed), or None when none shares
        ``FITS`` of its weight and two of its words: one word in common ('Seeds' and 'Seed
        Trough') is no shared subject."""
        wanted = terms(doc.title)
        n = len(self.values)
        weight = {t: math.log(1 + n / (1 + len(self.by_word.get(t, ())))) for t in wanted}
        total = sum(weight.values())
        found = {i for t in wanted for i in self.by_word.get(t, ())}
        shared = {i: sum(weight[t] for t in wanted & self.held[i]) / total for i in found if total}
        fitting = [i for i in found if shared[i] >= FITS and len(wanted & self.held[i]) >= 2]
        if not fitting:
            return None
        near = self._meaning(doc, fitting)
        return self.values[max(fitting, key=lambda i: (shared[i] + 0.5 * near.get(i, 0.0), -i))]

    @cached_property
    def rows(self):
        return vectors(self.texts) if self.by_meaning else None

    def _meaning(self, doc: SourceDoc, among: list[int]) -> dict[int, float]:
        if len(among) < 2 or self.rows is None:
            return {}  # nothing to break a tie between
        mine = vectors([_profile(doc)])
        return {i: float(self.rows[i] @ mine[0]) for i in among} if mine is not None else {}


def listed_title(members: list[SourceDoc]) -> str:
    """A title made of the members' titles: 'Getting Started, Demo the App and Intro to FarmBot's
    Software', or the first ones and how many more."""
    titles = [" ".join(d.title.split()) for d in members]
    return listing(titles, LISTED)


def _head(title: str) -> str:
    """The noun a title ends on, singular and lower-cased ('M3 x 12mm Screws' → 'screw')."""
    found = re.findall(r"[A-Za-z][A-Za-z-]{2,}", title)
    return found[-1].lower().removesuffix("s") if found else ""


_UNCOUNTED = ("ance", "ence", "ing", "ware")  # endings of words with no plural: maintenance, wiring, software


def _common_tail(titles: list[str]) -> str:
    """The words every title ends with, as the first writes them ('Nut Bar' of '10mm Nut Bar' and
    '20mm Nut Bar')."""
    split = [t.split() for t in titles]
    n = 0
    while all(len(w) > n and w[-1 - n].lower() == split[0][-1 - n].lower() for w in split):
        n += 1
    return " ".join(split[0][len(split[0]) - n :]) if n else ""


def split_by_subject(title: str, members: list[SourceDoc], limit: int) -> list[tuple[str, list[SourceDoc]]]:
    """A group of more than ``limit`` × ``SPLIT_SLACK`` members in pages by the thing their titles
    name ('Fasteners and Hardware: screws', '…: nut bars'), each of ``SPLIT_MIN`` members or more;
    what names nothing shared stays under the group's own title. A single page when the group is
    small enough."""
    if len(members) <= limit * SPLIT_SLACK:
        return [(title, members)]
    own = {w.lower().removesuffix("s") for w in words(title)}
    by_head: dict[str, list[SourceDoc]] = defaultdict(list)
    for d in members:
        by_head[_head(d.title)].append(d)
    out = []
    rest: list[SourceDoc] = []
    for head, docs in sorted(by_head.items()):
        if not head or head in own or head in STOPWORDS or len(docs) < SPLIT_MIN or len(docs) == len(members):
            rest += docs
            continue
        tail = _common_tail([d.title for d in docs]) or head
        name = tail if tail.isupper() else tail.lower()
        out.append((f"{title}: {name}{'' if name.endswith(('s', *_UNCOUNTED)) else 's'}", docs))
    if rest:
        out.insert(0, (title, sorted(rest, key=lambda d: (d.title.lower(), d.path))))
    return out
