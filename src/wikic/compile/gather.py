"""Entity pages that gather: what every source says about a device, found and sorted by facet.

The plan picks, per device, the sections of its sources that name it (``gather``) and files each
under a facet (``facet_of``): specifications, set-up, use, maintenance, troubleshooting, FAQs. The
librarian quotes from each section the units that are about the device (``about_units``): the
whole section when its heading names the device, or when it is a procedure or an answer of a
source about the device (a field lists its id, or its title names it); else each sentence naming
it (with the sentence after it when that one goes on about it: 'It …', 'This …'), and every list,
step list or table naming it, whole.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from ..core.facts import filed_under
from ..core.markdown import Section, plain_inline, unnumbered, words
from ..core.models import SourceDoc
from ..core.words import FIRST_PERSON
from .draft import Block, Sentence
from .librarian.extract import points_ahead, prose_units, section_content
from .similarity import saying

FACETS = ("Specifications", "Overview", "Set-up", "Use", "Maintenance", "Troubleshooting", "FAQs")
# a facet's heading on an entity page names the entity: it reads as a heading, and a search that
# takes headings for entries ('Set-up') is not sent to every device's set-up at once
FACET_HEADINGS = {
    "Specifications": "Specifications",
    "Overview": "About the {}",
    "Set-up": "Setting up the {}",
    "Use": "Using the {}",
    "Maintenance": "Maintaining the {}",
    "Troubleshooting": "Troubleshooting the {}",
    "FAQs": "Questions about the {}",
}
_FACET_WORDS = {
    "Troubleshooting": """troubleshoot troubleshooting problem problems fix error errors issue issues fail
        failed failure reset diagnosis diagnose offline disconnect not won't can't""",
    "Set-up": """install installing installation setup set-up configure configuring configuration connect
        connecting assembly assemble assembling flash flashing mount mounting attach unbox unboxing
        getting started configurator""",
    "Maintenance": """maintain maintenance clean cleaning lubricate care replace replacing storing winter
        inspect adjustment""",
    "Specifications": """spec specs specification specifications dimension dimensions size sizes weight bom
        parts hardware materials compared comparison models model versions version""",
}
# what introduces a device or tells its versions' changes ('Intro to FarmBot Express', 'High Level
# Overview', 'Introducing the Sprout 3', 'Change Log'): what it is, wherever the source files it
OVERVIEW = re.compile(r"\b(?:overview|intro|introduction|introducing|meet|change ?log)\b", re.IGNORECASE)
FACET_WORDS = {facet: frozenset(text.split()) for facet, text in _FACET_WORDS.items()}
PER_DOC = 4  # sections quoted per source
SECTIONS = 40  # sections quoted per device page
MAX_LIST = 15  # a list or table naming the device is quoted whole up to this many items or rows


def facet_of(doc: SourceDoc, section: Section) -> str:
    """The facet a section of a source belongs to on an entity page: by its document's category
    when that names one (the source's own filing: 'Step 4: Check for blocked ports' of
    'Connecting FarmBot to the Internet' filed under Troubleshooting is troubleshooting), else by
    the words of its headings and its document's title, troubleshooting first ('Step 2' of
    'Camera Troubleshooting' is troubleshooting, not set-up). A section that introduces the
    device or its versions' changes (``OVERVIEW``) is its overview, a fix aside."""
    headings = " ".join(section.path)
    if words_facet(headings) != "Troubleshooting" and OVERVIEW.search(f"{headings} {doc.title}"):
        return "Overview"
    return (
        filed_facet(doc)
        or words_facet(f"{headings} {doc.title}")
        or ("FAQs" if doc.title.rstrip().endswith("?") else "Use")
    )


def filed_facet(doc: SourceDoc) -> str | None:
    """The facet a document's filing names (its ``category``, its ``section`` path: 'v1.1/assembly'
    is set-up, 'v1.1/extras/maintenance' maintenance), if any."""
    return words_facet(filed_under(doc, ("category", "section")))


def words_facet(text: str) -> str | None:
    """The facet the words of ``text`` name, troubleshooting first, if any."""
    found = set(words(text))
    found |= {w[:-1] for w in found if w.endswith("s")}
    for facet in ("Troubleshooting", "Maintenance", "Set-up", "Specifications"):
        if found & FACET_WORDS[facet]:
            return facet
    return None


@lru_cache(maxsize=256)
def name_pattern(names: tuple[str, ...], exclude: tuple[str, ...]) -> tuple[re.Pattern, re.Pattern | None]:
    """Patterns for a device's names and for the longer names it excludes ('Express XL'), made
    once per set of names (every sentence of a device's sources is tested against them)."""
    names = tuple(n for n in names if n)

    def alternatives(ns: tuple[str, ...]) -> str:
        return "|".join(_as_written(n) for n in sorted(ns, key=len, reverse=True))

    named = re.compile(rf"(?<!\w)(?:{alternatives(names)})(?!\w)", re.IGNORECASE)
    other = re.compile(rf"(?<!\w)(?:{alternatives(exclude)})(?!\w)", re.IGNORECASE) if exclude else None
    return named, other


def _as_written(name: str) -> str:
    """A name in any case ('farmbot express'), but a one-word name only capitalised: 'Express'
    is the kit, 'express or implied' is not."""
    if len(name.split()) == 1 and name[:1].isupper():
        return f"(?-i:{re.escape(name[0])}){re.escape(name[1:])}"
    return re.escape(name)


def names_it(text: str, named: re.Pattern, other: re.Pattern | None) -> bool:
    plain = plain_inline(text)
    if other is not None:
        plain = other.sub(" ", plain)
    return bool(named.search(plain))


_COMPARED = re.compile(r"\b(?:unlike|like|than|as with|compared (?:to|with))\W*(?:the\W+)?$", re.IGNORECASE)


def names_another(text: str, device: dict, leading: bool = False) -> bool:
    """Whether ``text`` is about another device (``device['others']``, the names of the plan's
    other devices): it names one and not this one ('Intro to FarmBot Express' on the Genesis
    page), or, with ``leading``, names one first ('FarmBot Express does not have tracks like
    FarmBot Genesis does.', '… acceptable because FarmBot Express features …'), not as what this
    device is compared with ('Unlike FarmBot Express, …') nor beside it ('The Sprout 3 and Grove 6
    connect to…')."""
    others = tuple(device.get("others", ()))
    if not others:
        return False
    named, _ = name_pattern((device["title"], *device.get("match", ())), ())
    another, _ = name_pattern(others, ())
    plain = plain_inline(text)
    if leading:
        found = another.search(named.sub(lambda m: "\0" * len(m.group()), plain))
        before = plain[: found.start()] if found else ""
        if not found or named.search(before) or _COMPARED.search(before):
            return False
        both = re.match(rf"\s*(?:,|and|or|&)\s+(?:the\s+)?(?:{named.pattern})", plain[found.end() :], re.I)
        return not both  # 'The Sprout 3 and Grove 6 connect to…' is about both
    return bool(another.search(named.sub(" ", plain))) and not named.search(plain)


# A line in emphasis alone, as under an image ('_Raspberry Pi 3, included with Genesis kits_'): a
# caption naming the device does not make its section about the device.
_CAPTION = re.compile(r"^[ \t]*([_*])(?![_*\s]).*(?<![_*\s])\1[ \t]*$", re.MULTILINE)


def names_every_model(text: str, device: dict) -> bool:
    """Whether ``text`` names each of three or more models ('Firmware 3.2 starts rolling out
    today to all Sprout 3, Grove 6 and Canopy 12 gardens'): said of all of them, it tells a
    reader of one model's page nothing of that model."""
    peers = device.get("peers", ())
    if len(peers) < 2:
        return False
    named, _ = name_pattern((device["title"], *device.get("match", ())), ())
    plain = plain_inline(text)
    if not named.search(plain):
        return False
    rest = named.sub(" ", plain)  # each other model by any of its names ('FarmBot Express', 'Express')
    every = [name_pattern(tuple(names), ())[0] for names in peers]
    return all(p.search(rest) for p in every) and not _per_model(plain, [named, *every])


def gives_each(text: str, device: dict) -> bool:
    """Whether ``text`` names every model, each with its own figure (``_per_model``): a line of
    the device's own, whichever model it names first."""
    peers = device.get("peers", ())
    named, _ = name_pattern((device["title"], *device.get("match", ())), ())
    every = [name_pattern(tuple(names), ())[0] for names in peers]
    return len(peers) >= 2 and _per_model(plain_inline(text), [named, *every])


def _per_model(plain: str, models: list) -> bool:
    """Whether a sentence naming every model gives each its own figure ('At 15% there is about
    0.18 litres left in a Sprout 3, 0.6 litres in a Grove 6 and 1.4 litres in a Canopy 12'): each
    model's clause holds a number besides the model's name. That is said of each, not of all."""
    clauses = re.split(r",\s*|;\s*|\s+and\s+", plain)
    for pattern in models:
        said = [c for c in clauses if pattern.search(c)]
        if not said or not any(_DIGIT.search(_all_names(c, models)) for c in said):
            return False
    return True


def _all_names(text: str, models: list) -> str:
    for pattern in models:
        text = pattern.sub(" ", text)
    return text


def gather(device: dict, docs: list[SourceDoc], specs: set[str]) -> list[list[str]]:
    """[facet, path, anchor] of every section of ``docs`` (the device's sources, best first) that
    names the device and is not headed as about another one or its past (``_HISTORY``), nor
    (troubleshooting aside, where a step or an entry stands on its own) as one step of a build
    or a set-up (``lone_step``) or one entry of a numbered list (``in_series``), its spec pages
    aside; at most ``PER_DOC`` per source, ``SECTIONS`` in all."""
    named, other = name_pattern((device["title"], *device.get("match", ())), tuple(device.get("exclude", ())))
    out: list[list[str]] = []
    for doc in docs:
        if doc.path in specs or names_another(doc.title, device) or _HISTORY.search(doc.title):
            continue  # 'Meet the Canopy 12' compares it with the Grove 6; it is the Canopy's
        found = 0
        series = _series(doc)
        for section in doc.sections:
            if found >= PER_DOC or len(out) >= SECTIONS:
                break
            if names_another(section.heading, device) or any(_HISTORY.search(h) for h in section.path):
                continue
            facet = facet_of(doc, section)
            if (
                facet != "Troubleshooting"
                and not names_it(section.heading, named, other)
                and (lone_step(section) or in_series(section, series))
            ):
                continue  # a step of a build ('Step 11: Sand the top surfaces') reads only in it
            uncaptioned = _CAPTION.sub("", section.text)
            if names_it(section.heading, named, other) or names_it(uncaptioned, named, other):
                out.append([facet, doc.path, section.anchor])
                found += 1
    return out


RESTATES = 0.75  # of a section's sentences that say again what the device's spec pages say: left out
SPEC_WORDS = 0.7  # of a sentence's words the spec pages use, with every number it gives: said there


def without_spec_restatements(
    gathered: list[list[str]], device: dict, specs: list[SourceDoc], by_path: dict[str, SourceDoc]
) -> list[list[str]]:
    """``gathered`` (``gather``) less the sections that say again what the device's own spec
    pages say (``RESTATES`` of their sentences): a launch post's 'Built for tall plants' ('The
    Canopy 12 is a freestanding cabinet measuring 62 x 34 x 135 cm …') under the specifications
    that state it. Models' names are no numbers ('Grove 6')."""
    named, _ = name_pattern((device["title"], *device.get("match", ()), *device.get("others", ())), ())

    def said(text: str) -> tuple[set[str], set[str]]:
        return saying(named.sub(" ", text))

    spec = [said(t) for d in specs for x in d.sections for _, t in prose_units(x.text)]
    if not spec:
        return gathered
    words, numbers = set().union(*(w for w, _ in spec)), set().union(*(n for _, n in spec))
    out = []
    for entry in gathered:
        section = by_path[entry[1]].section(entry[2])
        mine = [said(t) for _, t in prose_units(section.text)] if section else []
        again = sum(1 for w, n in mine if w and len(w & words) >= SPEC_WORDS * len(w) and n <= numbers)
        if not mine or again < RESTATES * len(mine):
            out.append(entry)
    return out


# a device's past ('Past Versions', 'Deprecated FarmBot Express MAX'): its page says what it is now
_HISTORY = re.compile(
    r"\b(?:past|previous|older|earlier) versions?\b|\bversion history\b|\bdeprecated\b", re.I
)


_NUMBERED = re.compile(r"^(\D+?)\s*#?\d+\b")  # 'Code 10', 'LED 4 (custom)', 'Error #42'
SERIES = 2  # headings of one series beside each other, at least, that make a list of parts


def _series(doc: SourceDoc) -> Counter:
    """How many headings of each name and level are numbered ('Code 10' → (1, 'code'))."""
    found = ((x.level, _NUMBERED.match(x.heading)) for x in doc.sections)
    return Counter((level, m.group(1).strip().lower()) for level, m in found if m)


def in_series(section: Section, series: Counter) -> bool:
    """Whether a section is one entry of a numbered reference list beside it (``series``, its
    document's ``_series``): 'LED 3' of the electronics box's LEDs, 'Code 10' of 'Code 0' …
    'Code 31', or a part beside its siblings ('Sequence 2' of 'Plant Your First Garden'), not a
    step. Two of a box's LEDs on a device page read as all there is, and a second sequence
    without the first as nothing; the list's page holds them all."""
    m = _NUMBERED.match(section.heading)
    return (
        m is not None
        and not lone_step(section)
        and series[section.level, m.group(1).strip().lower()] >= SERIES
    )


def lone_step(section: Section) -> bool:
    """Whether a section is a numbered step ('Step 11: …', '2. …'): taken from its procedure, a
    step of a build or a set-up reads out of order; a troubleshooting step ('Check for blocked
    ports') stands on its own."""
    return unnumbered(section.heading) != section.heading


_GOES_ON = re.compile(r"^(?:it|its|this|these|they|their|the kit|the bot)\b", re.IGNORECASE)
# a sentence that qualifies the one before it: 'Normal growing still uses the 30-minute cycle.'
# after '… the pump cycle is now controlled by a schedule …'; quoted apart, that one misleads
_QUALIFIES = re.compile(r"^(?:however|but|otherwise|except|only)\b|\bstill\b", re.IGNORECASE)
# a sentence about a picture the wiki does not show ('The diagram below illustrates …')
_FIGURE = re.compile(
    r"\b(?:diagrams?|images?|videos?|photos?|pictures?|screenshots?|figures?|illustrations?)\s+(?:below|above)\b"
    r"|\b(?:below|above)\s+(?:diagram|image|video|photo|picture|screenshot|figure|illustration)",
    re.IGNORECASE,
)


def about_device(doc: SourceDoc, device: dict) -> bool:
    """Whether a whole document is about the device: a field of its record lists the device's id
    (``products: [grove-6, canopy-12]``), or its title names the device and no other ('How does
    the Canopy 12 camera time-lapse work?'). Its sections are then quoted whole on the device's
    page: an answer or a procedure, not its one sentence that happens to name the device."""
    key = str(device.get("id") or "").lower()
    for name, value in doc.meta.items():
        if name in ("id", "record_id", "layer0", "generated_by"):
            continue
        values = value if isinstance(value, list) else [value]
        if key and any(isinstance(v, str) and v.lower() == key for v in values):
            return True
    named, other = name_pattern((device["title"], *device.get("match", ())), tuple(device.get("exclude", ())))
    return names_it(doc.title, named, other) and not names_another(doc.title, device)


# what a reader comes to a device page to do: a procedure of these is quoted whole, not the one
# sentence of it that names the device ('On the Grove 6 and Canopy 12, rinse the screen too.')
WHOLE_FACETS = frozenset({"Set-up", "Maintenance", "Troubleshooting"})


def whole_facet(doc: SourceDoc, facet: str) -> bool:
    """Whether a section of ``facet`` is quoted whole from a document about the device: a
    procedure (set-up, maintenance, troubleshooting) or an answer (a document titled as a
    question); a story's other sections give only what they say of the device."""
    return facet in WHOLE_FACETS or doc.title.rstrip().endswith("?")


def about_units(doc: SourceDoc, section: Section, device: dict, facet: str = "") -> list[Block]:
    """What a section says about the device, in whole units: all of it when its heading names the
    device, or when it is a procedure or an answer (``whole_facet``) of a document about the
    device (``about_device``); else each sentence naming it (and the next one when it goes on
    about it), each list or step list naming it, and each table with a row or a column of its
    own, whole (up to ``MAX_LIST`` items or rows); never a sentence that names another device
    first."""
    named, other = name_pattern((device["title"], *device.get("match", ())), tuple(device.get("exclude", ())))
    blocks = section_content(doc, section)
    # a writer's own story gives only what names the device ('Adding a Grove 6': 'Six months later
    # I added a Grove 6 …' is no set-up), each section of it ('Setting it up' of a teacher's year
    # with a Canopy 12: 'We mounted the Canopy 12 on the wall next to the reading corner …')
    story = bool(FIRST_PERSON.search(section.text)) or told_as_i(doc)
    if names_it(section.heading, named, other) and not story:
        return _without_news(blocks)
    if whole_facet(doc, facet) and about_device(doc, device) and not story:
        return _without_news(blocks)  # a procedure or an answer
    out: list[Block] = []
    for n, b in enumerate(blocks):
        introduced = (
            bool(out) and out[-1].kind == "para" and out[-1].sentences[-1].text.rstrip().endswith(":")
        )
        introduced = introduced and out[-1].sentences[-1] is (blocks[n - 1].sentences or (None,))[-1]
        if b.kind == "para":
            kept: list[Sentence] = []
            about_it = opens_on(b.sentences[0].text, named, other)  # 'The Canopy 12 weighs …': all of it
            for i, s in enumerate(b.sentences):
                if names_every_model(s.text, device) or (
                    names_another(s.text, device, leading=True) and not gives_each(s.text, device)
                ):
                    continue
                if _FIGURE.search(s.text) or points_ahead(plain_inline(s.text)) or _NEWS.search(s.text):
                    continue  # quoted apart from its section, it points at nothing ('In these
                    # instructions we show you how to build …', the instructions left on its home)
                if story and _WRITERS.search(s.text) and not _DIGIT.search(named.sub(" ", s.text)):
                    continue  # 'Six months later I added a Grove 6 …': an episode; 'I set it to 12 hours' tells
                goes_on = kept and kept[-1] is b.sentences[i - 1]
                lead_in = i == len(b.sentences) - 1 and s.text.rstrip().endswith(":")  # 'From left to right:'
                if (
                    about_it
                    and goes_on
                    or names_it(s.text, named, other)
                    or goes_on
                    and (_GOES_ON.match(s.text) or _QUALIFIES.search(s.text) or lead_in)
                ):
                    kept.append(s)
            if kept:
                out.append(Block("para", sentences=tuple(kept)))
        elif b.kind in ("bullets", "steps"):
            said = introduced or any(names_it(s.text, named, other) for s in b.sentences)
            if len(b.sentences) <= MAX_LIST and said:
                _with_lead_in(out, blocks[n - 1] if n else None, device)
                out.append(b)
        elif b.kind == "table":  # one of its rows or columns is the device's, not a word in a cell
            labels = [row[0].text for row in b.rows if row] + list(b.header)
            if len(b.rows) <= MAX_LIST and (introduced or any(names_it(t, named, other) for t in labels)):
                _with_lead_in(out, blocks[n - 1] if n else None, device)
                out.append(b)
    return _without_news(_with_opening(out, blocks))


# a post's news of the day, read on a page about the device ever after: 'Today we are announcing
# the Canopy 12, our first cabinet garden, shipping from 3 February 2025.', 'The headline feature
# is one of our most requested: vacation mode for the Grove 6.'
_NEWS = re.compile(
    r"^(?:today|this (?:week|month|year)),? we(?:'re| are| have) (?:announcing|launching|introducing|releasing)\b"
    r"|\bwe(?:'re| are) (?:excited|thrilled|happy|proud|delighted) to (?:announce|launch|introduce)\b"
    r"|^the headline feature\b|\bone of our most requested\b"
    # or of the documentation site itself: 'Announcing: … v1.1 documentation!', 'use the version
    # picker … to select an older version of the docs', 'This documentation covers …'
    r"|^announcing\b|^this documentation\b|\bversion picker\b|\bversion of the (?:\w+ )?(?:documentation|docs)\b"
    # or promise what is to come, which a later source tells as done ('… in an upcoming app release')
    r"|\bupcoming (?:\w+ )?(?:release|update|version)\b|\bin a (?:future|later) (?:release|update|version)\b",
    re.IGNORECASE,
)


def _without_news(blocks: list[Block]) -> list[Block]:
    """The blocks less the sentences that announce the device as news of the day or what is to
    come, or speak of the documentation they are written in."""
    out = []
    for b in blocks:
        if b.kind == "para":
            kept = tuple(s for s in b.sentences if not _NEWS.search(s.text))
            if not kept:
                continue
            b = Block("para", sentences=kept) if len(kept) < len(b.sentences) else b
        out.append(b)
    return out


def told_as_i(doc: SourceDoc) -> bool:
    """Whether a document is a person's own story: its opening is told as 'I' ('I teach fifth
    grade science …'), not only quoting someone who says it ('"I love it, but I don't have room
    for it."')."""
    return bool(doc.sections) and bool(FIRST_PERSON.search(_QUOTED.sub(" ", doc.sections[0].text)))


_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")


_DIGIT = re.compile(r"\d")
# in a story (a section the writer tells as 'I'), the writer's people too: 'our parent association'
_WRITERS = re.compile(FIRST_PERSON.pattern + r"|\b(?:[Ww]e|[Oo]ur|[Uu]s)\b")
LEAD_IN = 3  # sentences, at most, of a paragraph quoted whole as the lead-in of a list it introduces
OPENING_CHARS = 400  # a section's opening code block, at most, quoted above a list of it


def opens_on(text: str, named: re.Pattern, other: re.Pattern | None) -> bool:
    """Whether a sentence opens on the device as its subject ('The Canopy 12 weighs 18.5 kg …'):
    its paragraph is about the device, sentences that say 'it' included ('Empty it before moving')."""
    plain = plain_inline(text)
    if other is not None:
        plain = other.sub(" ", plain)
    m = named.search(plain)
    return (
        m is not None
        and re.fullmatch(r"\s*(?:the\s+|an?\s+)?", plain[: m.start()], re.IGNORECASE) is not None
    )


def _with_opening(out: list[Block], blocks: list[Block]) -> list[Block]:
    """``out`` with the code block that opens the section before it, when a list of the section
    is quoted and that block is not: FarmBot's 'Code 12' gave its corrective actions without the
    message the code shows ('Farmduino firmware is missing …'), which says what it means. Only a
    short block (``OPENING_CHARS``); a paragraph opening a section is quoted on its own merits."""
    if not blocks or blocks[0].kind != "code" or len(blocks[0].text) > OPENING_CHARS or blocks[0] in out:
        return out
    if not any(b.kind in ("bullets", "steps", "table") for b in out):
        return out
    return [blocks[0], *out]


def _with_lead_in(out: list[Block], before: Block | None, device: dict) -> None:
    """Put the paragraph that introduces a list or table ('Add 5 ml of Verdant Feed per litre of
    water every 14 days. For a full tank that is:') before it in ``out``, whole when it is short,
    else its last sentence: a dose per device quoted without it does not say how often. Not when
    it names another device first (it is about that one)."""
    if before is None or before.kind != "para" or not before.sentences:
        return
    if not before.sentences[-1].text.rstrip().endswith(":"):
        return
    lead = before.sentences if len(before.sentences) <= LEAD_IN else before.sentences[-1:]
    if any(names_another(s.text, device, leading=True) for s in lead):
        return
    ids = {id(s) for s in before.sentences}
    if out and out[-1].kind == "para" and all(id(s) in ids for s in out[-1].sentences):
        kept = out.pop().sentences  # the part of it kept for naming the device
        lead = [s for s in before.sentences if s in lead or any(s is k for k in kept)]
    out.append(Block("para", sentences=tuple(lead)))
