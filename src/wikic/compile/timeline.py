"""Time made visible: which stated facts a newer source changed, and what changed, fact by fact.

A *change statement* is a sentence of a dated source that states a new value next to the old one
('up to 21 days, up from 14', '15% instead of 20%', 'from 14 days to 21', 'replaces the 45-day
window'). It makes older statements of the old value, about the same thing, out of date:

- an *older statement* is a sentence of a source dated before the change statement's, with the
  old value in the same unit, that shares at least two distinctive words with the change's context
  (its sentence, section heading and document title);
- *chains* link changes of one fact (30 → 45 → 60 days) for ``wiki/changes.md``.

Declared version chains (``supersedes``) are handled by the plan: whole documents are quoted in
dated notes. This module covers what no one declared.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..core.bm25 import tokens
from ..core.markdown import (
    IMAGE_MARKUP,
    STOPWORDS,
    Section,
    code_lines,
    is_caption,
    is_table_start,
    plain_inline,
    readable,
    split_sentences,
)
from ..core.models import SourceDoc
from .citations import stem

DATE_FIELDS = ("published_at", "published", "date", "updated_at", "updated")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUM = r"\d+(?:\.\d+)?"
# 'up from 14', 'down from 20%', 'instead of 20%', 'from 14 days to 21', 'replaces the 45-day policy'
_CHANGE = re.compile(
    rf"\b(?:up|down)\s+from\s+(?P<a>{_NUM})"
    rf"|\binstead\s+of\s+(?:every\s+)?(?P<b>{_NUM})"
    rf"|\b(?:extend|chang|increas|decreas|rais|lower|reduc|cut|mov|went|go(?:es)?\b)\w*\b[^.;]*?"
    rf"\bfrom\s+(?P<c>{_NUM})(?P<cu>\s*(?:%|[a-zA-Z]+))?\s+to\s+(?:up\s+to\s+)?(?P<c2>{_NUM})"
    rf"|\breplac\w*\s+(?:the|our|its)?\s*(?:old\s+|earlier\s+|previous\s+)?(?P<d>{_NUM})[- ]",
    re.IGNORECASE,
)
MIN_SHARED = 2  # distinctive words two statements about one fact share, at least
MIN_OVERLAP = 0.4  # ... and as a share of the smaller statement's distinctive words

_UNIT_WORDS = {
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "hour": "hour",
    "hours": "hour",
    "hr": "hour",
    "hrs": "hour",
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "mins": "minute",
    "second": "second",
    "seconds": "second",
    "sec": "second",
    "mm": "mm",
    "millimetre": "mm",
    "millimetres": "mm",
    "millimeter": "mm",
    "millimeters": "mm",
    "cm": "cm",
    "centimetre": "cm",
    "centimetres": "cm",
    "centimeter": "cm",
    "centimeters": "cm",
    "m": "m",
    "metre": "m",
    "metres": "m",
    "meter": "m",
    "meters": "m",
    "inch": "inch",
    "inches": "inch",
    "ft": "ft",
    "feet": "ft",
    "foot": "ft",
    "l": "l",
    "litre": "l",
    "litres": "l",
    "liter": "l",
    "liters": "l",
    "ml": "ml",
    "w": "w",
    "watt": "w",
    "watts": "w",
    "v": "v",
    "volt": "v",
    "volts": "v",
    "kg": "kg",
    "g": "g",
    "grams": "g",
    "lb": "lb",
    "lbs": "lb",
    "%": "%",
    "percent": "%",
    "°c": "°c",
    "°f": "°f",
}
_NUM = r"\d+(?:\.\d+)?"
# '60 days', '45-day', '8–10 cm', '12 to 18 hours', '$179'
_QUANTITY = re.compile(
    rf"(?<![\w.,])(?:({_NUM})\s*(?:[–-]|to)\s*)?({_NUM})(?:\s*|-)(%|°[CF]|[A-Za-z]+)(?![\w-])"
    rf"|\$\s?({_NUM})(?!\d)"
)
_DIGIT = re.compile(r"\d")


def quantity_spans(text: str) -> list[tuple[int, str, str]]:
    """(position, unit, value) of every number with a known unit in ``text``, in order."""
    if not _DIGIT.search(text):  # every quantity has one: most sentences are done here
        return []
    out = []
    for m in _QUANTITY.finditer(text):
        if m.group(4):
            out.append((m.start(), "usd", f"{float(m.group(4)):g}"))
            continue
        unit = _UNIT_WORDS.get(m.group(3).lower())
        if unit:
            out += [(m.start(i), unit, f"{float(m.group(i)):g}") for i in (1, 2) if m.group(i)]
    return out


def quantities(text: str) -> dict[str, frozenset[str]]:
    """{unit: values} of the numbers with a known unit in ``text``: '45-day' → {'day': {'45'}}."""
    out: dict[str, set[str]] = defaultdict(set)
    for _, unit, value in quantity_spans(text):
        out[unit].add(value)
    return {u: frozenset(v) for u, v in out.items()}


def date_of(doc: SourceDoc) -> str:
    """The date a document speaks for ('2025-10-06'), or '' when it has none."""
    for name in DATE_FIELDS:
        m = _DATE.search(str(doc.meta.get(name) or ""))
        if m:
            return m.group()
    return ""


@dataclass(frozen=True)
class Statement:
    doc: SourceDoc
    anchor: str  # the section it is in
    text: str  # as quoted (inline Markdown removed)
    date: str


@dataclass(frozen=True)
class Change:
    """A fact a dated source changed: ``old`` → ``new`` (numbers) in ``unit``."""

    statement: Statement  # the sentence saying so
    unit: str
    old: str
    new: str
    context: frozenset[str]  # distinctive word stems of the sentence and its heading
    scope: frozenset[str] = frozenset()  # 'while you are away', 'during vacation mode': when it holds


@dataclass
class Timeline:
    changes: list[Change] = field(default_factory=list)
    # sentence text → (the change that outdates it, the outdated statement), per layer-1 path
    outdated: dict[str, dict[str, tuple[Change, Statement]]] = field(default_factory=dict)

    def chains(self) -> list[list[Change]]:
        """Changes of one fact linked end to end (30 → 45, 45 → 60), each chain oldest first,
        newest chain first."""
        changes = sorted(self.changes, key=lambda c: (c.statement.date, c.statement.doc.path))
        chains: list[list[Change]] = []
        for c in changes:
            for chain in chains:
                last = chain[-1]
                same = last.old == c.old and last.new == c.new  # a second source saying it again
                related = last.unit == c.unit and _related(last.context, c.context)
                if related and (last.new == c.old or same):
                    if not same:
                        chain.append(c)
                    break
            else:
                chains.append([c])
        return sorted(chains, key=lambda ch: ch[-1].statement.date, reverse=True)


def sentences_of(doc: SourceDoc) -> list[tuple[str, str]]:
    """(section anchor, sentence) of every paragraph sentence and list item of a document, inline
    Markdown removed (tables, code, images and their captions are not sentences: '![MicroSD card
    slot on the Raspberry Pi Zero W](…)' says nothing of which Pi a kit has)."""
    out = []
    for section in doc.sections:
        chunks: list[list[str]] = [[]]
        lines = list(code_lines(readable(section.text).split("\n")))
        above = ""
        for i, (_, line, code) in enumerate(lines):
            stripped = IMAGE_MARKUP.sub("", line).strip().lstrip(">").strip()
            nxt = lines[i + 1][1] if i + 1 < len(lines) else ""
            caption = is_caption(line, above)
            above = line if line.strip() else above
            if (
                code
                or caption
                or not stripped
                or "|" in stripped
                and (is_table_start(line, nxt) or stripped.startswith("|"))
            ):
                chunks.append([])
                continue
            item = _ITEM.match(stripped)
            if item:
                chunks += [[item.group(1)], []]
                continue
            chunks[-1].append(stripped)
        for chunk in chunks:
            if chunk:
                out += [(section.anchor, s) for s in split_sentences(plain_inline(" ".join(chunk)))]
    return out


_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)$")


# Words of time and change, which any two statements about changes share.
_TIME_WORDS = frozenset(
    stem(w)
    for w in "now today still currently new newer longer until since instead introduced released "
    "extends extended changed replaces replaced up down from later earlier run runs".split()
)


def _context(heading: str, sentence: str, common: set[str]) -> frozenset[str]:
    """The distinctive word stems of a statement and its section heading (no numbers, units,
    words of time and change, or words most documents use)."""
    words = tokens(f"{heading} {sentence}")
    return frozenset(
        s
        for w in words
        if not w[0].isdigit()
        and w not in _UNIT_WORDS
        and (s := stem(w)) not in common
        and s not in _TIME_WORDS
    )


def _related(a: frozenset[str], b: frozenset[str]) -> bool:
    shared = len(a & b)
    return shared >= MIN_SHARED and shared >= MIN_OVERLAP * min(len(a), len(b))


def document_frequencies(docs: list[SourceDoc]) -> Counter:
    """How many documents use each word stem (their title and body)."""
    df: Counter = Counter()
    for d in docs:
        df.update({stem(w) for w in tokens(d.title + " " + d.body)})
    return df


def timeline(
    docs: list[SourceDoc],
    superseded: dict[str, str],
    said: dict[str, list[tuple[str, str]]] | None = None,
    df: Counter | None = None,
) -> Timeline:
    """Change statements among the current documents, and the older statements they outdate
    (``said``: each document's ``sentences_of``, and ``df``: ``document_frequencies``, when
    already counted)."""
    current = [d for d in docs if d.path not in superseded]
    df = df if df is not None else document_frequencies(current)
    common = {w for w, n in df.items() if n > max(3, len(current) // 4)}  # words that say little
    said = said if said is not None else {d.path: sentences_of(d) for d in current}
    sections = {(d.path, s.anchor): s for d in current for s in d.sections}
    out = Timeline()
    for doc in current:
        when = date_of(doc)
        if not when:
            continue
        for anchor, sentence in said.get(doc.path, ()):
            section = sections[(doc.path, anchor)]
            for m in _CHANGE.finditer(sentence):
                change = _change(doc, section, sentence, m, when, common)
                if change is not None:
                    out.changes.append(change)
    if out.changes:
        _outdate(out, current, said, sections, common)
    return out


def _outdate(
    out: Timeline,
    current: list[SourceDoc],
    said: dict[str, list[tuple[str, str]]],
    sections: dict[tuple[str, str], Section],
    common: set[str],
) -> None:
    """The older statements each change outdates: every dated sentence is read once for the old
    values the changes name. Changes that say the same (unit, values, context and scope, as a
    boilerplate line repeated by many documents does) are weighed against each such sentence
    once, so the cost grows with the sentences and not with their product with the changes; a
    sentence goes to the first change (in ``out.changes``'s order) that outdates it."""
    stating = _stating(out, current, said)
    alike: dict[tuple, list[tuple[int, Change]]] = defaultdict(list)
    for i, c in enumerate(out.changes):
        alike[(c.unit, c.old, c.new, c.context, c.scope)].append((i, c))
    whole: dict[tuple[str, str], dict[str, frozenset[str]]] = {}  # a section's own quantities
    heard: dict[tuple[str, str, str], tuple[frozenset[str], set[str]]] = {}  # a sentence's context, words
    found: list[tuple[int, int, Change, Statement]] = []
    for (unit, old, new, context, scope), members in alike.items():
        for pos, (doc, anchor, sentence) in enumerate(stating.get((unit, old), ())):
            when = date_of(doc)
            first = next(
                (
                    ic
                    for ic in members
                    if when < ic[1].statement.date and doc.path != ic[1].statement.doc.path
                ),
                None,
            )
            if first is None:
                continue
            section = sections[(doc.path, anchor)]
            key = (doc.path, anchor, sentence)
            if key not in heard:
                said_words = {stem(w) for w in tokens(f"{section.heading} {sentence}")}
                heard[key] = (_context(section.heading, sentence, common), said_words)
            own_context, words_said = heard[key]
            if not _related(own_context, context):
                continue
            if scope and not scope & words_said:
                continue  # the change holds only 'while you are away'; this is about the rest
            if (doc.path, anchor) not in whole:
                whole[(doc.path, anchor)] = quantities(section.heading + " " + plain_inline(section.text))
            if new in whole[(doc.path, anchor)].get(unit, ()):
                continue  # its own section states the new value too: it tells the history
            found.append((first[0], pos, first[1], Statement(doc, section.anchor, sentence, when)))
    for _, _, c, st in sorted(found, key=lambda f: f[:2]):
        out.outdated.setdefault(st.doc.path, {}).setdefault(st.text, (c, st))


def _stating(
    out: Timeline, current: list[SourceDoc], said: dict[str, list[tuple[str, str]]]
) -> dict[tuple[str, str], list[tuple[SourceDoc, str, str]]]:
    """The dated sentences stating an old value some change names: {(unit, value): [(document,
    anchor, sentence)]}, in document order."""
    wanted = {(c.unit, c.old) for c in out.changes}
    stating: dict[tuple[str, str], list[tuple[SourceDoc, str, str]]] = defaultdict(list)
    for doc in current:
        if not date_of(doc):
            continue
        for anchor, sentence in said.get(doc.path, ()):
            for unit, values in quantities(sentence).items():
                for value in values:
                    if (unit, value) in wanted:
                        stating[(unit, value)].append((doc, anchor, sentence))
    return stating


def _change(doc, section, sentence: str, m: re.Match, when: str, common: set[str]) -> Change | None:
    """The change a matched phrase states: the old value from the phrase; the unit and the new
    value from the sentence, nearest before the phrase ('21 days, up from 14'), or, for 'replaces
    the 45-day …', from its section. 'up from 14' borrows the unit of the value it follows."""
    old = f"{float(next(v for v in m.group('a', 'b', 'c', 'd') if v is not None)):g}"
    if m.group("b") is not None and not _NOW.search(sentence):
        return None  # 'X instead of Y' is a choice, unless something now differs ('now triggers at …')
    replaces = m.group("d") is not None
    text = section.heading + " " + plain_inline(section.text) if replaces else sentence
    spans = [(pos, u, v) for pos, u, v in quantity_spans(text) if v != old]
    units = {u for _, u, v in quantity_spans(text) if v == old}
    if m.group("c2"):
        new = f"{float(m.group('c2')):g}"
        candidates = [(pos, u, v) for pos, u, v in spans if v == new]
    elif replaces:
        candidates = [x for x in spans if x[1] in units]
    else:
        before = [x for x in spans if x[0] < m.start() and (x[1] in units or not units)]
        candidates = before[-1:] or [x for x in spans if x[1] in units or not units]
    if not candidates:
        return None
    _, unit, new = candidates[0]
    context = _context(section.heading, text, common)
    scope = frozenset(stem(w.lower()) for w in _SCOPE.findall(sentence) if w.lower() not in STOPWORDS)
    return Change(Statement(doc, section.anchor, sentence, when), unit, old, new, context, scope)


_NOW = re.compile(r"\b(?:now|no longer|from today|starting|this release|changed|new)\b", re.IGNORECASE)
# A condition that limits a change: 'while you are away', 'during vacation mode'.
_SCOPE = re.compile(r"\b(?:during|while(?:\s+you\s+are)?|whenever)\s+(\w+)", re.IGNORECASE)


def quantity(value: str, unit: str) -> str:
    """'15', '%' → '15%'; '45', 'day' → '45 days'; '12', 'usd' → '$12'."""
    if unit == "%":
        return f"{value}%"
    if unit == "usd":
        return f"${value}"
    plural = unit + (
        "s" if value != "1" and unit in ("day", "week", "month", "year", "hour", "minute", "second") else ""
    )
    return f"{value} {plural}"
