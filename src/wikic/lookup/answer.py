"""The offline answer: composed from the units of the retrieved layer-1 sections that hold it.

A *unit* is the smallest part of a source that states something whole:

- ``fact``: a frontmatter field with its human label and its subject named
  ("Carrot — Row spacing: 20");
- ``row``: a table row with its column labels ("Express — Width: 1.2m; Max Plant Height: 0.5m");
- ``item``: a list item or a numbered step;
- ``steps``: a numbered list (or a run of "**Step N:**" paragraphs) whole, in order;
- ``table``: a short table whole, each row with its column labels;
- ``list``: a short bulleted list whole;
- ``sentence``: a sentence of a paragraph.

Each unit is scored against the question: the rarity-weighted share of the question's words it
holds (its section's title and headings count for less), the rank of its section in the lookup,
and the question's shape. A question asking for a quantity ("how far apart", "how long", "which
voltage") prefers a unit stating a number, above all one whose label or unit matches what is
asked; a question asking how to do something prefers a whole numbered list. The answer is the best
unit (a numbered list is given in order, step by step), then at most a few supporting units that
score nearly as well, within a word budget; two items of one short list are given as the list
whole. Every unit cites the section it was read in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..compile.citations import stem
from ..compile.versions import is_superseded
from ..core.facts import (
    BYLINE,
    NAME_FIELDS,
    TAXONOMY,
    aliases,
    facts,
    plural_stem,
    prose_fields,
    restated_field,
)
from ..core.markdown import (
    STOPWORDS,
    Section,
    code_lines,
    is_table_start,
    plain_inline,
    split_sentences,
    table_cells,
    words,
)
from ..core.models import SourceDoc
from .text import query_terms

DOCS = 5  # documents (in the lookup's order) whose units are candidates
SHORT_SECTION = 60  # words: a section this short is given whole around its best unit
MAX_UNITS = 6  # units in an answer
TABLE_ROWS = 8  # a table or bulleted list this short is also a unit whole (rows labelled by columns)
TABLE_WORDS = 80
MAX_WORDS = 120  # support is added while the answer stays within this many words
SUPPORT = 0.75  # a supporting unit scores at least this share of the best one
FOLLOW = 1  # units following the best one in its section that the answer also gives
WORDLESS = 0.5  # the score of a unit holding none of the question's words is scaled by this
GAIN = 0.8  # weight of the question words a supporting unit adds to what the answer says
SAME_SUPPORT = 0.3  # a unit of the best unit's own section supports it from this share of its score
CONTEXT = 0.5  # weight of question words found only in the unit's title and headings
RANK = 0.3  # weight of the section's rank in the lookup: RANK / (1 + rank)
SECTION = 0.5  # weight of the question words its whole section (with title and headings) holds
ENTITY = 0.3  # a unit of a document whose subject the question names (by title or alias)
QUANTITY = 0.35  # a stated quantity labelled as what is asked for ('Height: 240', 'every month')
MEASURE = 0.2  # a number in the unit the asked-for quantity is measured in ('0.5m' for a height)
NUMBER = 0.1  # any number, when a quantity is asked for
STEPS = 0.1  # a numbered list, when the question asks how to do something
NOT_STEPS = 0.35  # a numbered list, when it does not (the list is long, its words many)
HEADING = 0.6  # the question words its title and headings hold: what the unit is about
VARIANT = 2  # words by which two sibling headings naming variants of one thing differ, each
PAIRS = 0.3  # the question's adjacent word pairs found side by side in the unit
NAME_WORDS = 4  # a longer title is a headline, not the name of a subject
RARE_NAME = math.log(1 / 0.03)  # a name names a subject when one of its words is this rare (IDF)


@dataclass(frozen=True)
class Quantity:
    cues: tuple[str, ...]  # what a question asking for it says
    labels: tuple[str, ...]  # words that label it in a source
    units: tuple[str, ...] = ()  # what it is measured in
    values: tuple[str, ...] = ()  # words that state it without a digit ('once', 'weekly')


_LENGTH = ("mm", "cm", "m", "km", "in", "inch", "inches", "ft", "feet", "meter", "meters", "metre", "metres")
_TIME = (
    "s",
    "sec",
    "second",
    "seconds",
    "min",
    "minute",
    "minutes",
    "h",
    "hr",
    "hour",
    "hours",
    "day",
    "days",
)
_TIME += ("week", "weeks", "month", "months", "year", "years", "am", "pm")
_FREQUENCY = ("once", "twice", "daily", "weekly", "monthly", "yearly", "annually", "every")
# Plain English for asking after a quantity, and how sources label and measure it.
QUANTITIES: dict[str, Quantity] = {
    "spacing": Quantity(
        ("apart", "gap", "spacing", "space between", "distance between", "how far"),
        ("apart", "spacing", "distance", "space", "gap"),
        _LENGTH,
    ),
    "height": Quantity(("how tall", "tallest", "how high", "height"), ("height", "tall", "high"), _LENGTH),
    "width": Quantity(("how wide", "widest", "width", "spread"), ("width", "wide", "spread"), _LENGTH),
    "depth": Quantity(("how deep", "depth"), ("deep", "depth", "cover"), _LENGTH),
    "size": Quantity(
        ("what size", "how big", "how large", "dimensions", "resolution"),
        ("size", "dimensions", "resolution"),
        (*_LENGTH, "mp", "px"),
    ),
    "duration": Quantity(
        (
            "how long",
            "how soon",
            "how quickly",
            "until",
            "how many days",
            "how many hours",
            "how much longer",
            "how much time",
        ),
        ("time", "take", "takes", "last", "lasts", "duration", "long"),
        (*_TIME, *_LENGTH),
    ),
    "frequency": Quantity(("how often", "how frequently"), ("often", "frequency"), _TIME, _FREQUENCY),
    "temperature": Quantity(
        ("how warm", "how hot", "how cold", "temperature"),
        ("temperature", "warm", "cold", "hot"),
        ("°c", "°f", "c", "f"),
    ),
    "weight": Quantity(
        ("how heavy", "weigh", "weight"), ("weight", "heavy", "weighs"), ("kg", "g", "lb", "lbs")
    ),
    "voltage": Quantity(("voltage", "volts", "volt"), ("voltage", "volts", "volt"), ("v", "vac", "vdc")),
    "cost": Quantity(("cost", "price", "how expensive"), ("price", "cost", "total"), ("$", "usd", "eur")),
    "area": Quantity(
        ("area", "how much space", "square metres", "square meters", "square feet", "footprint"),
        ("area", "footprint"),
        ("sqm", "sqft", "sq", "acre", "acres", "ha", "hectare", "hectares"),
    ),
    "count": Quantity(
        (
            "how many",
            "how much",
            "what value",
            "which value",
            "cap",
            "limit",
            "maximum",
            "minimum",
            "at most",
            "at least",
        ),
        ("limit", "maximum", "max", "minimum", "min", "up to", "at most", "at least"),
    ),
}
_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty"
    " hundred thousand dozen half"
).split()


@lru_cache(maxsize=1 << 14)  # every question of an eval reads the same units again
def _vocabulary(text: str) -> frozenset[str]:
    """The stems of the words of ``text``."""
    return frozenset(stem(w) for w in words(text))


_NUMBER = re.compile(
    r"(?<![\w.])[$]?(\d+(?:[.,/]\d+)*|(?:" + "|".join(_NUMBER_WORDS) + r")\b)\s*(°\s?[CF]|[a-zA-Zµ]+)?",
    re.IGNORECASE,
)
_HOW_TO = re.compile(
    r"\b(how (do|can|should|would) (i|we|you)|how to|what steps|which steps|the steps|steps to|"
    r"step by step|procedure|instructions)\b",
    re.IGNORECASE,
)
_ORDERED = re.compile(r"^(\s*)(\d+)[.)]\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_STEP = re.compile(r"^\*\*\s*Step\s+(\d+)\s*:?\s*\*\*\s*:?\s*(.*)$", re.IGNORECASE)
_CALLOUT = re.compile(r"^\*\*([^*]{1,80}?)[.:]?\*\*\s+(?=[A-Z0-9])(.*)$")
# Fields that file a record under a heading rather than state something about its subject.
CLASSIFYING = TAXONOMY | {"keywords"}  # where a record is filed ('Products: grove-6'): no answer
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


@dataclass(frozen=True)
class Unit:
    kind: str  # facts | row | table | item | steps | sentence
    text: str  # as the answer states it
    ref: str  # the layer-1 section it cites (path#anchor)
    context: str  # its document's title and its heading path: what it is about
    pos: int = 0  # document order within its section
    parts: tuple[str, ...] = ()  # a numbered list's steps in order; a fact list's 'Label: value's
    block: int = -1  # the table a row or table unit belongs to (its order in the section)


@dataclass(frozen=True)
class Shape:
    """What a question asks for: its search terms, the quantities it names, whether it asks how."""

    terms: tuple[str, ...]
    quantities: tuple[str, ...]
    how_to: bool
    report: bool = False  # it reports a problem rather than asking ('The photos are all black.')

    @classmethod
    def of(cls, question: str) -> Shape:
        low = " ".join(words(question))
        found = tuple(name for name, q in QUANTITIES.items() if any(_has_phrase(low, c) for c in q.cues))
        report = "?" not in question
        return cls(tuple(query_terms(question)), found, bool(_HOW_TO.search(question)) and not found, report)


_ASKING = re.compile(
    r"^(?:how|what|what's|which|when|where|why|who|whose|can|could|do|does|did|is|are|was|were|"
    r"should|shall|will|would|may|must|has|have)\b",
    re.IGNORECASE,
)
_AND_ASK = re.compile(
    r",?\s+(?:and|or|but)\s+(?=(?:how|what|what's|which|when|where|why|who|can|could|do|does|is|are|"
    r"should|will|would)\b)",
    re.IGNORECASE,
)


def question_parts(question: str) -> list[str]:
    """The questions a question asks, when it asks more than one ('How deep do beet seeds go,
    and how long until I see sprouts?' → two); [] when it asks one. Statements around them
    ('I'm torn between the Express and the XL.') set the scene and ask nothing."""
    parts = [
        p.strip(" ,")
        for sentence in split_sentences(question)
        for p in _AND_ASK.split(sentence)
        if _ASKING.match(p.strip(" ,")) or p.rstrip().endswith("?")
    ]
    return parts if len(parts) > 1 else []


def _has_phrase(text: str, phrase: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) is not None


# ---------------------------------------------------------------- units


def _cells(line: str) -> list[str]:
    """A table row's cells as text; a line break inside a cell reads as a space."""
    return [" ".join(c.split()) for c in table_cells(_BREAK.sub(" ", line))]


def _row_text(header: list[str], row: list[str]) -> str:
    cells = [(h, c) for h, c in zip(header, row) if c]
    if not cells:
        return ""
    first = row[0]
    rest = [(h, c) for h, c in zip(header[1:], row[1:]) if c]
    if not first:
        return "; ".join(f"{h}: {c}" if h else c for h, c in rest)
    if len(header) == 2 or not any(h for h, _ in rest):
        return f"{first}: " + "; ".join(c for _, c in rest) if rest else first
    return f"{first} — " + "; ".join(f"{h}: {c}" if h else c for h, c in rest)


def _labelled_row(header: list[str], row: list[str]) -> str:
    """A row with every cell labelled by its column ('Time Period: 1 minute, Max Number of Logs:
    250'): in a whole table a row's first cell is not the subject of the others."""
    return ", ".join(f"{h}: {c}" if h else c for h, c in zip(header, row) if c)


def _quotable(text: str) -> bool:
    return len(text.split()) >= 2 and bool(re.search(r"[^\W\d_]", text))


def section_units(doc: SourceDoc, section: Section) -> list[Unit]:
    """The units of one section in document order. A list item restating a frontmatter field
    ('Row spacing: 20', as transform's details list does) is left to the fact list."""
    return _SectionReader(doc, section).read()


class _SectionReader:
    """Reads one section's lines into units: paragraphs into sentences (or bold 'Step N:' steps),
    tables into rows (and short tables whole), list items into items (short bulleted lists whole,
    a run of numbered steps as the steps in order)."""

    def __init__(self, doc: SourceDoc, section: Section):
        self.doc = doc
        self.section = section
        self.ref = doc.path + (f"#{section.anchor}" if section.anchor else "")
        self.context = " ".join([doc.title, *section.path])
        self.units: list[Unit] = []
        self.para: list[str] = []
        self.steps: list[str] = []  # the current run of numbered steps
        self.run = ""  # what the run is made of: 'list' items or bold 'Step N:' paragraphs
        self.lead = ""  # the sentence introducing a list ('… the following steps:')
        self.block = -1  # tables and bulleted lists seen
        self.items: list[str] = []  # the current bulleted list's items

    def read(self) -> list[Unit]:
        lines = list(code_lines(self.section.text.split("\n")))
        i = 0
        while i < len(lines):
            _, line, code = lines[i]
            stripped = line.strip()
            if code or not stripped or stripped.startswith(("<", "#", "![")):
                self.flush_para()
                i += 1
            elif i + 1 < len(lines) and is_table_start(stripped, lines[i + 1][1]):
                i = self.table(lines, i)
            elif _ORDERED.match(line) or _BULLET.match(line):
                i = self.list_item(lines, i)
            else:
                self.end_items()
                self.para.append(stripped)
                i += 1
        self.flush_para()
        self.end_steps()
        self.end_items()
        return self.units

    def add(self, kind: str, text: str, **kw) -> None:
        text = " ".join(text.split())
        if _quotable(text):
            context = f"{self.context} {self.lead}".strip()
            self.units.append(Unit(kind, text, self.ref, context, len(self.units), **kw))

    def end_steps(self) -> None:
        if len(self.steps) >= 2:
            steps = self.steps
            self.add("steps", " ".join(f"{i}. {s}" for i, s in enumerate(steps, 1)), parts=tuple(steps))
        self.steps = []
        self.run = ""

    def end_items(self) -> None:
        items = self.items
        if 2 <= len(items) <= TABLE_ROWS and sum(len(t.split()) for t in items) <= TABLE_WORDS:
            self.add("list", "; ".join(items), parts=tuple(items), block=self.block)
        self.items = []

    def flush_para(self) -> None:
        """The paragraph read so far: a bold 'Step N:' step, or sentences (the last one, when it
        ends in a colon, introduces what follows)."""
        if not self.para:
            return
        text = " ".join(self.para)
        self.para = []
        step = _STEP.match(text)
        if step:
            if self.run == "list":
                self.end_steps()
            self.run = "bold"
            self.steps.append(" ".join(plain_inline(step.group(2)).split()))
            self.add("item", f"Step {step.group(1)}: {plain_inline(step.group(2))}")
            return
        if self.run == "list":
            self.end_steps()
        callout = _CALLOUT.match(text)
        if callout:
            text = f"{callout.group(1).strip()}: {callout.group(2)}"
        sentences = split_sentences(plain_inline(text))
        for sentence in sentences:
            self.add("sentence", sentence)
        self.lead = sentences[-1] if sentences and sentences[-1].endswith(":") else ""

    def table(self, lines: list, i: int) -> int:
        """The table starting at line ``i``: a row unit per row, and the table whole when it is
        short; returns the line after it."""
        self.flush_para()
        self.end_steps()
        self.end_items()
        header = _cells(lines[i][1].strip())
        i += 2
        rows = []
        self.block += 1
        while i < len(lines) and "|" in lines[i][1] and not lines[i][2]:
            cells = _cells(lines[i][1])
            self.add("row", _row_text(header, cells), block=self.block)
            rows.append(_labelled_row(header, cells))
            i += 1
        rows = [r for r in rows if r]
        if 2 <= len(rows) <= TABLE_ROWS and sum(len(r.split()) for r in rows) <= TABLE_WORDS:
            self.add("table", "; ".join(rows), parts=tuple(rows), block=self.block)
        return i

    def list_item(self, lines: list, i: int) -> int:
        """The list item at line ``i`` with its continuation lines: an item unit, a step of a
        numbered run or an item of a bulleted list; returns the line after it."""
        self.flush_para()
        line = lines[i][1]
        ordered, bullet = _ORDERED.match(line), _BULLET.match(line)
        indent, text = (ordered.group(1), ordered.group(3)) if ordered else (bullet.group(1), bullet.group(2))
        while i + 1 < len(lines) and lines[i + 1][1].startswith("  ") and not lines[i + 1][2]:
            nxt = lines[i + 1][1]
            if _ORDERED.match(nxt) or _BULLET.match(nxt):
                break
            text += " " + nxt.strip()
            i += 1
        text = " ".join(plain_inline(text).split())
        restated = restated_field(self.doc, text) is not None
        listed = bool(bullet) and not indent and not restated
        if ordered and not indent:
            self.end_items()
        elif listed and not self.items:
            self.block += 1
        if not restated:
            self.add("item", text, block=self.block if listed else -1)
        if listed:
            self.items.append(text)
        if not indent:
            if ordered:
                if self.run == "bold":
                    self.end_steps()
                self.run = "list"
                self.steps.append(text)
            elif self.run == "list":
                self.end_steps()
        return i + 1


def fact_units(doc: SourceDoc) -> list[Unit]:
    """A document's facts (``facts.facts``) as one fact list ('Carrot — Row spacing: 20; Spread:
    10'), citing the section that states most of the values (else the document's first section)."""
    found = [f for f in facts(doc) if f.key not in CLASSIFYING | BYLINE]  # a path ('v15/app') is no fact
    if not found:
        return []
    parts = tuple(f"{f.label}: {f.value}" for f in found)
    refs = [_cite_value(doc, f.value) for f in found]
    ref = max(dict.fromkeys(refs), key=refs.count)
    return [Unit("facts", f"{doc.title} — " + "; ".join(parts), ref, doc.title, 0, parts)]


def lead_units(doc: SourceDoc) -> list[Unit]:
    """The sentences of text fields (a ``description``) the body does not repeat, citing the
    document's first section."""
    first = doc.sections[0].anchor if doc.sections else ""
    ref = doc.path + (f"#{first}" if first else "")
    sentences = [s for _, text in prose_fields(doc, listed=True) for s in split_sentences(plain_inline(text))]
    return [Unit("sentence", s, ref, doc.title, n) for n, s in enumerate(sentences)]


def _cite_value(doc: SourceDoc, value: str) -> str:
    needle = value.lower()
    for s in doc.sections:
        if s.anchor and needle in plain_inline(s.text).lower():
            return f"{doc.path}#{s.anchor}"
    first = next((s.anchor for s in doc.sections if s.anchor), "")
    return doc.path + (f"#{first}" if first else "")


# ---------------------------------------------------------------- scoring


class Scorer:
    """Scores units against one question; ``weight(term)`` is the term's rarity (IDF)."""

    def __init__(self, question: str, weight: Callable[[str], float]):
        self.shape = Shape.of(question)
        self.weight = weight
        self._covered: dict[str, float] = {}  # text → coverage: contexts repeat across units
        self.terms = [(stem(t), weight(t)) for t in self.shape.terms]
        self.total = sum(w for _, w in self.terms) or 1.0
        asked = [QUANTITIES[q] for q in self.shape.quantities]
        self.labels = {stem(w) for q in asked for w in q.labels if " " not in w}
        self.label_phrases = [w for q in asked for w in q.labels if " " in w]  # 'up to', 'at most
        self.units = {u for q in asked for u in q.units}
        self.values = {v for q in asked for v in q.values}
        self.tokens = [plural_stem(w) for w in words(question)]
        content = [w for w in words(question) if w not in STOPWORDS]
        self.bigrams = [((stem(a), stem(b)), weight(a) + weight(b)) for a, b in zip(content, content[1:])]

    def held(self, text: str) -> set[str]:
        """The question's (stemmed) terms ``text`` holds."""
        vocab = _vocabulary(text)
        return {t for t, _ in self.terms if t in vocab}

    def gain(self, unit: Unit, said: set[str]) -> float:
        """The rarity-weighted share of the question's terms ``unit`` holds that ``said`` lacks."""
        new = self.held(unit.text) - said
        return sum(w for t, w in self.terms if t in new) / self.total

    def coverage(self, text: str) -> float:
        if text not in self._covered:
            vocab = _vocabulary(text)
            self._covered[text] = sum(w for t, w in self.terms if t in vocab) / self.total
        return self._covered[text]

    def quantity(self, unit: Unit) -> float:
        """How well the unit states the quantity asked for (0 when none is asked for)."""
        if unit.kind == "facts":
            return max((self.quantity_of(p) for p in unit.parts), default=0.0)
        return self.quantity_of(unit.text, unit.context)

    def quantity_of(self, text: str, context: str = "") -> float:
        """A number in ``text`` is labelled as what is asked for by a word beside it, or, when
        it is measured in what the quantity is measured in, by its section's title and headings
        ('about 14 days' under 'How long does a full tank last?')."""
        if not self.shape.quantities:
            return 0.0
        said = words(text)
        numbers = _NUMBER.findall(text)
        if not numbers and not self.values.intersection(said):
            return 0.0
        measured = any(u and u.lower().replace(" ", "") in self.units for _, u in numbers)
        labelled = self.labelled(said) or (measured and self.labelled(words(context)))
        return NUMBER + QUANTITY * labelled + MEASURE * measured

    def labelled(self, said: list[str]) -> bool:
        return (
            bool(self.labels.intersection(stem(w) for w in said))
            or bool(self.values.intersection(said))
            or any(_has_phrase(" ".join(said), p) for p in self.label_phrases)
        )

    def spans(self, doc: SourceDoc) -> list[tuple[int, int]]:
        """Where the question names the document's subject: (start, end) word spans matching its
        title or one of its aliases, one of whose words is rare (a name as common as 'plants'
        names nothing)."""
        out = []
        title = words(doc.title)
        # a title names a subject when it is short and not itself a question ('Carrot', 'Grove 6')
        named = [title] if len(title) <= NAME_WORDS and not doc.title.rstrip().endswith("?") else []
        names = [*named, *(words(n) for n in aliases(doc.meta, NAME_FIELDS))]
        # a name of three words or more also goes by its first ones ('French Breakfast' radishes)
        names += [n[:-1] for n in names if len(n) > 2]
        for name in names:
            toks = [plural_stem(w) for w in name]
            n = len(toks)
            found = [
                (i, i + n) for i in range(len(self.tokens) - n + 1) if toks and self.tokens[i : i + n] == toks
            ]
            # weighed only when the question uses it: its words are then the question's own
            if found and max(self.weight(w) for w in name) >= RARE_NAME:
                out += found
        return out

    def named(self, docs: Sequence[SourceDoc]) -> set[str]:
        """The paths of the documents the question names, a name inside a longer one aside
        ('cherry' in 'Cherry Belle radishes' names the radish, not the cherry)."""
        spans = {d.path: self.spans(d) for d in docs}
        every = [sp for found in spans.values() for sp in found]
        return {
            path
            for path, found in spans.items()
            if any(not any(o[0] <= a and b <= o[1] and o != (a, b) for o in every) for a, b in found)
        }

    def mentions(self, name: str) -> bool:
        """Whether the question uses a word of ``name`` (plurals aside)."""
        return bool({plural_stem(w) for w in words(name) if w not in STOPWORDS}.intersection(self.tokens))

    def pairs(self, text: str) -> float:
        """The share of the question's adjacent word pairs (rarity-weighted) that ``text`` holds
        side by side: 'stall detection' in a unit is stronger evidence than both words apart."""
        if not self.bigrams:
            return 0.0
        toks = [stem(w) for w in words(text) if w not in STOPWORDS]
        have = set(zip(toks, toks[1:]))
        return sum(w for pair, w in self.bigrams if pair in have) / sum(w for _, w in self.bigrams)

    def facts_first(self, unit: Unit) -> Unit:
        """A fact list with the facts that state what is asked for first."""
        order = sorted(
            range(len(unit.parts)),
            key=lambda i: (-(self.quantity_of(unit.parts[i]) + self.coverage(unit.parts[i])), i),
        )
        parts = tuple(unit.parts[i] for i in order)
        head = unit.text.split(" — ", 1)[0]
        return Unit(unit.kind, f"{head} — " + "; ".join(parts), unit.ref, unit.context, unit.pos, parts)

    def score(self, unit: Unit, rank: int, section: float = 0.0, named: bool = False) -> float:
        """``section`` is the coverage of the unit's whole section, title and headings included;
        ``named``: the question names the subject of the unit's document."""
        said = " ".join(unit.parts) if unit.kind == "facts" else unit.text  # a fact list's title is context
        own = self.coverage(said)
        context = max(0.0, self.coverage(said + " " + unit.context) - own)
        s = own + CONTEXT * context + RANK / (1 + rank) + SECTION * section + self.quantity(unit)
        s += HEADING * self.coverage(unit.context)
        s += ENTITY * named + PAIRS * self.pairs(said)
        if unit.kind == "steps":
            s += STEPS if self.shape.how_to else -NOT_STEPS
        if not own and unit.kind in ("table", "list"):  # a whole list about something else
            s *= WORDLESS
        return s


@dataclass(frozen=True)
class Candidate:
    unit: Unit
    rank: int  # its section's place among the lookup's refs (unlisted sections rank after them)
    section: str  # its section's whole text, with its title and headings
    named: bool  # the question names the subject of its document


def candidate_units(
    scorer: Scorer,
    docs: dict[str, SourceDoc],
    refs: Sequence[str],
    superseded: dict[str, str] | None = None,
    outdated: Mapping[str, frozenset[str]] | None = None,
) -> list[Candidate]:
    """Every unit of the first ``DOCS`` documents the refs name, with its section's rank; never
    one of a section a newer document replaces (``superseded``, as ``versions.supersession``),
    nor a sentence a newer source changed (``outdated``: {path: sentences}, the compile's
    timeline): an answer states what holds now."""
    ranks: dict[str, int] = {}
    for rank, ref in enumerate(refs):
        ranks.setdefault(ref, rank)
    order: list[str] = []  # the first DOCS documents the refs name (read only until they are found)
    for ref in ranks:
        path = ref.partition("#")[0]
        if len(order) == DOCS:
            break
        if path not in order and path in docs:
            order.append(path)
    out: list[Candidate] = []
    named_docs = scorer.named([docs[p] for p in order])
    for path in order:
        doc = docs[path]
        first = min(r for ref, r in ranks.items() if ref.partition("#")[0] == path)
        named = path in named_docs
        stale = (outdated or {}).get(path, frozenset())
        stated = fact_units(doc) + lead_units(doc)
        about = " ".join([doc.title, *(u.text for u in stated)])
        out += [Candidate(u, first, about, named) for u in stated]
        for s in doc.sections:
            if superseded and is_superseded(path, s.anchor, superseded):
                continue
            ref = path + (f"#{s.anchor}" if s.anchor else "")
            rank = ranks.get(ref, len(refs) + first)
            text = " ".join([doc.title, *s.path, plain_inline(s.text)])
            units = [u for u in section_units(doc, s) if not _past(u, stale)]
            out += [Candidate(u, rank, text, named) for u in units]
    return out


# a sentence that says it tells what held before ('Until now, the alert triggered at 20%.')
_PAST = re.compile(r"^(?:until now|until today|up to now|previously|formerly|in the past|originally)\b", re.I)


def _past(unit: Unit, stale: frozenset[str]) -> bool:
    """Whether a sentence unit states what no longer holds: a newer source changed it (``stale``,
    as the compile's timeline quotes them), it says it tells the past, or it announces 'today's'
    change in a document a newer source changed ('Starting today, we are changing our return
    policy.' in the post of the policy that another replaced)."""
    if unit.kind != "sentence":
        return False
    said = " ".join(plain_inline(unit.text).split())
    return said in stale or bool(_PAST.match(said)) or bool(stale and _TODAY.match(said))


_TODAY = re.compile(r"^(?:starting|from|as of|beginning|effective) today\b", re.I)


def compose(
    question: str,
    docs: dict[str, SourceDoc],
    refs: Sequence[str],
    weight: Callable[[str], float],
    superseded: dict[str, str] | None = None,
    outdated: Mapping[str, frozenset[str]] | None = None,
) -> list[Unit]:
    """The units an answer states: the best one (a numbered list whole, a fact list with the
    facts that answer first), then the rest of its section when that is short, then other units
    that score nearly as well, within the word budget. A unit stating what the answer does not
    yet say (question words no chosen unit holds: the other half of 'X, and Y?', the second of
    two things compared) scores higher as support, so an answer covers the whole question."""
    scorer = Scorer(question, weight)
    candidates = candidate_units(scorer, docs, refs, superseded, outdated)
    scored = _scored(scorer, candidates)
    if not scored or scored[0][0] <= 0:
        return []
    best_score, _, best = scored[0]
    if best.kind == "steps":
        return [best]
    named = [
        scorer.facts_first(c.unit)
        for c in candidates
        if c.named and c.unit.kind == "facts" and len(c.unit.parts) > 1
    ]
    draft, best = _opening(scorer, candidates, best, named)
    # when the question names its subjects, the fact list of a subject it does not mention (no
    # word of its name) says nothing about them
    others = {
        c.unit.ref
        for c in candidates
        if c.unit.kind == "facts" and named and not c.named and not scorer.mentions(c.unit.context)
    }
    # a question in several parts ('How much more area…, and how much longer…?') gets the best
    # unit for each part too, scored on that part's words
    for part in question_parts(question):
        _add_part(Scorer(part, weight), candidates, others, draft)
    for sibling in variants(scorer, docs, best.ref):
        _add_best_of(sibling, scored, draft)
    _add_support(scorer, [(s, u) for s, _, u in scored[1:]], best, best_score, others, draft)
    return whole_lists(draft.units, [c.unit for c in candidates])


@dataclass
class _Draft:
    """The units an answer states so far, and the words left of its budget."""

    units: list[Unit]
    budget: int

    def add(self, unit: Unit) -> None:
        self.units.append(unit)
        self.budget -= len(unit.text.split())

    def offer(self, unit: Unit) -> None:
        """Add ``unit`` when it fits the budget and says what no chosen unit says."""
        if len(unit.text.split()) <= self.budget and not _repeats(unit, self.units):
            self.add(unit)


def _scored(scorer: Scorer, candidates: Sequence[Candidate]) -> list[tuple[float, int, Unit]]:
    """(score, place, unit) of every candidate, best first (the earlier candidate on a tie)."""
    sections = {c.section: scorer.coverage(c.section) for c in candidates}
    return sorted(
        (
            (scorer.score(c.unit, c.rank, sections[c.section], c.named), n, c.unit)
            for n, c in enumerate(candidates)
        ),
        key=lambda t: (-t[0], t[1]),
    )


def _opening(
    scorer: Scorer, candidates: Sequence[Candidate], best: Unit, named: list[Unit]
) -> tuple[_Draft, Unit]:
    """The answer's opening: the fact lists of the subjects the question names (they are what
    it asks about), the best unit, and then the rest of its section when that is short or, when
    the question reports a problem, the unit that follows it; and the best unit as stated."""
    if best.kind == "facts":
        best = scorer.facts_first(best)
    chosen = list({u.text: u for u in [*named, best]}.values())
    draft = _Draft(chosen, MAX_WORDS - sum(len(u.text.split()) for u in chosen))
    section = [
        c.unit for c in candidates if c.unit.ref == best.ref and c.unit.kind in ("sentence", "item", "row")
    ]
    if best.kind not in ("facts", "table") and sum(len(u.text.split()) for u in section) <= SHORT_SECTION:
        # a short section is given whole, in its own order: it opens with what it is about
        draft.units = [u for u in chosen if u is not best] + section
        draft.budget -= sum(len(u.text.split()) for u in section if u is not best)
    elif best.kind in ("sentence", "item") and scorer.shape.report:
        # what follows the best unit: a question restating a problem matches the sentence that
        # describes it, and the next ones say what to do about it
        for u in [u for u in section if u.pos > best.pos][:FOLLOW]:
            draft.offer(u)
    return draft, best


def _add_part(part: Scorer, candidates: Sequence[Candidate], others: set[str], draft: _Draft) -> None:
    """The best unit for one part of a question in several parts, scored on that part's words."""
    top = max(
        (c for c in candidates if c.unit.ref not in others or c.unit.kind != "facts"),
        key=lambda c: (part.score(c.unit, c.rank, part.coverage(c.section), c.named), -c.rank),
    ).unit
    if top.kind == "facts":
        top = part.facts_first(top)
    if top.kind != "steps":
        draft.offer(top)


def variants(scorer: Scorer, docs: Mapping[str, SourceDoc], ref: str) -> list[str]:
    """The refs of the sibling sections of ``ref``'s that answer for another thing the question
    names beside the one its section is headed by: 'Mine's a v1.0 and my neighbour's is a v1.1'
    under 'Express v1.1+' and 'Express v1.0', or 'soft reset' and 'hard reset'. The two headings
    are alike (they share a word and differ by at most ``VARIANT`` each), and each holds a
    question word the other lacks."""
    path, _, anchor = ref.partition("#")
    doc = docs.get(path)
    here = doc and next((s for s in doc.sections if s.anchor == anchor), None)
    if not here or not here.path:
        return []
    own, mine = scorer.held(here.heading), _heading_words(here.heading)
    out = []
    for s in doc.sections:
        if s is here or s.path[:-1] != here.path[:-1] or not s.anchor:
            continue
        theirs, words_of = scorer.held(s.heading), _heading_words(s.heading)
        alike = mine & words_of and len(mine - words_of) <= VARIANT and len(words_of - mine) <= VARIANT
        if alike and theirs - own and own - theirs:
            out.append(f"{path}#{s.anchor}")
    return out


def _heading_words(heading: str) -> set[str]:
    return {stem(w) for w in words(plain_inline(heading)) if w not in STOPWORDS}


def _add_best_of(ref: str, scored: Sequence[tuple[float, int, Unit]], draft: _Draft) -> None:
    """The best unit of section ``ref`` that the answer has room for, unless it already gives one."""
    if any(u.ref == ref for u in draft.units):
        return
    for _, _, unit in scored:
        if unit.ref == ref and unit.kind != "steps" and len(unit.text.split()) <= draft.budget:
            draft.offer(unit)
            return


def _add_support(
    scorer: Scorer,
    rest: Sequence[tuple[float, Unit]],
    best: Unit,
    best_score: float,
    others: set[str],
    draft: _Draft,
) -> None:
    """Support: the units scoring nearly as well as the best (of its own section, less nearly),
    the best first, counting what each adds to what the answer already says."""
    said = scorer.held(" ".join(u.text for u in draft.units))
    rest = [(s, u) for s, u in rest if u.kind != "steps" and not (u.kind == "facts" and u.ref in others)]
    while len(draft.units) < MAX_UNITS and draft.budget > 0:
        pick = None
        for s, u in rest:
            floor = (SAME_SUPPORT if u.ref == best.ref else SUPPORT) * best_score
            value = s + GAIN * scorer.gain(u, said)
            if value < floor or (pick and value <= pick[0]):
                continue
            if len(u.text.split()) > draft.budget or _repeats(u, draft.units):
                continue
            pick = (value, u)
        if pick is None:
            break
        draft.add(pick[1])
        said |= scorer.held(pick[1].text)


def whole_lists(chosen: Sequence[Unit], units: Sequence[Unit]) -> list[Unit]:
    """``chosen`` with two or more items of one short list (or rows of one short table) given as
    that list whole, in its own order, where the first of them stood."""
    wholes = {(u.ref, u.block): u for u in units if u.kind in ("list", "table")}
    members: dict[tuple[str, int], int] = {}
    for u in chosen:
        if u.kind in ("item", "row") and (u.ref, u.block) in wholes:
            members[u.ref, u.block] = members.get((u.ref, u.block), 0) + 1
    out: list[Unit] = []
    for u in chosen:
        key = (u.ref, u.block)
        if u.kind in ("item", "row") and members.get(key, 0) >= 2:
            if wholes[key] not in out:
                out.append(wholes[key])
            continue
        out.append(u)
    return out


def _repeats(unit: Unit, chosen: Sequence[Unit]) -> bool:
    """Whether ``unit`` says what a chosen unit says: the same text, or a row of a chosen table."""
    for c in chosen:
        if unit.text in c.text or c.text in unit.text:
            return True
        whole = {unit.kind, c.kind} & {"table", "list"}
        if whole and unit.block >= 0 and unit.ref == c.ref and unit.block == c.block:
            return True
        if unit.kind == c.kind == "facts" and unit.ref == c.ref:  # one fact list, reordered
            return True
    return False


__all__ = ["Scorer", "Shape", "Unit", "compose", "fact_units", "section_units"]
