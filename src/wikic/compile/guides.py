"""Guides: the source material that fits a guide's purpose, chosen whole and put in task order.

A guide composes. It is made of whole source sections (a procedure keeps every step, a section
every list item and table row), chosen by how well they fit the guide: their words (BM25 over the
section and over its whole document), the words of their titles and headings, and their meaning
where an embedding is installed (``similarity``). A section that fits well brings along:

- its sub-sections that also fit (a FAQ's 'Before you leave' under its question), and all of
  them when it is a step ('Step 3' with its 'Genesis kits' and 'Express kits');
- the other steps of its procedure ('Step 1' … 'Step 4' of one document), when most of them fit.

Sections are then ordered as a task is done: prepare → do → check → fix, known by the words of
their headings (then of their document's title); a procedure stays in its own order. Sections
whose statements a newer source changed (``timeline``) are left out when that is most of them.

Where two or more devices state a quantity the guide is about (a field such as a tank's
capacity, a list item per device such as refill intervals, a sentence of a device's own spec
page naming the guide's subject such as vacation mode), ``entity_table`` gathers it, one row per
device, every cell quoted and cited.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from ..core.bm25 import counted, tokens
from ..core.facts import field_label, filed_under, for_staff
from ..core.markdown import STOPWORDS, plain_inline, words
from ..core.models import SourceDoc
from ..core.pool import Jobs, each
from ..core.words import FIRST_PERSON
from . import versions
from .citations import stem
from .gather import filed_facet, words_facet
from .librarian.extract import device_facts, points_ahead, prose_units, section_content
from .links import NEXT, item_keys, key_of
from .schema import Guide
from .similarity import lexical_counted, saying, section_texts, semantic, terms
from .timeline import Timeline, quantities

STEP = re.compile(r"^\s*(?:step|part|stage|option|method)\s*\d+\b|^\s*\d+\s*[.):]\s*\S", re.IGNORECASE)
PHASES = ("prepare", "do", "check", "fix")
# a guide to fixing problems is its problems (checks and fixes alike: 'Checking' over one problem
# and 'If something goes wrong' over the next told a reader nothing); what it quotes of doing
# things is background
FIXING = ("prepare", "check", "fix", "know")
PHASE_TITLES = {
    "prepare": "Before you start",
    "do": "What to do",
    "check": "Checking",
    "fix": "If something goes wrong",
    "problems": "Problems and fixes",
    "know": "Good to know",
}
_CUES = {
    "fix": """troubleshoot troubleshooting problem problems fix fixing error errors issue issues fail
        fails failed failure broken reset resetting wrong disconnect disconnects disconnected offline
        solve solving diagnose diagnosis diagnosing cannot won't doesn't isn't not why""",
    "prepare": """before prepare preparing preparation prerequisite prerequisites requirement
        requirements checklist planning prep gather safety leave leaving away""",
    "check": """check checking verify verifying confirm confirming test testing tests status monitor
        monitoring alert alerts indicator indicators led leds inspect inspecting inspection""",
}
CUES = {phase: frozenset(text.split()) for phase, text in _CUES.items()}

FIT = 0.4  # a section fits when it scores at least this share of the best section's score
REDUNDANCY = 0.5  # how much a unit's overlap with what is chosen counts against it
NOVELTY = 0.3  # how much bringing the guide's query words first counts for it
DOC_FIT = 0.6  # a procedure whose document fits this well is quoted whole
CHECKLIST = 6  # sections beside one another, at most, that a document fitting the guide gives whole
PROCEDURE = 0.15  # the bonus of a procedure most of whose steps fit the guide
PER_DEVICE = 0.2  # the bonus of a section that states something for each device, item by item
RERANK = 400  # sections reranked by meaning, the best by words
OPTIONS = 300  # units weighed for a guide, the best-fitting first
SENTENCES = 120  # a guide quotes about this many sentences and list items, at most
PER_DOC = 3  # sections chosen on their own per document (steps and sub-sections aside)
OUTDATED = 0.5  # a section whose statements are mostly outdated is left out
TITLED = 0.5  # a section whose own heading fits this well is what its document's title names
TEMPLATE = 5  # a heading of this many documents or more is a template's, not a subject
ASIDE = 0.5  # how much less the other sections of such a document fit (not steps, not under it)


@dataclass
class Candidate:
    doc: SourceDoc
    index: int  # the section's position in its document
    score: float = 0.0
    heading_fit: float = 0.0
    per_device: bool = False  # holds a list item or table row for each of two devices or more
    doc_fit: float = 0.0  # how well its whole document fits the guide


@dataclass
class GuidePlan:
    sections: list[tuple[str, str]] = field(default_factory=list)  # (path, anchor), in page order
    phases: list[str] = field(default_factory=list)  # the phase of each section
    table: dict | None = None  # the cross-device table, see ``entity_table``
    table_sources: list[str] = field(default_factory=list)
    only: dict[str, list[str]] = field(default_factory=dict)  # 'path#anchor' → the steps quoted of it


def phase_of(heading: str, title: str) -> str:
    """The task phase a section belongs to, by the words of its heading, else of its document's
    title (and categories): 'Before you leave' → prepare, 'Check the belts' → check, 'Perform a
    hard reset' → fix."""
    for text in (heading, title):
        found = set(words(text))
        found |= {w[:-1] for w in found if w.endswith("s")}
        for phase in ("fix", "prepare", "check"):
            if found & CUES[phase]:
                return phase
    return "do"


def _quotable(doc: SourceDoc, i: int) -> bool:
    s = doc.sections[i]
    if not s.text.strip() or NEXT.match(s.heading):  # 'What's next?': where the source goes on, no step
        return False
    said = [t for _, t in prose_units(s.text) if not points_ahead(t)]  # not 'In the following sections …'
    if 2 * sum(1 for t in said if FIRST_PERSON.search(t)) > len(said):  # 'I started with a Sprout 3 …'
        return False  # a writer's story, no step of a task (its topic page keeps it)
    return bool(said) or any(b.kind == "table" for b in section_content(doc, s))


def _outdated(doc: SourceDoc, i: int, timeline: Timeline | None) -> bool:
    stale = (timeline.outdated.get(doc.path) or {}) if timeline is not None else {}
    if not stale:
        return False
    said = [t for _, t in prose_units(doc.sections[i].text)]
    gone = sum(1 for t in said if " ".join(plain_inline(t).split()) in stale)
    return bool(said) and gone / len(said) >= OUTDATED


def quotable_sections(
    docs: list[SourceDoc], superseded: dict[str, str], jobs: int = 1
) -> list[tuple[SourceDoc, int]]:
    """The current sections of ``docs`` that have something to quote, as (document, index): found
    once for all the guides of a plan (in ``jobs`` processes)."""
    current = [d for d in docs if d.path not in superseded]

    def quotable(d: SourceDoc) -> list[int]:
        return [
            i
            for i, s in enumerate(d.sections)
            if not versions.is_superseded(d.path, s.anchor, superseded) and _quotable(d, i)
        ]

    return [(d, i) for d, found in zip(current, each(quotable, current, jobs), strict=True) for i in found]


def candidates(guide: Guide, quotable: list[tuple[SourceDoc, int]]) -> list[Candidate]:
    wanted = [(d, i) for d, i in quotable if not guide.sources or d.source in guide.sources]
    staff = {d.path: for_staff(d) for d, _ in wanted}  # per document, asked once for all its sections
    return [Candidate(d, i) for d, i in wanted if not staff[d.path]]


class Counted:
    """The texts the guides score by words, read once per plan however many guides score them:
    each section under its own headings and each whole document, as its length and its counts
    of the words any of ``guides`` is asked by (``bm25.counted``); ``docs``: the documents
    counted so already, by path (``corpus.Corpus.counted``)."""

    def __init__(self, guides: list[Guide], docs: dict[str, tuple[int, dict[str, int]]] | None = None):
        self.wanted = asked_words(guides)
        self.sections: dict[tuple[str, int], tuple[int, dict[str, int]]] = {}
        self.docs: dict[str, tuple[int, dict[str, int]]] = dict(docs or {})

    def section(self, doc: SourceDoc, i: int) -> tuple[int, dict[str, int]]:
        if (doc.path, i) not in self.sections:
            self.sections[doc.path, i] = counted(_section_text(doc, i), self.wanted)
        return self.sections[doc.path, i]

    def doc(self, doc: SourceDoc) -> tuple[int, dict[str, int]]:
        if doc.path not in self.docs:
            self.docs[doc.path] = counted(_whole_text(doc), self.wanted)
        return self.docs[doc.path]

    def read_all(self, quotable: list[tuple[SourceDoc, int]], jobs: Jobs = 1) -> None:
        """Read every quotable section and its document now, in ``jobs`` processes (before guides
        are planned in processes forked from this one, which then share what was read)."""
        wanted = self.wanted
        docs = [d for d in {d.path: d for d, _ in quotable}.values() if d.path not in self.docs]
        sections = each(lambda di: counted(_section_text(*di), wanted), quotable, jobs)
        self.sections.update(zip(((d.path, i) for d, i in quotable), sections, strict=True))
        whole = each(lambda d: counted(_whole_text(d), wanted), docs, jobs)
        self.docs.update(zip((d.path for d in docs), whole, strict=True))


def _section_text(doc: SourceDoc, i: int) -> str:
    """A section's text as a guide reads it by words: under its own headings."""
    return f"{_own_headings(doc, i)} {doc.sections[i].text}"


def _whole_text(doc: SourceDoc) -> str:
    return f"{doc.title} {doc.body}"


def _own_headings(doc: SourceDoc, i: int) -> str:
    """The headings over a section, itself included, but its document's title."""
    return " ".join(h for h in doc.sections[i].path if h != doc.title)


def asked_words(guides: list[Guide]) -> frozenset[str]:
    """The words any of ``guides`` is asked by (the tokens texts are counted for)."""
    return frozenset(t for g in guides for t in tokens(asked(g)))


def asked(guide: Guide) -> str:
    """What a guide is asked by: its title, purpose and query."""
    return f"{guide.title} {guide.purpose} {guide.query}"


def score(guide: Guide, pool: list[Candidate], by_meaning: bool = True, read: Counted | None = None) -> None:
    """Each candidate's fit to the guide, in [0, 1]: the words of its section (BM25 for the
    guide's title, purpose and query), of its whole document, of its own headings and, at half
    weight, of its document's title and what it is filed under (its category, tags: rarer words
    weigh more; two of the guide's words in a heading are a full match), and its meaning where an
    embedding is installed."""
    query = asked(guide)
    if read is None or not set(tokens(query)) <= read.wanted:  # counted for other guides' words
        read = Counted([guide])
    wanted = terms(f"{guide.title} {guide.query}")
    own = [_own_headings(c.doc, c.index) for c in pool]
    asked_in = _asked_in(wanted)
    # in how many sections' titles and headings each of the guide's words is (no other word's
    # rarity is asked): each title and heading read once however many sections share it
    df = Counter(t for c, h in zip(pool, own, strict=True) for t in asked_in(c.doc.title) | asked_in(h))
    n = len(pool)

    def rarity(t: str) -> float:
        return math.log(1 + n / (1 + df.get(t, 0)))

    full = 2 * sum(rarity(t) for t in wanted) / max(1, len(wanted))  # two average words

    def fit(text: str) -> float:
        return min(1.0, sum(rarity(t) for t in asked_in(text)) / full) if full else 0.0

    by_section = lexical_counted(query, [read.section(c.doc, c.index) for c in pool])
    docs = list({c.doc.path: c.doc for c in pool}.values())
    by_doc = dict(
        zip((d.path for d in docs), lexical_counted(query, [read.doc(d) for d in docs]), strict=True)
    )
    # a heading many documents share is a template's ('Common problems' of every plant entry):
    # it says what kind of section it is, not what it is about
    shared = Counter(
        h.lower() for h in dict((c.doc.path + "\0" + h, h) for c, h in zip(pool, own, strict=True)).values()
    )
    own_fit = [0.0 if shared[h.lower()] >= TEMPLATE else fit(h) for h in own]
    # a document's title lends its fit to its sections, unless one of them is headed by the
    # guide's subject: then the title named that one ('… 21-day vacation mode, household sharing
    # and a new plant library' lends nothing to 'A new plant library')
    subjects: dict[str, set[str]] = {}  # per document, the anchors of the sections headed by the subject
    for c, f in zip(pool, own_fit, strict=True):
        if f >= TITLED:
            subjects.setdefault(c.doc.path, set()).add(c.doc.sections[c.index].anchor)
    headed = set(subjects)
    lends: dict[str, float] = {}  # per document, what its title and filing lend its sections
    for i, c in enumerate(pool):
        if c.doc.path not in headed and c.doc.path not in lends:
            lends[c.doc.path] = 0.5 * fit(f"{c.doc.title} {filed_under(c.doc)}")
        lent = lends.get(c.doc.path, 0.0)
        c.heading_fit = max(own_fit[i], lent)
        c.doc_fit = by_doc[c.doc.path]
        c.score = (0.6 * by_section[i] + 0.4 * c.heading_fit) * (0.6 + 0.4 * by_doc[c.doc.path])
        if c.doc.path in headed and not _under_subject(c, subjects[c.doc.path]):
            c.score *= ASIDE  # a sibling of the section about the subject is about something else
    # meaning reranks the sections words found: the best by words, not the whole corpus
    ranked = sorted(range(len(pool)), key=lambda i: (-pool[i].score, i))[:RERANK]
    embedded: dict[str, dict[str, str]] = {}  # what the search index embeds, per document
    for i in ranked if by_meaning else ():
        if pool[i].doc.path not in embedded:
            embedded[pool[i].doc.path] = section_texts(pool[i].doc)
    texts = [
        embedded[pool[i].doc.path].get(pool[i].doc.sections[pool[i].index].anchor)
        or f"{pool[i].doc.title}\n{_section_text(pool[i].doc, pool[i].index)}"
        for i in (ranked if by_meaning else ())
    ]
    meaning = semantic(query, texts, by_meaning, kind="source")
    for c in pool if meaning is not None else ():
        c.score *= 0.8  # the sections meaning did not rerank are those far down by words anyway
    for n, i in enumerate(ranked if meaning is not None else ()):
        pool[i].score += 0.2 * meaning[n]
    for c in pool:
        c.score += PER_DEVICE * c.per_device


def _asked_in(wanted: set[str]) -> Callable[[str], set[str]]:
    """The words of ``wanted`` a text has (``terms``), worked out once per distinct text."""
    found: dict[str, set[str]] = {}

    def asked_in(text: str) -> set[str]:
        if text not in found:
            found[text] = terms(text) & wanted
        return found[text]

    return asked_in


def task_of(guide: Guide) -> str | None:
    """The facet a guide's title and purpose name: the task it is for ('Maintenance'), if any."""
    return words_facet(f"{guide.title} {guide.purpose}")


ELSEWHERE = 0.6  # how much less a section fits when its document is filed under another task
TASKS = frozenset({"Set-up", "Maintenance", "Specifications"})  # the filings that say which task


def elsewhere(guide: Guide, pool: list[Candidate]) -> None:
    """Lower the fit of the sections whose document its source files under another task than the
    guide's (``gather.filed_facet``): a maintenance guide's words ('belts', 'screws') are an
    assembly's too, but 'Secure the belts' of 'Mount FarmBot to the Bed' (filed under
    'v1.1/assembly') is a build step; 'Storing FarmBot for Winter' ('v1.1/extras/maintenance') is
    no getting started. Troubleshooting is no such task: a fix is filed under what it fixes."""
    task = task_of(guide)
    if task not in TASKS:
        return
    facets: dict[str, str | None] = {}  # per document, read once for all its sections
    for c in pool:
        if c.doc.path not in facets:
            facets[c.doc.path] = filed_facet(c.doc)
        filed = facets[c.doc.path]
        if filed in TASKS and filed != task:
            c.score *= ELSEWHERE


def _under_subject(c: Candidate, headed: set[str]) -> bool:
    """Whether ``c`` is headed by the guide's subject (its document's sections so headed have the
    anchors ``headed``), is a step, or sits under a section that is ('Before you leave' under
    'Vacation mode')."""
    section = c.doc.sections[c.index]
    if STEP.match(section.heading):
        return True
    return section.anchor in headed or any(
        x.anchor in headed and section.path[: len(x.path)] == x.path
        for x in c.doc.sections
        if x.level < section.level
    )


def _subsections(doc: SourceDoc, i: int) -> list[int]:
    """The sections under section ``i`` (deeper headings until one of its level or higher)."""
    level = doc.sections[i].level
    out = []
    for j in range(i + 1, len(doc.sections)):
        if doc.sections[j].level <= level:
            break
        out.append(j)
    return out


def _above(doc: SourceDoc, i: int) -> list[int]:
    """The sections section ``i`` sits under, outermost first: its document's opening (the text
    under its title) and each heading above it ('Step 1: Add plants to your map' over 'Select
    crops')."""
    out, level = [], doc.sections[i].level
    for j in range(i - 1, -1, -1):
        if doc.sections[j].level < level:
            out.append(j)
            level = doc.sections[j].level
    return out[::-1]


CONTEXT = 5  # sentences and items, at most, of a section quoted above a chosen one to frame it


def with_context(
    units: list[list[Candidate]], pool: list[Candidate], timeline: Timeline | None
) -> list[list[Candidate]]:
    """Each unit with the short sections it sits under that no unit quotes yet: a sub-section
    quoted without its document's opening lost the answer it qualifies ('… the limit stays at 14
    days' opens the FAQ whose 'Before you leave' a holiday guide quotes). A document's opening
    frames its sections when its title asks what the opening answers; a post's opening is its
    preamble ('… is available today'), not the guide's business."""
    at = {(c.doc.path, c.index): c for c in pool}
    seen = {(c.doc.path, c.index) for unit in units for c in unit}
    out = []
    for unit in units:
        doc, first = unit[0].doc, min(c.index for c in unit)
        above = [
            at.get(key) or Candidate(doc, j)
            for j in dict.fromkeys([0, *_above(doc, first)] if first > 0 else [])
            if (key := (doc.path, j)) not in seen
            and (key in at or (j > 0 and not doc.sections[j].text.strip()))  # 'Step 1' over its parts
            and _frames(doc, j)
            and not _outdated(doc, j, timeline)
        ]
        seen.update((c.doc.path, c.index) for c in above)
        out.append(unit + above)  # the unit's own first section still decides its phase
    return out


POINTER = 3  # sentences at most of a unit that only sends the reader to a procedure


def with_pointed(
    units: list[list[Candidate]], pool: list[Candidate], pointing: dict[str, set[str]]
) -> list[list[Candidate]]:
    """The units and, for a short step of a procedure among them that sends the reader to another
    document's procedure by a link ('Step 8: … follow our FarmBot OS installation instructions'),
    that procedure, every step of it, when it is guide material (in ``pool``) and not quoted yet:
    a guide is read on its own, and the getting-started guide flashed the card with a pointer.
    ``pointing``: 'path#anchor' of a section → the documents its links lead to."""
    taken = {(c.doc.path, c.index) for u in units for c in u}
    by_doc: dict[str, list[Candidate]] = defaultdict(list)
    for c in pool:
        by_doc[c.doc.path].append(c)
    out = list(units)
    for unit in (u for u in units if _procedure(u)):  # a step it delegates, not a tip's 'see here'
        for c in unit:
            section = c.doc.sections[c.index]
            if len(prose_units(section.text)) > POINTER:
                continue
            for path in sorted(pointing.get(f"{c.doc.path}#{section.anchor}", ())):
                steps = sorted(
                    (x for x in by_doc.get(path, ()) if (path, x.index) not in taken), key=lambda x: x.index
                )
                if path != c.doc.path and _procedure(steps):
                    out.append(steps)
                    taken.update((path, x.index) for x in steps)
    return out


def with_named(units: list[list[Candidate]], pool: list[Candidate]) -> list[list[Candidate]]:
    """The units and the sections of their own documents that they send the reader to by name
    ('1. Bring your device into "isolated mode" …' → 'Use "Isolated Mode" to find problem
    sources'; '… perform a hard reset' → 'Perform a hard reset'), with the sections under them,
    when guide material (in ``pool``) no unit quotes yet: the connection guide told the reader to
    do two things it never explained (review N)."""
    taken = {(c.doc.path, c.index) for u in units for c in u}
    at = {(c.doc.path, c.index): c for c in pool}
    out = list(units)
    for unit in out:  # what it brings may name another in turn ('Perform a hard reset' of isolated mode)
        doc = unit[0].doc
        said = " ".join(plain_inline(doc.sections[c.index].text) for c in unit).lower()
        for j, section in enumerate(doc.sections):
            phrase = _named_as(section.heading)
            if (doc.path, j) in taken or (doc.path, j) not in at or not phrase:
                continue
            if not re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", said):  # 'code 1' is no 'code 12'
                continue
            found = [at.get((doc.path, k)) or Candidate(doc, k) for k in (j, *_subsections(doc, j))]
            found = [c for c in found if (doc.path, c.index) not in taken]
            out.append(found)
            taken.update((doc.path, c.index) for c in found)
    return out


def _named_as(heading: str) -> str | None:
    """What a reader is told to do by a section's heading, as a sentence would name it: its quoted
    words ('Use "Isolated Mode" to …' → 'isolated mode'), else the heading less its verb and
    article ('Perform a hard reset' → 'hard reset'); None for a name of one word."""
    quoted = re.search(r'"([^"]+)"|“([^”]+)”', heading)
    said = (quoted[1] or quoted[2]).split() if quoted else plain_inline(heading).split()
    if not quoted and said and said[0].lower() in INSTRUCTIONS:
        said = said[1:]
    if said and said[0].lower() in ("a", "an", "the"):
        said = said[1:]
    return " ".join(said).lower() if len(said) >= 2 else None


def without_pointers(units: list[list[Candidate]]) -> list[list[Candidate]]:
    """The units less the short ones that name a procedure the guide quotes whole: 'follow our
    FarmBot OS installation instructions … then reinsert the card' after FarmBot OS's own steps
    only sends the reader to what is already there."""
    procedures = [u for u in units if _procedure(u)]

    def pointer(unit: list[Candidate]) -> bool:
        said = [kind for c in unit for kind, _ in prose_units(c.doc.sections[c.index].text)]
        short = len(said) <= POINTER and "bullet" not in said  # a list is matter of its own
        return short and any(_refers(unit, p) for p in procedures if p is not unit)

    return [u for u in units if u in procedures or not pointer(u)]


RESTATED = 0.8  # the share of a unit's sentences another document's unit already says: left out
SAME_WORDS = 0.6  # of a sentence's words another sentence has, with all of its numbers: it says it again


def without_restatements(units: list[list[Candidate]]) -> list[list[Candidate]]:
    """The units less those that say again, sentence for sentence, what the units of other documents
    say: the app 5.0 release post beside the app 5.0 FAQ (the same 21 days, pump cycle and daily
    summary) is the same answer twice. Of two units that say each other, the later stays. The
    topic pages keep both."""
    said = [[saying(t) for c in unit for _, t in prose_units(c.doc.sections[c.index].text)] for unit in units]
    gone: set[int] = set()
    for i, unit in enumerate(units):
        path = unit[0].doc.path
        others = [s for j, u in enumerate(units) if j not in gone and u[0].doc.path != path for s in said[j]]
        if said[i] and _restates(said[i], others):
            gone.add(i)
    return [u for i, u in enumerate(units) if i not in gone]


def sayings(doc: SourceDoc) -> list[tuple[set[str], set[str]]]:
    """``saying`` of every quotable unit of ``doc``."""
    return [saying(t) for section in doc.sections for _, t in prose_units(section.text)]


def restated(text: str, said: list[tuple[set[str], set[str]]]) -> bool:
    """Whether the sentence ``text`` says again what one of ``said`` (``sayings``) says."""
    return _restates([saying(text)], said)


def _subject(heading: str) -> frozenset[str]:
    """What a heading is about: its words less an instruction ('Perform a hard reset' → hard, reset)."""
    return frozenset(terms(heading) - _DOING)


def without_namesakes(units: list[list[Candidate]]) -> list[list[Candidate]]:
    """The units (best first) less a section headed by the subject of a section chosen before it:
    'Hard reset' of the app's controls after the troubleshooting guide's 'Perform a hard reset' is
    the same advice a third time. A procedure's steps are no subject of their own."""
    seen: set[frozenset[str]] = set()
    out = []
    for unit in units:
        head = unit[0].doc.sections[unit[0].index].heading
        subject = frozenset() if STEP.match(head) else _subject(head)
        if subject and subject in seen:
            continue
        seen.add(subject)
        out.append(unit)
    return out


def _restates(mine: list[tuple[set[str], set[str]]], theirs: list[tuple[set[str], set[str]]]) -> bool:
    """Whether ``RESTATED`` of ``mine`` (each sentence's words and numbers) are sentences of
    ``theirs`` again: one has ``SAME_WORDS`` of its words and every number it gives."""
    again = sum(
        1
        for words, nums in mine
        if any(len(words & w) >= SAME_WORDS * len(words) and nums <= n for w, n in theirs)
    )
    return again >= RESTATED * len(mine)


def _frames(doc: SourceDoc, j: int) -> bool:
    """Whether section ``j`` above a chosen one is short framing to quote with it: a heading, or a
    few sentences; a document's opening only when its title asks what the opening answers, when
    it lists what to have first ('make sure you have completed the following prerequisites:' and
    its list) or when it opens on what the procedure requires ('Configuration requires a
    verified web app account'), not a post's preamble nor a list of the document's own
    sections ('three main considerations: 1. Plant size and shape …', of which the guide may
    quote one)."""
    said = [kind for kind, _ in prose_units(doc.sections[j].text)]
    if j > 0 and doc.sections[j].level > 1:
        return len(said) <= CONTEXT
    if doc.title.rstrip().endswith("?"):
        return len(said) <= CONTEXT
    if j > 0 and not said:
        return True
    if _REQUIRES.search(" ".join(t for _, t in prose_units(doc.sections[j].text)[:2])):
        return len(said) <= 3 * CONTEXT  # 'Configuration requires a verified web app account …'
    contents = _items_of(doc.sections[j].text) & {key_of(s.heading) for s in doc.sections}
    return "bullet" in said and said.count("para") <= CONTEXT and not contents  # its list is no contents


# an opening that says what the reader needs first: the procedure's prerequisites
_REQUIRES = re.compile(
    r"\b(?:requires?|required|must have|you (?:will )?need|prerequisites?|before (?:starting|you begin|beginning))\b",
    re.IGNORECASE,
)


def _steps(doc: SourceDoc, i: int) -> list[int]:
    """The step sections of the procedure section ``i`` belongs to ('Step 1' … 'Step 4' at one
    heading level, in one run), or [] when it is no step."""
    s = doc.sections[i]
    if not STEP.match(s.heading):
        return []
    same = [j for j, x in enumerate(doc.sections) if x.level == s.level and x.path[:-1] == s.path[:-1]]
    run: list[int] = []
    for j in same:
        if STEP.match(doc.sections[j].heading):
            run.append(j)
        elif j < i:
            run = []
        else:
            break
    return run


def _checklist(doc: SourceDoc, i: int, at: dict) -> list[int]:
    """The sections beside section ``i`` under the same heading, at its level, itself among them,
    when they are a checklist: two to ``CHECKLIST`` quotable sections (in ``at``), each headed by
    an instruction ('Keep FarmBot clean', 'Tighten loose screws', 'Inspect for damage'); else []."""
    s = doc.sections[i]
    same = [
        j
        for j, x in enumerate(doc.sections)
        if x.level == s.level and x.path[:-1] == s.path[:-1] and (doc.path, j) in at
    ]
    heads = [words(doc.sections[j].heading)[:1] for j in same]
    listed = 2 <= len(same) <= CHECKLIST and all(h and h[0] in INSTRUCTIONS for h in heads)
    return same if listed else []


def _unit(c: Candidate, at: dict, best: float) -> list[Candidate]:
    """The sections shown with ``c``: the whole procedure when ``c`` is a step of one that fits (a
    third of its steps fit, or its document as a whole does), every section beside it when its
    document fits as a whole (a checklist is quoted whole, as a procedure is), and the
    sub-sections that fit too (all of a step's or a checklist's)."""
    steps = _steps(c.doc, c.index)
    fitting = [j for j in steps if (c.doc.path, j) in at and at[(c.doc.path, j)].score >= FIT * best]
    whole = len(fitting) * 3 >= len(steps) or c.doc_fit >= DOC_FIT
    if not steps and c.doc_fit >= DOC_FIT:
        steps = _checklist(c.doc, c.index, at)
    heads = steps if steps and whole else [c.index]
    members: list[int] = []
    for j in heads:
        members.append(j)
        for k in _subsections(c.doc, j):
            sub = at.get((c.doc.path, k))
            if sub is not None and (steps or sub.score >= FIT * best):
                members.append(k)
    if members == [c.index]:
        members = _led_into(c, at)
    return _sections(c.doc, members, at)


def _sections(doc: SourceDoc, members: list[int], at: dict) -> list[Candidate]:
    """The candidates of a document's sections ``members`` (in ``at``), in order, with the empty
    headings that group them under the first ('Hot weather management' over 'Provide shade')."""
    if not members:
        return []
    heads = {
        k for j in members for k in _above(doc, j) if k > members[0] and not doc.sections[k].text.strip()
    }
    return [
        at.get((doc.path, j)) or Candidate(doc, j)
        for j in sorted(set(members) | heads, key=lambda j: (j != members[0], j))
        if (doc.path, j) in at or j in heads
    ]


INTRO = 3  # sentences at most of a section that only introduces the sections under it
LED_INTO = 40  # sentences and items, at most, of those sections that a guide quotes with it


def _led_into(c: Candidate, at: dict) -> list[int]:
    """Section ``c`` alone, or, when it is a short introduction to the sections under it (a
    document's opening before its other sections, a heading's text before its sub-sections),
    with them, when they are few enough to quote; else nothing. 'FarmBot has been designed to
    operate in challenging environments …' alone promised a guide's reader the thermal care it
    left out."""
    doc, i = c.doc, c.index
    under = [
        j for j in (range(1, len(doc.sections)) if i == 0 else _subsections(doc, i)) if (doc.path, j) in at
    ]
    if not under or len(prose_units(doc.sections[i].text)) > INTRO:
        return [i]
    if sum(len(prose_units(doc.sections[j].text)) for j in under) > LED_INTO:
        return []
    return [i, *under]


def choose(guide: Guide, pool: list[Candidate], timeline: Timeline | None) -> list[list[Candidate]]:
    """The units of the guide, best first: each a run of sections of one document shown together
    (a section with its sub-sections, or a whole procedure), from at most ``guide.limit``
    documents and ``PER_DOC`` units of each, until about ``SENTENCES`` are quoted.

    A procedure most of whose steps fit counts as its best step plus ``PROCEDURE``. The next unit
    is the one that adds most (maximal marginal relevance): its fit, less its overlap with what is
    already chosen (so five sections saying '21 days' do not crowd out the one giving refill
    intervals), plus a bonus for the guide's query words it brings first."""
    if not pool:
        return []
    best = max(c.score for c in pool)
    if best <= 0:
        return []
    at = {(c.doc.path, c.index): c for c in pool}
    fresh = [c for c in pool if c.score >= FIT * best and not _outdated(c.doc, c.index, timeline)]
    options: dict[tuple, tuple[float, list[Candidate], set[str], int]] = {}
    for c in fresh:
        unit = [x for x in _unit(c, at, best) if x is c or not _outdated(x.doc, x.index, timeline)]
        if c not in unit:
            continue  # an introduction to more than a guide quotes
        key = tuple((x.doc.path, x.index) for x in unit)
        worth = max(x.score for x in unit) + PROCEDURE * _procedure(unit)
        said = set().union(*(terms(x.doc.sections[x.index].text) for x in unit))
        if key not in options or worth > options[key][0]:
            options[key] = (worth, unit, said, _size(unit))
    # only the best-fitting few can be chosen: the rest never outweigh them
    options = dict(sorted(options.items(), key=lambda kv: (-kv[1][0], kv[0]))[:OPTIONS])
    asked = terms(guide.query)
    covered: set[str] = set()
    overlap: dict[tuple, float] = dict.fromkeys(options, 0.0)  # most shared with a chosen unit
    taken: set[tuple[str, int]] = set()
    per_doc: Counter = Counter()
    units: list[list[Candidate]] = []
    quoted = 0
    left = sorted(options.items())

    def room(path: str) -> bool:  # for one more unit of this document
        return per_doc[path] < PER_DOC and (path in per_doc or len(per_doc) < guide.limit)

    def value(key: tuple, option: tuple[float, list[Candidate], set[str], int]) -> float:
        worth, _, said, _ = option
        new = len((said & asked) - covered) / len(asked) if asked else 0.0
        return worth - REDUNDANCY * overlap[key] + NOVELTY * new

    while left and quoted < SENTENCES:
        i = max(range(len(left)), key=lambda i: (value(*left[i]), -i))
        key, option = left.pop(i)
        worth, unit, said, size = option
        path = unit[0].doc.path
        if value(key, option) < FIT * best:
            break
        if any(k in taken for k in key) or not room(path):
            continue
        taken.update(key)
        per_doc[path] += 1
        units.append(unit)
        for other, (_, _, t, _) in left:
            if said | t:
                overlap[other] = max(overlap[other], len(said & t) / len(said | t))
        covered |= said & asked
        quoted += size
    named = {t for unit in units for x in unit for t in _heading_terms(x)}
    # a guide the words found little for (one document's sections) is not filled out by headings
    more = _covering(guide, pool, named, taken, best, timeline) if len(per_doc) >= COVERED else []
    filed = _filed_with(guide, pool, units, taken, best, timeline)
    for c in more + filed:
        unit = [
            x
            for x in (_whole(c, at) if c in filed else _unit(c, at, best))
            if (x.doc.path, x.index) not in taken
        ]
        if quoted >= SENTENCES * (FILED_ROOM if c in filed else 1) or not room(c.doc.path) or c not in unit:
            continue
        taken.update((x.doc.path, x.index) for x in unit)
        per_doc[c.doc.path] += 1
        units.append(unit)
        quoted += _size(unit)
    return units


def _procedure(unit: list[Candidate]) -> bool:
    """Whether a unit is a procedure: two or more of its sections are steps."""
    return sum(1 for c in unit if STEP.match(c.doc.sections[c.index].heading)) > 1


def _size(unit: list[Candidate]) -> int:
    """The sentences and list items a unit quotes."""
    return sum(len(prose_units(c.doc.sections[c.index].text)) for c in unit)


COVER = 0.25  # a section headed by a subject the guide names and no chosen heading does fits from this share of the best
HEADED = 4  # sections, at most, a word heads for it to name a subject
COVERED = 3  # documents, at least, a guide quotes before sections are added for the subjects it names


def _heading_terms(c: Candidate) -> set[str]:
    """The words a section is headed by: its own heading (its document's title heads its opening)."""
    return terms(c.doc.sections[c.index].heading or c.doc.title)


def _covering(
    guide: Guide, pool: list[Candidate], named: set[str], taken: set, best: float, timeline: Timeline | None
) -> list[Candidate]:
    """For each subject the guide's purpose and query name (a word of theirs) that no chosen
    section's heading names, the best-fitting section headed by it, if it fits from ``COVER`` of
    the best: a cleaning guide that names mould gives 'Is the white fuzz on my pod mould?', a
    maintenance guide asked about thermal care 'Thermal Management'. One step of a procedure is no
    such section ('Step 4: Attach the v-wheels' names the wheels of a build)."""
    heads = Counter(t for c in pool for t in _heading_terms(c))
    wanted = [
        t
        for t in dict.fromkeys(terms_in_order(f"{guide.purpose} {guide.query}"))
        if t not in named and heads[t] <= HEADED  # 'garden' heads many sections: it names no subject
    ]
    out: list[Candidate] = []
    for word in wanted:
        if word in named:
            continue
        headed = [
            c
            for c in pool
            if c.score >= COVER * best
            and (c.doc.path, c.index) not in taken
            and word in _heading_terms(c)
            and not STEP.match(c.doc.sections[c.index].heading)  # one step of a procedure reads only in it
            and not _outdated(c.doc, c.index, timeline)
        ]
        if headed:
            pick = max(headed, key=lambda c: c.score)
            out.append(pick)
            named |= _heading_terms(pick)
    return out


FILED_WITH = 2  # documents filed under the guide's task it quotes, at least, before it takes the others
FILED_ROOM = 1.5  # of ``SENTENCES``, what a guide may quote with those others: they are its task's own
# of the best score, what one of those others fits from: its filing, not its words, says it belongs
FILED_FIT = 0.15


def _filed_with(
    guide: Guide,
    pool: list[Candidate],
    units: list[list[Candidate]],
    taken: set,
    best: float,
    timeline: Timeline | None,
) -> list[Candidate]:
    """The best-fitting section (from ``FILED_FIT`` of the best, ``COVER`` for fixes) of each
    document filed where ``FILED_WITH`` or more of the guide's documents are, under the guide's
    task, that it does not quote whole yet: a source files its maintenance together
    ('v1.1/extras/maintenance'), and a maintenance guide that quoted 'General Maintenance' and
    'Gantry Maintenance' left out 'Bed Maintenance' and 'Storing FarmBot for Winter', whose words
    were not the guide's."""
    task = task_of(guide)
    if task not in TASKS | {"Troubleshooting"}:  # a fixing guide's folder holds its fixes
        return []
    filed = Counter(
        filed_under(d) for d in {u[0].doc.path: u[0].doc for u in units}.values() if filed_facet(d) == task
    )
    folders = {f for f, n in filed.items() if n >= FILED_WITH}
    if not folders:
        return []
    # a folder of upkeep or set-up is all the task's; one of fixes also holds policies ('Support
    # Policy'), which come only when they fit the guide's words
    floor = COVER if task == "Troubleshooting" else FILED_FIT
    best_of: dict[str, Candidate] = {}
    for c in pool:
        if (
            filed_under(c.doc) in folders
            and c.score >= floor * best
            and (c.doc.path, c.index) not in taken
            and not _outdated(c.doc, c.index, timeline)
            and (c.doc.path not in best_of or c.score > best_of[c.doc.path].score)
        ):
            best_of[c.doc.path] = c
    return sorted(best_of.values(), key=lambda c: -c.score)


def _whole(c: Candidate, at: dict) -> list[Candidate]:
    """Every quotable section of ``c``'s document, when they are few enough to quote
    (``LED_INTO``), else ``c`` alone: a document a guide takes for where it is filed is taken
    whole ('Storing FarmBot for Winter' as its seven steps, not its fifth)."""
    sections = _sections(c.doc, [j for j in range(len(c.doc.sections)) if (c.doc.path, j) in at], at)
    return sections if _size(sections) <= LED_INTO else [c]


def terms_in_order(text: str) -> list[str]:
    """``terms`` of ``text`` in the order it says them."""
    return [stem(t) for t in tokens(text)]


def current(units: list[list[Candidate]], timeline: Timeline | None) -> list[list[Candidate]]:
    """The units less those that tell history: a section (not a procedure, which is quoted whole)
    one of whose statements a newer source changed. A guide says what to do now, and the newer
    source is the one to quote (app 4.6's '14 days ahead', the classroom's spring break under
    the old limit: app 5.0 says 21 days)."""
    stale = timeline.outdated if timeline is not None else {}

    def history(unit: list[Candidate]) -> bool:
        if _procedure(unit):
            return False
        anchors = {c.doc.sections[c.index].anchor for c in unit}
        return any(st.anchor in anchors for _, st in (stale.get(unit[0].doc.path) or {}).values())

    return [unit for unit in units if not history(unit)]


# Verbs a step opens with ('Fill the tank …', 'turn on vacation mode'): a sentence that tells what to do.
INSTRUCTIONS = frozenset(
    """add adjust align attach calibrate check choose clean click close connect cover cut disconnect
    drain dry empty enable disable fill flush follow go harvest insert inspect install keep lift
    loosen lower lubricate measure mount move open perform place plug pour press prune pull push put raise
    refill remove replace reset rinse secure select set store switch tap test tighten trim turn
    unplug update use wait wipe""".split()
)


def instructing(units: list[list[Candidate]]) -> list[list[Candidate]]:
    """The units of a guide to fixing problems that answer one: a procedure, a table (a code's or
    a light's meaning), an answer to a question, or a section with an instruction ('Check …',
    'If it is offline, reset …'). A setting's definition ('Calibration retry reset distance:
    Distance in millimeters to group calibration retries') and a support policy ('Supporting old
    versions … presents a number of problems') answer none."""
    return [u for u in units if _procedure(u) or any(_answers(c) for c in u)]


_IMPERATIVE = re.compile(
    r"(?:^|[,:;]\s+|\bthen\s+)(?:please\s+|first\s+|simply\s+)?(?:"
    + "|".join(
        sorted(
            INSTRUCTIONS
            | {
                "ensure",
                "try",
                "make",
                "verify",
                "contact",
                "restart",
                "reboot",
                "reconnect",
                "report",
                "consult",
                "ask",
                "call",
                "email",
                "visit",
            }
        )
    )
    + r")\b",
    re.IGNORECASE,
)


def _answers(c: Candidate) -> bool:
    section = c.doc.sections[c.index]
    if (
        STEP.match(section.heading)
        or section.heading.rstrip().endswith("?")
        or c.doc.title.rstrip().endswith("?")
    ):
        return True
    if any(line.lstrip().startswith("|") for line in section.text.splitlines()):
        return True
    return any(_IMPERATIVE.search(text) for _, text in prose_units(section.text))


_DOING = frozenset(stem(w) for w in INSTRUCTIONS | {"do", "make", "how", "to"})


def still_current_steps(
    history: list[list[Candidate]], kept: list[list[Candidate]], timeline: Timeline | None
) -> list[tuple[Candidate, list[str]]]:
    """The steps of history units (sections a newer source changed, left out by ``current``) that
    are still how it is done and that the kept units leave out: when the newer statement is on
    the guide too (so the older section is about the guide's own subject), each sentence of it
    that opens with an instruction, is not itself outdated, and says something the kept units do
    not (two word pairs of its own): 'turn on vacation mode under Garden > Vacation' in the app
    4.6 post, whose 14-day limit app 5.0 changed, while app 5.0 never says how to switch it on."""
    stale = (timeline.outdated if timeline is not None else {}) or {}
    shown = {(c.doc.path, c.doc.sections[c.index].anchor) for u in kept for c in u}
    said = set().union(*(_pairs(c.doc.sections[c.index].text) for u in kept for c in u))
    out = []
    for unit in history:
        gone = stale.get(unit[0].doc.path) or {}
        if not any((ch.statement.doc.path, ch.statement.anchor) in shown for ch, _ in gone.values()):
            continue  # what changed it is not on this guide: the old section is about something else
        for c in unit:
            steps = []
            for _, text in prose_units(c.doc.sections[c.index].text):
                plain = " ".join(plain_inline(text).split())
                first = (words(plain) or [""])[0].lower()
                if plain not in gone and first in INSTRUCTIONS and len(_pairs(plain) - said) >= 2:
                    steps.append(text)
                    said |= _pairs(plain)
            if steps:
                out.append((c, steps))
    return out


def _pairs(text: str) -> set[tuple[str, str]]:
    """Adjacent content words of ``text``, stemmed: what it says, more than which words it uses."""
    seq = [stem(t) for t in tokens(text)]
    return set(zip(seq, seq[1:], strict=False))


def _refers(unit: list[Candidate], other: list[Candidate]) -> bool:
    """Whether a unit's text names another unit's document by its title ('After installing
    FarmBot OS …' names 'FarmBot OS'): that one is done first."""
    title = other[0].doc.title
    if other[0].doc.path == unit[0].doc.path or len(title) < 4 or _lists(unit, other):
        return False
    pattern = re.compile(rf"(?<!\w){re.escape(title)}(?!\w)", re.IGNORECASE)
    return any(pattern.search(plain_inline(x.doc.sections[x.index].text)) for x in unit)


# A section opening on one of these goes on from the section before it ('As before, the light runs
# at 70% brightness.'): it is read after that one, not under another phase of its own.
_GOES_ON = re.compile(r"^(?:as before|in addition|also|besides|furthermore|moreover|again)\b", re.IGNORECASE)


def _phase_before(unit: list[Candidate], placed: list[tuple[str, list[Candidate]]]) -> str | None:
    """The phase of the unit of the same document whose section ``unit`` sits under ('Pod
    guarantee' under 'My seeds haven't sprouted. Is something wrong?': an answer is read whole),
    or of the one just before it when ``unit`` goes on from it, or, for a document's opening whose
    other sections stand beside it (at its heading level), of the first of those the guide quotes
    (the opening of 'Connecting FarmBot to the Internet' stood apart from its steps, under its
    own repeated heading); else None."""
    first = unit[0]
    section = first.doc.sections[first.index]
    if first.index == 0:  # an opening beside its document's other sections goes with what is quoted of them
        beside = sorted(
            (u[0].index, p)
            for p, u in placed
            if u[0].doc.path == first.doc.path
            and u[0].index > 0
            and u[0].doc.sections[u[0].index].level <= section.level
        )
        return beside[0][1] if beside else None
    before = [
        (u[0].index, p) for p, u in placed if u[0].doc.path == first.doc.path and u[0].index < first.index
    ]
    over = [
        (i, p)
        for i, p in before
        if section.path[: len(first.doc.sections[i].path)] == first.doc.sections[i].path
    ]
    if over:
        return max(over)[1]
    said = prose_units(section.text)
    if not said or not _GOES_ON.match(plain_inline(said[0][1]).lstrip()):
        return None
    return max(before)[1] if before else None


def _lists(unit: list[Candidate], other: list[Candidate]) -> bool:
    """Whether a list item of a unit is another unit's document title, whole: the unit is a
    contents list ('What's next? - General Maintenance - Bed Maintenance …'), read before them."""
    if other[0].doc.path == unit[0].doc.path:
        return False
    return any(key_of(other[0].doc.title) in _items_of(c.doc.sections[c.index].text) for c in unit)


@lru_cache(maxsize=4096)  # ``order`` asks it of every pair of units, again after each one placed
def _items_of(text: str) -> frozenset[tuple[str, ...]]:
    """The name keys of a section's list items (see ``links.item_keys``)."""
    return frozenset(item_keys(text))


def order(
    units: list[list[Candidate]],
    leads: dict[str, str] | None = None,
    fixing: bool = False,
    task: str | None = None,
) -> list[tuple[Candidate, str]]:
    """The units' sections in task order: prepare, do, check, fix (in a guide to ``fixing``
    problems: prepare, then its problems, checks before fixes, then what it quotes of doing things,
    as background to know);
    within a phase what the source files under the guide's ``task`` comes first (building the bot
    before the web app's set-up), then the rest; within each, a unit that names another's document
    comes after it, and so does one whose document another's 'What's next?' leads to (``leads``:
    document → the one it leads on to), which comes right after it when it can; else the
    best-fitting first. A unit is kept together, in its document's order."""
    leads = leads or {}
    placed = []
    for unit in units:
        first = unit[0]
        section = first.doc.sections[first.index]
        steps = _procedure(unit)
        about = f"{first.doc.title} {filed_under(first.doc)}"
        fix = phase_of("", about) == "fix"
        phase = "do" if steps and not fix else phase_of(section.heading, about)
        if fix and not fixing:  # 'Z-Axis Movements' (troubleshooting) is no check of a maintenance guide
            phase = "fix"  # in a guide to a task, the source's troubleshooting is for when it goes wrong
        elif phase == "check" and task is not None and filed_facet(first.doc) == task:
            phase = "do"  # 'Inspect the delrin leadscrew block' of 'Gantry Maintenance' is maintenance done
        placed.append((phase, sorted(unit, key=lambda c: c.index)))
    placed = [(_phase_before(u, placed) or p, u) for p, u in placed]
    if fixing:
        placed = [("know" if p == "do" else p, u) for p, u in placed]
    out: list[tuple[Candidate, str]] = []
    for phase in FIXING if fixing else PHASES:
        todo = [u for p, u in placed if p == phase]
        while todo:
            # what the source files under the task first, even where another document it names
            # would come before it ('General Maintenance' names the assembly's spacer fit test)
            group = [u for u in todo if task is not None and filed_facet(u[0].doc) == task] or todo
            ready = [
                u
                for u in group
                if not any(
                    _refers(u, v) or leads.get(v[0].doc.path) == u[0].doc.path for v in group if v is not u
                )
            ]
            contents = [u for u in ready if any(_lists(u, v) for v in group if v is not u)]
            led = [u for u in ready if out and leads.get(out[-1][0].doc.path) == u[0].doc.path]
            nxt = (contents or led or ready or group)[0]  # 'FarmBot OS' leads on to 'Configurator'
            same = [u for u in todo if u[0].doc.path == nxt[0].doc.path]  # one document's units together
            for u in same:
                todo.remove(u)
            shown = (
                "problems" if fixing and phase in ("check", "fix") else phase
            )  # its checks, then its fixes
            out += [(c, shown) for c in sorted((c for u in same for c in u), key=lambda c: c.index)]
    return out


def plan_guide(
    guide: Guide,
    docs: list[SourceDoc],
    superseded: dict[str, str],
    timeline: Timeline | None = None,
    devices: list[tuple[dict, list[SourceDoc]]] = (),
    by_meaning: bool = True,
    entries: set[str] = frozenset(),
    quotable: list[tuple[SourceDoc, int]] | None = None,
    leads: dict[str, str] | None = None,
    read: Counted | None = None,
    pointing: dict[str, set[str]] | None = None,
) -> GuidePlan:
    """The sections of a guide in page order with their phases, and its cross-device table
    (sections chosen by meaning too unless ``by_meaning`` is off: ``search.semantic``)."""
    specs = {d.path for _, found in devices for d in found} if len(devices) >= MIN_ROWS else set()
    quotable = quotable if quotable is not None else quotable_sections(docs, superseded)
    pool = [c for c in candidates(guide, quotable) if c.doc.path not in specs]
    if not pool:
        return GuidePlan()
    asked = terms(f"{guide.title} {guide.query}")
    if len(devices) >= MIN_ROWS:
        named = re.compile(
            "|".join(re.escape(n) for device, _ in devices for n in _names(device)[0]), re.IGNORECASE
        )
        for c in pool:  # only a section that names a device can hold a line for each
            section = c.doc.sections[c.index]
            about = bool(terms(f"{section.heading} {c.doc.title}") & asked)  # a list about the task
            c.per_device = about and bool(named.search(section.text)) and _per_device(c.doc, section, devices)
    score(guide, pool, by_meaning, read)
    elsewhere(guide, pool)
    for c in pool:  # an entry's section (a plant's 'Common problems') is about that entry, not the
        if c.doc.path in entries and not terms(c.doc.title) <= asked:  # task, unless the guide names it
            c.score = 0.0
    fixing = phase_of(guide.title, guide.purpose or "") == "fix"
    chosen_units = choose(guide, pool, timeline)
    if not fixing:  # a fix that says 'reflash' is no reason to quote the install again
        chosen_units = with_pointed(chosen_units, pool, pointing or {})
    chosen_units = with_named(chosen_units, pool)
    kept = current(chosen_units, timeline)
    steps = still_current_steps([u for u in chosen_units if u not in kept], kept, timeline)
    kept = instructing(kept) if fixing else kept
    kept = without_restatements(without_pointers(with_context(without_namesakes(kept), pool, timeline)))
    # how to start comes before what the newer says
    task = task_of(guide)
    ordered = order([[c] for c, _ in steps] + kept, leads or {}, fixing, task if task in TASKS else None)
    out = GuidePlan(
        [(c.doc.path, c.doc.sections[c.index].anchor) for c, _ in ordered], [p for _, p in ordered]
    )
    out.only = {f"{c.doc.path}#{c.doc.sections[c.index].anchor}": texts for c, texts in steps}
    chosen = [(c.doc, c.doc.sections[c.index]) for c, _ in ordered]
    table = entity_table(guide, chosen, devices, timeline)
    if table is not None:
        out.table, out.table_sources = table
    return out


# ---------------------------------------------------------------------------------------------
# The cross-device table

MIN_ROWS = 2  # a column two devices fill, at least
MIN_COLUMNS = 2  # a table compares devices on two things, at least
MAX_COLUMNS = 4


def _starts_with_name(text: str, names: tuple[str, ...], exclude: tuple[str, ...]) -> str | None:
    """The rest of a list item that opens with one of ``names`` ('Sprout 3 (1.2-litre tank): about
    7 days' → 'about 7 days'), or None."""
    plain = plain_inline(text)
    for name in sorted(names, key=len, reverse=True):
        if any(plain.lower().startswith(x.lower()) for x in exclude if len(x) > len(name)):
            return None
        m = re.match(rf"(?:the\s+)?{re.escape(name)}\b\s*", plain, re.IGNORECASE)
        if m:
            rest = plain[m.end() :]
            rest = re.sub(r"^\([^)]*\)\s*(?=[:—–-])", "", rest)
            rest = rest.lstrip(" :—–-").strip()
            return rest if len(rest.split()) >= 2 else None
    return None


def _per_device(doc: SourceDoc, section, devices: list[tuple[dict, list[SourceDoc]]]) -> bool:
    """Whether a section has a list whose items, or a table whose rows, open with the names of
    two devices or more ('Sprout 3 (1.2-litre tank): about 7 days', 'Grove 6 …')."""
    for block in section_content(doc, section):
        texts = [s.text for s in block.sentences] + [r[0].text for r in block.rows if r]
        named = {
            device["title"]
            for t in texts
            for device, _ in devices
            if _starts_with_name(t + " x x", *_names(device)) is not None
        }
        if len(named) >= MIN_ROWS:
            return True
    return False


def _names_device(text: str, names: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Whether ``text`` names the device (a longer name it excludes, such as 'Express XL' for
    'Express', does not count)."""
    plain = plain_inline(text)
    for x in exclude:
        plain = re.sub(rf"\b{re.escape(x)}\b", " ", plain, flags=re.IGNORECASE)
    return any(re.search(rf"\b{re.escape(n)}\b", plain, re.IGNORECASE) for n in names)


def _names(device: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (device["title"], *device.get("match", ())), tuple(device.get("exclude", ()))


def _phrases(guide: Guide) -> list[str]:
    """Two-word phrases of the guide's query ('vacation mode', 'water tank'), in order."""
    ws = [w for w in words(guide.query) if w not in STOPWORDS]
    return list(dict.fromkeys(f"{a} {b}" for a, b in zip(ws, ws[1:])))


def _best_statement(
    device: dict,
    specs: list[SourceDoc],
    chosen: list[tuple[SourceDoc, object]],
    said_in: re.Pattern,
    stale: dict,
    wanted: set[str],
) -> list | None:
    """[text, path, anchor] of the sentence saying ``said_in`` of the device, from its own spec
    pages or a chosen section naming it, preferring one with a quantity and most of ``wanted``."""
    names, exclude = _names(device)
    found = [
        (doc, sec, text, True) for doc in specs for sec in doc.sections for _, text in prose_units(sec.text)
    ]
    found += [
        (doc, sec, text, False)
        for doc, sec in chosen
        for _, text in prose_units(sec.text)
        if _names_device(text, names, exclude)
    ]
    best = None
    for doc, section, text, own in found:
        said = " ".join(plain_inline(text).split())
        if not said_in.search(said.lower()) or said in stale.get(doc.path, {}):
            continue
        rank = (bool(quantities(said)), len(terms(said) & wanted), own)
        if best is None or rank > best[0]:
            best = (rank, [said, doc.path, section.anchor])
    return best[1] if best is not None else None


def entity_table(
    guide: Guide,
    chosen: list[tuple[SourceDoc, object]],
    devices: list[tuple[dict, list[SourceDoc]]],
    timeline: Timeline | None,
) -> tuple[dict, list[str]] | None:
    """{'columns': [label, …], 'rows': [[device title, [[text, path, anchor] or [], …]], …]} and the
    documents its cells cite, or None when fewer than two columns are filled by two devices each."""
    if len(devices) < MIN_ROWS:
        return None
    columns: list[tuple[str, dict[str, list]]] = []  # (label, {device title: [text, path, anchor]})

    def add(label_: str, cells: dict[str, list]) -> None:
        if len(cells) >= MIN_ROWS and all(lbl.lower() != label_.lower() for lbl, _ in columns):
            columns.append((label_, cells))

    wanted = terms(guide.query)  # what the guide is about, not every word of its title
    # (a) fields of each device whose label names what the guide is about ('Tank capacity (l)')
    by_field: dict[str, dict[str, list]] = {}
    for device, specs in devices:
        for key, value, cite in device_facts(device, specs):
            label_ = field_label(key) if re.fullmatch(r"[a-z0-9_]+", key) else key
            if terms(label_) & wanted:
                by_field.setdefault(label_, {})[device["title"]] = [value, cite.path, cite.anchor]
    for label_, cells in by_field.items():
        add(label_, cells)
    # (b) lists in the guide's sections with an item per device ('Typical refill intervals')
    for doc, section in chosen:
        for block in section_content(doc, section):
            if block.kind not in ("bullets", "steps"):
                continue
            if not terms(f"{section.heading} {doc.title}") & wanted:
                continue  # a list per device about something else ('Which plants can I grow?')
            cells = {}
            for s in block.sentences:
                for device, _ in devices:
                    rest = _starts_with_name(s.text, *_names(device))
                    if rest is not None and device["title"] not in cells:
                        cells[device["title"]] = [rest, doc.path, section.anchor]
            add(section.heading or doc.title, cells)
    # (c) the guide's subject as each device's own spec page, or a section of the guide naming
    # the device, states it ('vacation mode'): the sentence with a quantity and most of its words
    stale = timeline.outdated if timeline is not None else {}
    labelled = set().union(*(terms(lbl) for lbl, _ in columns)) if columns else set()
    for phrase in _phrases(guide):
        said_in = re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")
        own = sum(
            1 for _, specs in devices if any(said_in.search(plain_inline(d.body).lower()) for d in specs)
        )
        if terms(phrase) & labelled or own < MIN_ROWS:
            continue  # a column is a quantity of the devices themselves: two spec pages name it
        cells = {}
        for device, specs in devices:
            best = _best_statement(device, specs, chosen, said_in, stale, wanted)
            if best is not None:
                cells[device["title"]] = best
        if len(cells) >= MIN_ROWS:
            add(phrase[:1].upper() + phrase[1:], cells)
            labelled |= terms(phrase)
    if len(columns) < MIN_COLUMNS:
        return None  # one quantity per device ('Tank capacity (l)' of a cleaning guide) is no overview
    columns = columns[:MAX_COLUMNS]  # the fields first, then the lists: a wider table is unread
    rows = [
        [device["title"], [cells.get(device["title"], []) for _, cells in columns]]
        for device, _ in devices
        if any(device["title"] in cells for _, cells in columns)
    ]
    sources = sorted({cell[1] for _, row in rows for cell in row if cell})
    return {"columns": [lbl for lbl, _ in columns], "rows": rows}, sources
