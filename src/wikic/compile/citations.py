"""Citation verification: a cited section must exist and must support the sentence.

The cited text is the cited section (with its sub-sections) plus its document's title and
frontmatter fields, names and values, which are part of the source. A sentence is supported when
it quotes the cited text (verbatim, inline Markdown aside, from the start of a sentence, list item
or line) or when nothing it says is missing from it:

- **numbers**: every number occurs in the cited text with the same unit (``14 litres`` is not
  ``14 days``), next to the same word on at least one side, so two numbers cannot trade places;
- **polarity**: a negation in the sentence negates the same word in the cited text, and a word
  the cited text only states negated ("does not need a hub") is not stated plainly;
- **content words**: nearly every content word occurs in the cited text (``min_overlap``, by
  default 0.9: one word in ten may be a rewording), so no unsupported clause rides along;
- **addresses**: every URL, e-mail address and domain name occurs in the cited text;
- **markup**: no raw HTML.

``check`` is called on every sentence of every compile and of every ``wikic check``, so the cited
text is analysed once per citation and each test is a set or dictionary lookup.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

from ..core.markdown import IMAGE_MARKUP, STOPWORDS, plain_inline
from ..core.models import SourceDoc
from .claims import (
    DIRECTION_OF,
    Item,
    canonical,
    clauses,
    direction_of,
    facts,
    name_key,
    reword,
    scan,
    statements,
    word_stem,
)
from .draft import Citation

DEFAULT_MIN_OVERLAP = 0.9
ANCHORS = 3  # the words around a number or negator compared (a rewording may drop two)


@lru_cache(maxsize=1 << 16)  # a few thousand distinct words cover a whole KB
def stem(word: str) -> str:
    """A deliberately small stemmer so 'litres'/'litre' and 'planting'/'plant' match."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


# -- tokens ----------------------------------------------------------------------------------------

NEGATORS = frozenset("not no never none nothing nobody nowhere neither nor cannot without avoid".split())
_SPELLED_UNITS = frozenset("celsius fahrenheit centigrade".split())
# Words that start a sentence without naming anything ('However, …').
LINKING = frozenset(
    "however additionally also furthermore moreover typically generally usually overall instead "
    "otherwise meanwhile finally therefore thus likewise similarly note please".split()
)
_SKIP = STOPWORDS | frozenset("it's that's there's here's what's you're we're they're i'm let's".split())

_UNIT_ALIASES = {
    "l": "l litre litres liter liters ltr",
    "ml": "ml millilitre millilitres milliliter milliliters",
    "mm": "mm millimetre millimetres millimeter millimeters",
    "cm": "cm centimetre centimetres centimeter centimeters",
    "m": "m metre metres meter meters",
    "km": "km kilometre kilometres kilometer kilometers",
    "in": "inch inches",
    "ft": "ft foot feet",
    "g": "g gram grams",
    "kg": "kg kilo kilos kilogram kilograms",
    "lb": "lb lbs pound pounds",
    "oz": "oz ounce ounces",
    "w": "w watt watts",
    "kw": "kw kilowatt kilowatts",
    "kwh": "kwh",
    "wh": "wh",
    "v": "v volt volts",
    "mah": "mah",
    "hz": "hz hertz",
    "khz": "khz",
    "mhz": "mhz",
    "ghz": "ghz",
    "%": "% percent pct",
    "°c": "°c celsius",
    "°f": "°f fahrenheit",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "day": "d day days",
    "week": "wk wks week weeks",
    "month": "mo month months",
    "year": "yr yrs year years",
    "usd": "usd $ dollar dollars",
    "eur": "eur € euro euros",
    "gbp": "gbp £",
    "rpm": "rpm",
    "db": "db",
    "lux": "lux",
    "lm": "lm lumen lumens",
    "ppm": "ppm",
    "mb": "mb",
    "gb": "gb",
    "kb": "kb",
    "tb": "tb",
    "px": "px",
}
UNITS = {alias: unit for unit, aliases in _UNIT_ALIASES.items() for alias in aliases.split()}
UNIT_NAMES = frozenset(UNITS.values())

_DATE = r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?(?:Z|[+-]\d\d:?\d\d)?)?(?!\d)"
_TOKEN = re.compile(
    _DATE + r"|\d+(?:[.,]\d+)*(?:-\d+(?:[.,]\d+)*)*|[^\W\d_]+(?:['’][^\W\d_]+)*|[%$€£]|°\s?[CcFf](?![^\W\d_])"
    r"|[.!?;](?=\s|$)|→|->|⟶"
)
_ADDRESS = re.compile(
    r"(?:https?://|www\.)[^\s<>()\[\]\"'`]+"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\b(?:[a-z0-9][a-z0-9-]*\.)+[a-z]{2,}\b(?:/[^\s<>()\[\]\"'`]*)?",
    re.IGNORECASE,
)
RAW_HTML = re.compile(r"<(?:!--|/?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>)")
_IMAGE = IMAGE_MARKUP
_BOUNDARY_BEFORE = re.compile(r"(?:^|[.!?:;|)\]\"'”’]|(?:^|\s)(?:[-*+>]|\d+[.)]))\s*$")


@dataclass(frozen=True)
class Quantity:
    """One number as written: its value and unit (normalised, or None); the words around it
    (nearest first, up to the next number or the end of the sentence); the units named in the
    words just before it (``tank_capacity_l: 4.0`` gives 4.0 in litres); the number right after
    it when only stop words or an 'x' stand between ('12 to 18', '45 x 17'); and where it stands
    (a run of text, unique per analysis, and its position there)."""

    value: str
    unit: str | None
    left: tuple[str, ...]
    right: tuple[str, ...]
    units_before: frozenset[str]
    next_value: str | None
    run: int
    pos: int


@dataclass(frozen=True)
class Negation:
    """A negator with the tokens before it (nearest first) and the two after it (what it
    negates), within its sentence, and the pair of tokens it stands between."""

    left: tuple[str, ...]
    right: frozenset[str]
    pair: tuple[str, str]
    phrase: tuple[str, str] = ("<end>", "<end>")  # the two words after it, in order


@dataclass(frozen=True)
class Said:
    """What one sentence says, to compare a restatement with it: its content words (direction
    words aside), the words its negators negate, its direction groups, its words written with a
    capital, and its first content word (capitalised wherever it stands)."""

    words: frozenset[str]
    negated: frozenset[str]
    groups: frozenset[str]
    names: frozenset[str]
    first: str


@dataclass
class Analysis:
    """What a text says, in the form the checks compare."""

    stems: set[str] = field(default_factory=set)  # content words
    quantities: dict[str, list[Quantity]] = field(default_factory=dict)
    negations: list[Negation] = field(default_factory=list)
    pairs: set[tuple[str, str]] = field(default_factory=set)  # adjacent tokens, no negator between
    plain_starts: set[tuple[str, str]] = field(default_factory=set)  # ... nor just before the first
    addresses: set[str] = field(default_factory=set)  # URLs, e-mail addresses, domain names
    directions: set[tuple[str, str, str]] = field(default_factory=set)  # (group, word before, after)
    capitals: set[str] = field(default_factory=set)  # words written with a capital, lower-cased
    capital_stems: set[str] = field(default_factory=set)  # ... as the pairs hold them
    sentences: list[Said] = field(default_factory=list)

    def add(self, other: Analysis) -> None:
        self.stems |= other.stems
        self.directions |= other.directions
        self.capitals |= other.capitals
        self.capital_stems |= other.capital_stems
        for value, qs in other.quantities.items():
            self.quantities.setdefault(value, []).extend(qs)
        self.negations += other.negations
        self.pairs |= other.pairs
        self.plain_starts |= other.plain_starts
        self.sentences += other.sentences


# Token kinds: 'n' number (a range such as '12-20' or '555-0100' is one), 'd' date, 'u' a number's unit, 'c' a currency sign (the unit of the
# number after it), 'x' negator, 's' stop word, 'b' end of a sentence (or an arrow), 'w' content
# word (its stem, or the unit it names).
Token = tuple[str, str]
END = "<end>"  # stands for the end of a sentence in a pair of tokens


def _tokens(text: str) -> tuple[list[Token], set[int]]:
    """The tokens of ``text``, and which of them are content words written with a capital."""
    out: list[Token] = []
    capital: set[int] = set()
    text = reword(text).replace("’", "'")
    end = 0  # where the previous token ended
    for m in _TOKEN.finditer(text):
        tok = m.group()
        gap, end = end, m.end()
        first = tok[0]
        if first.isdigit():
            out.append(("n" if len(tok) < 10 or tok[4] != "-" else "d", tok.replace(",", ".")))
            continue
        if first.isalpha() and not (out and out[-1][0] == "n"):  # a word, and no number's unit
            token = _word(tok.lower())
            if token[0] == "w" and first.isupper():
                capital.add(len(out))
            out.append(token)
            continue
        low = tok.lower()
        if low[0] == "°":
            low = "°" + low[-1]
        if low in (".", "!", "?", ";", "→", "->", "⟶"):  # an arrow ('20% → 15%') separates two statements
            out.append(("b", low))
        elif low in "$€£":
            out.append(("c", UNITS[low]))
        elif (
            (low in UNITS or tok in ("C", "F"))
            and out
            and out[-1][0] == "n"
            and not text[gap : m.start()].strip(" -\u00a0")  # '3) Day Neutral': no unit
            and not text[end : end + 1].isdigit()  # '1.2, v1.3': v is no unit of 1.2
        ):  # '15 C' is 15 °C
            out.append(("u", UNITS.get(low) or UNITS["°" + low]))
        else:
            token = _word(low)
            if token[0] == "w" and tok[0].isupper():
                capital.add(len(out))
            out.append(token)
    return out, capital


@lru_cache(maxsize=1 << 16)
def _word(low: str) -> Token:
    """A lower-cased word's token where it is no unit of a number: a negator, a stop word or a
    content word (its value)."""
    if low in NEGATORS or low.endswith("n't"):
        return ("x", low)
    if low in _SKIP or low == "%":
        return ("s", low)
    return ("w", word_value(low[:-2] if low.endswith("'s") else low))


@lru_cache(maxsize=1 << 16)
def word_value(low: str) -> str:
    """What a lower-cased content word stands for: the unit it names, or its stem (a synonym's
    as the first word of its group: 'employs' → 'use')."""
    return UNITS.get(low) or canonical(word_stem(low))


def _window(tokens: list[Token], i: int, step: int, numbers: bool) -> tuple[str, ...]:
    """Up to ``ANCHORS`` content tokens from ``i`` in direction ``step``, nearest first, within
    the sentence; a number ends the window, unless ``numbers`` counts it as a token."""
    out: list[str] = []
    i += step
    while 0 <= i < len(tokens) and len(out) < ANCHORS:
        kind, text = tokens[i]
        if kind == "b" or (kind in ("n", "d") and not numbers):
            break
        if kind in ("n", "d", "w"):
            out.append(text)
        i += step
    return tuple(out)


_runs = itertools.count()
# A model number or version: letters run into digits ('GPIO24', 'X200', 'v1.4', 'WPA2').
_MODEL = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z-]*\d(?:[\w.-]*\w)?")
_CAPITAL = re.compile(r"(?<![^\W\d_])[A-Z][^\W\d_]*(?:['’][^\W\d_]+)*")


@lru_cache(maxsize=4096)  # a sentence is read whole, by statement and by clause, often the same text
def analyse(text: str, addresses: bool = True) -> Analysis:
    """Analyse one run of text (a paragraph, a field, a sentence); nothing links across runs.
    The result is shared by every caller that analyses the same text: never change it (``add`` it
    to a new ``Analysis``, or ``replace`` what differs)."""
    a = Analysis()
    if addresses:
        a.addresses = {_address(m.group()) for m in _ADDRESS.finditer(text)}
    tokens, capital = _tokens(text)
    a.capitals = {name_key(w) for w in _CAPITAL.findall(text)}
    a.capital_stems = {word_value(w) for w in a.capitals}
    run = next(_runs)
    for i, (kind, value) in enumerate(tokens):
        if kind == "w":
            a.stems.add(value)
        elif kind == "d":  # a date is matched whole, wherever it stands (a dated note's label)
            a.quantities.setdefault(value, []).append(
                Quantity(value, "date", (), (), frozenset(), None, run, i)
            )
        elif kind == "n":
            unit = tokens[i + 1][1] if i + 1 < len(tokens) and tokens[i + 1][0] == "u" else None
            if unit is None and i and tokens[i - 1][0] == "c":  # '$179'
                unit = tokens[i - 1][1]
            before = frozenset(t for k, t in tokens[max(0, i - 6) : i] if k == "w" and t in UNIT_NAMES)
            nxt = next(
                ((k, t) for k, t in tokens[i + 1 :] if k in ("n", "b") or (k == "w" and t != "x")), None
            )
            a.quantities.setdefault(value, []).append(
                Quantity(
                    value,
                    unit,
                    _window(tokens, i, -1, False),
                    _window(tokens, i, 1, False),
                    before,
                    nxt[1] if nxt and nxt[0] == "n" else None,
                    run,
                    i,
                )
            )
    # Pairs of neighbouring tokens in each sentence (the last one with END), and the negators.
    start = 0
    for end in [*(i for i, (k, _) in enumerate(tokens) if k == "b"), len(tokens)]:
        _read_sentence(a, tokens[start:end], {i - start for i in capital if start <= i < end})
        start = end + 1
    return a


def _read_sentence(a: Analysis, sentence: list[Token], capital: set[int]) -> None:
    """Add what one sentence of a text says to ``a``: what it says (``Said``), the pairs of its
    neighbouring content tokens, its negations and its direction words."""
    content = [i for i, (k, _) in enumerate(sentence) if k in ("n", "w")]
    negators = [i for i, (k, _) in enumerate(sentence) if k == "x"]
    groups = _groups(sentence)
    if content:
        a.sentences.append(_said(sentence, content, capital, groups, negators))
    if negators:
        _negated_pairs(a, sentence, content)
    else:  # no negator: every pair is stated plainly
        for n, i in enumerate(content):
            pair = (sentence[i][1], sentence[content[n + 1]][1] if n + 1 < len(content) else END)
            a.pairs.add(pair)
            a.plain_starts.add(pair)
    for i in negators:
        left = _window(sentence, i, -1, True)
        after = [t for k, t in sentence[i + 1 :] if k in ("n", "w")][:2]
        if left:
            pair = (left[0], after[0] if after else END)
        elif after:
            pair = (after[0], after[1] if len(after) > 1 else END)
        else:
            continue
        phrase = (after[0], after[1]) if len(after) > 1 else (END, END)
        a.negations.append(Negation(left, frozenset(after), pair, phrase))
    a.directions |= _directions(sentence, groups)


def _negated_pairs(a: Analysis, sentence: list[Token], content: list[int]) -> None:
    """The pairs of a sentence with a negator: no negator between a pair's words, and for a
    plain start, none just before the first either."""
    negated = False
    for n, i in enumerate(content):
        if n == 0:
            negated = any(k == "x" for k, _ in sentence[:i])
        nxt = content[n + 1] if n + 1 < len(content) else len(sentence)
        gap_negated = any(k == "x" for k, _ in sentence[i + 1 : nxt])
        pair = (sentence[i][1], sentence[nxt][1] if nxt < len(sentence) else END)
        if not gap_negated:
            a.pairs.add(pair)
            if not negated:
                a.plain_starts.add(pair)
        negated = gap_negated


@lru_cache(maxsize=4096)
def _scanned(text: str) -> list[list[Item]]:
    """``text``'s words by fact, as ``scan`` reads them (shared by its callers: never change it)."""
    return scan(reword(text), UNITS)


def _said(
    sentence: list[Token],
    content: list[int],
    capital: set[int],
    groups: list[str | None],
    negators: list[int],
) -> Said:
    """``groups``: each token's direction group (see ``_groups``; a number has none);
    ``negators``: where its negators stand."""
    return Said(
        frozenset(sentence[i][1] for i in content if not groups[i]),
        _negated(sentence, negators),
        frozenset(g for g in groups if g),
        frozenset(sentence[i][1] for i in capital),
        sentence[0][1] if sentence[0][0] == "w" else "",
    )


def _groups(sentence: list[Token]) -> list[str | None]:
    """The direction group of each token of a sentence (a word or a stop word), else None."""
    return [DIRECTION_OF.get(t) if k in ("w", "s") else None for k, t in sentence]


def _negated(sentence: list[Token], negators: list[int]) -> frozenset[str]:
    """What each negator of a sentence (at ``negators``) negates: the content word after it, or
    the one before it at the end of the sentence ('mould does not')."""
    out = set()
    for i in negators:
        after = next((t for k, t in sentence[i + 1 :] if k in ("n", "w")), None)
        before = next((t for k, t in reversed(sentence[:i]) if k in ("n", "w")), END)
        out.add(after or before)
    return frozenset(out)


def _directions(sentence: list[Token], groups: list[str | None]) -> set[tuple[str, str, str]]:
    """Each direction or comparison word of a sentence as (its group, the content word or
    number before it, the one after it; END at the edge)."""
    out = set()
    for i, group in enumerate(groups):
        if group:
            left = next((t for k, t in reversed(sentence[:i]) if k in ("n", "w")), END)
            right = next((t for k, t in sentence[i + 1 :] if k in ("n", "w")), END)
            out.add((group, left, right))
    return out


def _address(text: str) -> str:
    return text.lower().rstrip(".,;:!?)'\"").removeprefix("https://").removeprefix("http://")


def _normal(text: str) -> str:
    return " ".join(text.replace("’", "'").split())


# -- the cited text --------------------------------------------------------------------------------


_FIELD_UNITS = {"l": "l", "ml": "ml", "w": "W", "cm": "cm", "mm": "mm", "m": "m", "kg": "kg", "g": "g"}
_FIELD_UNITS |= {"usd": "USD", "eur": "EUR", "c": "°C", "f": "°F", "h": "h", "pct": "%"}


def _field_text(key: str, value: object) -> str:
    """A frontmatter field as a line: its name in words with the unit its suffix names, and its
    value as a fact list shows it ('ideal_temp_c: 15-24' → 'ideal temp c (°C): 15-24')."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    elif isinstance(value, list):
        value = ", ".join(_field_text("", v) for v in value if not isinstance(v, (dict, list)))
    if not key:
        return str(value)
    unit = key.rpartition("_")[2].lower() if "_" in key else ""
    name = key.replace("_", " ") + (f" ({_FIELD_UNITS[unit]})" if unit in _FIELD_UNITS else "")
    return f"{name}: {value}"


class Cited:
    """One citation's text: ``flat`` for verbatim quotes; the ``analysis`` and the ``raw`` text
    (lower-cased, link targets kept, for addresses) are only worked out for a sentence that is
    no quote."""

    def __init__(self, flat: str, starts: frozenset[int], plain: str, rest: list[str], body: str):
        self.flat = flat
        self.starts = starts  # offsets in ``flat`` where a line begins
        self._plain = plain  # the section's text, images as their alt text
        self._rest = rest  # the title and the frontmatter fields
        self._body = body  # the section's Markdown

    @cached_property
    def analysis(self) -> Analysis:
        analysis = Analysis()
        plain = self._plain
        for run in [*re.split(r"\n\s*\n", plain), *table_rows(plain), *map(plain_inline, self._rest)]:
            analysis.add(analyse(run, addresses=False))
            for part in statements(run) if ", " in run else ():  # what a restatement may take apart
                analysis.sentences += analyse(part, addresses=False).sentences
        return analysis

    @cached_property
    def facts(self) -> dict[str, list[frozenset[str]]]:
        """Per number of the cited text, the names (inside a sentence) of each fact it gives."""
        out: dict[str, list[frozenset[str]]] = {}
        for line in [*self._plain.split("\n"), *map(plain_inline, self._rest)]:
            for names, _, value in facts(_scanned(line), _inside_name):
                out.setdefault(value, []).append(frozenset(word_value(name_key(n)) for n in names))
        return out

    @cached_property
    def plain_lower(self) -> str:
        """The cited text as read (images as their alt text), lower-cased: where a model number
        is looked up."""
        return "\n".join([self._plain, *self._rest]).lower()

    @cached_property
    def raw(self) -> str:
        return "\n".join([self._body, *self._rest]).lower()

    def quotes(self, sentence: str) -> bool:
        """Whether ``sentence`` occurs verbatim, starting where a sentence, item or line starts
        and ending at a word boundary (so 'use bleach' is no quote of 'do not use bleach')."""
        if not sentence:
            return False
        at = self.flat.find(sentence)
        while at >= 0:
            end = at + len(sentence)
            starts_ok = at in self.starts or _BOUNDARY_BEFORE.search(self.flat[max(0, at - 12) : at])
            if starts_ok and (end == len(self.flat) or not self.flat[end].isalnum()):
                return True
            at = self.flat.find(sentence, at + 1)
        return False


def section_body(doc: SourceDoc, anchor: str) -> str:
    """The section's heading and lines with its sub-sections (the whole body without an anchor)."""
    if not anchor:
        body = doc.body
    else:
        parts, level = [], None
        for s in doc.sections:
            if level is None:
                if s.anchor == anchor:
                    level = s.level
                    parts.append(s.heading + "\n\n" + s.text)
            elif s.level > level:
                parts.append(s.heading + "\n\n" + s.text)
            else:
                break
        body = "\n\n".join(parts)
    return body


def field_lines(doc: SourceDoc) -> list[str]:
    """The frontmatter fields of ``doc``, one line each (bookkeeping and nested fields aside)."""
    return [
        _field_text(k, v)
        for k, v in doc.meta.items()
        if k not in ("layer0", "generated_by") and not isinstance(v, dict)
    ]


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")


def table_rows(text: str) -> list[str]:
    """Each data row of each Markdown table in ``text`` as the fact list it states, every cell
    next to its column's header ('Model: FarmBot Express; Width: 1.2m'), so a row restated that
    way reads its numbers beside the words they measure."""
    lines = text.split("\n")
    out: list[str] = []
    for i in range(len(lines) - 1):
        if not (lines[i].lstrip().startswith("|") and _TABLE_RULE.match(lines[i + 1])):
            continue
        header = _cells(lines[i])
        for line in lines[i + 2 :]:
            if not line.lstrip().startswith("|"):
                break
            pairs = zip(header, _cells(line))
            out.append("; ".join(f"{h}: {c}" if h else c for h, c in pairs if c))
    return out


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [" ".join(c.split()) for c in re.split(r"(?<!\\)\|", inner)]


class _Recent:
    """The sections cited lately in this process, whatever verifier asked: a compile verifies
    page by page and many pages quote the same sections, and a process may verify the same
    documents again (layer 1 parses each unchanged file to the same object). Keyed by the
    document object itself, held while its entry lasts; bounded, and safe across threads."""

    def __init__(self, size: int):
        self.size = size
        self.found: OrderedDict[tuple[int, str], tuple[SourceDoc, Cited]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, doc: SourceDoc, anchor: str, make: Callable[[], Cited]) -> Cited:
        key = (id(doc), anchor)
        with self.lock:
            entry = self.found.get(key)
            if entry is not None and entry[0] is doc:
                self.found.move_to_end(key)
                return entry[1]
        found = make()
        with self.lock:
            self.found[key] = (doc, found)
            self.found.move_to_end(key)
            while len(self.found) > self.size:
                self.found.popitem(last=False)
        return found


_RECENT = _Recent(1024)


def _cited(doc: SourceDoc, anchor: str, rest: list[str], rest_flat: list[str]) -> Cited:
    """What a citation of ``doc#anchor`` vouches for; ``rest`` is the document's title and fields
    as lines, ``rest_flat`` the same normalised (shared by all of its sections)."""
    body = section_body(doc, anchor)
    plain = plain_inline(body)  # images become their alt text
    quotable = plain_inline(_IMAGE.sub("", body)) if "![" in body else plain  # quotes skip images
    flat_parts = [x for x in map(_normal, quotable.split("\n")) if x] + rest_flat
    starts, pos = set(), 0
    for part in flat_parts:
        starts.add(pos)
        pos += len(part) + 1
    return Cited(" ".join(flat_parts), frozenset(starts), plain, rest, body)


# -- the verifier ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Support:
    ok: bool
    reason: str = ""


def unresolved(cite: Citation, has_anchor: Callable[[str], bool] | None) -> str | None:
    """What is wrong with where ``cite`` points, given whether its document has a heading of
    each anchor (None: there is no such document); None when it resolves."""
    if has_anchor is None:
        return f"cites {cite.path}, which does not exist"
    if cite.anchor and not has_anchor(cite.anchor):
        return f"cites #{cite.anchor}, which is not a heading of {cite.path}"
    return None


class Verifier:
    """Checks citations against the layer-1 documents it was given."""

    def __init__(
        self,
        docs: Iterable[SourceDoc],
        min_overlap: float = DEFAULT_MIN_OVERLAP,
        unreadable: set[str] = frozenset(),
    ):
        self.docs = {d.path: d for d in docs}
        self.min_overlap = min_overlap
        self.unreadable = unreadable  # files that exist but cannot be parsed: citations of them are skipped
        self._cited: dict[Citation, Cited] = {}  # this page's; the process keeps recent ones by content
        self._merged: dict[tuple[Citation, ...], Analysis] = {}
        self._rest: dict[str, tuple[list[str], list[str]]] = {}  # path → its title and fields, as lines

    def forget(self) -> None:
        """Drop what was worked out of the texts cited so far (a compile verifies page by page,
        and a page's cited texts are rarely another's)."""
        self._cited.clear()
        self._merged.clear()
        self._rest.clear()

    def resolve(self, cite: Citation) -> str | None:
        """None when the citation points at an existing file and anchor, else the problem."""
        if cite.path in self.unreadable:
            return None  # reported once, as the file's own problem
        doc = self.docs.get(cite.path)
        return unresolved(cite, None if doc is None else lambda a: doc.section(a) is not None)

    def cited(self, cite: Citation) -> Cited:
        found = self._cited.get(cite)
        if found is None:
            doc = self.docs[cite.path]
            found = self._cited[cite] = _RECENT.get(doc, cite.anchor, lambda: self._make(doc, cite.anchor))
        return found

    def _make(self, doc: SourceDoc, anchor: str) -> Cited:
        if doc.path not in self._rest:
            rest = [doc.title, *field_lines(doc)]
            # as read: a field's link is its text ('[Open these settings in the app](…)')
            self._rest[doc.path] = rest, [x for x in map(_normal, map(plain_inline, rest)) if x]
        return _cited(doc, anchor, *self._rest[doc.path])

    def cited_text(self, cite: Citation) -> str:
        return self.cited(cite).flat

    def section_text(self, cite: Citation) -> str:
        """The cited section's own text (with its sub-sections), inline Markdown removed: what a
        table cell quoted from the source is looked up in."""
        return plain_inline(section_body(self.docs[cite.path], cite.anchor))

    def cited_text_any(self, cites: tuple[Citation, ...]) -> str:
        return "\n".join(self.cited_text(c) for c in cites)

    def _analysis(self, cites: tuple[Citation, ...]) -> Analysis:
        if len(cites) == 1:
            return self.cited(cites[0]).analysis
        key = tuple(sorted(set(cites)))
        merged = self._merged.get(key)
        if merged is None:
            merged = Analysis()
            for c in key:
                merged.add(self.cited(c).analysis)
            self._merged[key] = merged
        return merged

    def check(self, text: str, cites: Iterable[Citation], quotes: Iterable[str] = ()) -> Support:
        cites = tuple(cites)
        if not cites:
            return Support(False, "no citation")
        for c in cites:
            problem = self.resolve(c)
            if problem:
                return Support(False, problem)
        if any(c.path in self.unreadable for c in cites):
            return Support(True, "not checked: the cited file cannot be read")
        if RAW_HTML.search(text):
            return Support(False, "it contains raw HTML")
        for quote in quotes:
            if _normal(plain_inline(quote)) not in self.cited_text_any(cites):
                return Support(False, "a quoted passage does not occur verbatim in the cited section")
        plain = _normal(plain_inline(text))
        if any(self.cited(c).quotes(plain.rstrip(".")) for c in cites) or self._labelled_quote(plain, cites):
            return Support(True)
        return self.supports(plain, cites)

    def _labelled_quote(self, plain: str, cites: tuple[Citation, ...]) -> bool:
        """'Acorn Squash — Dark green … rind …': a quote of a source put after its own title, as a
        directory lists its entries, is a quote."""
        label, dash, rest = plain.partition(" — ")
        return bool(dash and rest) and any(
            label == _normal(plain_inline(self.docs[c.path].title)) and self.cited(c).quotes(rest.rstrip("."))
            for c in cites
        )

    def supports(self, plain: str, cites: tuple[Citation, ...]) -> Support:
        """The checks for a sentence that is not a verbatim quote."""
        source = self._analysis(cites)
        whole = analyse(plain)
        said = whole
        parts = statements(plain)
        if len(parts) > 1:  # two sentences merged into one: numbers and negations read apart
            apart = Analysis()
            for part in parts:
                apart.add(analyse(part, addresses=False))
            said = replace(said, quantities=apart.quantities, sentences=apart.sentences)
        # a negation's and a direction word's neighbours are read within its clause
        within = Analysis()
        for part in clauses(plain):
            within.add(analyse(part, addresses=False))
        said = replace(said, negations=within.negations, directions=within.directions)
        missing = sorted(a for a in said.addresses if not any(a in self.cited(c).raw for c in cites))
        if missing:
            return Support(False, f"{', '.join(missing)} does not occur in the cited text")
        models = {m.lower() for m in _MODEL.findall(plain)}
        missing = sorted(m for m in models if not any(m in self.cited(c).plain_lower for c in cites))
        if missing:
            return Support(False, f"model {', '.join(missing)} does not occur in the cited text")
        problem = (
            _quantity_problem(said, source.quantities)
            or _polarity_problem(said, source)
            or _restatement_problem(said.sentences, source, whole.sentences if len(parts) > 1 else [])
            or _direction_problem(said, source)
        )
        if problem:
            return Support(False, problem)
        unsupported = sorted(said.stems - source.stems)
        if len(unsupported) > self._allowed(len(said.stems)):
            return Support(
                False, f"{', '.join(unsupported[:5])} not in the cited text ({len(unsupported)} words)"
            )
        problem = self._name_problem(plain, source) or self._clause_problem(plain, cites)
        return Support(False, problem) if problem else Support(True)

    def _allowed(self, words: int) -> int:
        """How many of ``words`` content words may be a rewording (not in the cited text)."""
        return int(words * (1 - self.min_overlap) + 1e-9)

    @staticmethod
    def is_name(word: str, first: bool = False) -> bool:
        """Whether a capitalised word (lower-cased) names something: not a stop word, a unit's
        name ('Celsius'; a unit after a number is no name, see ``scan``) or a word that only links
        sentences ('However'). A capitalised first word counts too: a
        rewording keeps the source's first word or starts with a stop word."""
        return not (word in _SKIP or word in NEGATORS or word in LINKING or word in _SPELLED_UNITS)

    def names(self, plain: str) -> dict[str, bool]:
        """The names of a sentence as the check reads them (see ``is_name``), each with whether
        it stands inside a sentence, where the cited text must write it with a capital too (the
        first word of a sentence is capitalised whatever it is)."""
        out: dict[str, bool] = {}
        for part in _scanned(plain):
            for kind, value, first in part:
                if kind == "name" and self.is_name(value, first):
                    key = name_key(value)
                    out[key] = out.get(key, False) or not first
        return out

    def _name_problem(self, plain: str, source: Analysis) -> str | None:
        missing = sorted(n for n, inside in self.names(plain).items() if not _named(n, inside, source))
        if missing:
            return f"names {', '.join(missing[:3])}, which the cited text does not"
        return None

    def _clause_problem(self, plain: str, cites: tuple[Citation, ...]) -> str | None:
        """Each clause supported by one cited section on its own: its names (a name of several
        words as the section writes it) and numbers, its content words but for a rewording, and,
        with two words or more, a pair of them side by side as the section has them (so no
        clause of the section's words rides along). A statement's opening clauses that only name
        something ('On the Grove 6, …') go with the clause after them. With two citations, each
        number and what it is said of come from one section."""
        for part, joined, names in self._clauses(plain):
            said = analyse(part, addresses=False)
            beside = _name_contexts(part)
            if not any(self._clause_fits(said, names, joined, beside, self.cited(c).analysis) for c in cites):
                where = "the cited text" if len(cites) < 2 else "any one cited section"
                return f"'{part}' is not said by {where}"
        return self._fact_problem(plain, cites)

    def _fact_problem(self, plain: str, cites: tuple[Citation, ...]) -> str | None:
        """Each number said of names as the cited text says it of them (where it says it of
        some name), and with two citations, a number and all it is said of from one section."""
        for names, words, value in facts(_scanned(plain), _inside_name):
            named = {word_value(name_key(n)) for n in names}
            held = [self.cited(c).facts.get(value) for c in cites]
            if named and any(held) and not any(h is None or _said_of(named, h) for h in held):
                return f"the cited text does not give {value} for {' '.join(sorted(names))}"
            if len(cites) < 2:
                continue
            stems = named | {word_value(w) for w in words if len(w) > 1 and w not in _SKIP and w not in UNITS}
            if not any(self._has_fact(stems, value, self.cited(c).analysis) for c in cites):
                return f"no one cited section gives {value} for {' '.join(sorted(names | words))}"
        return None

    def _clauses(self, plain: str) -> list[tuple[str, set[tuple[str, str]], dict[str, bool]]]:
        """The clauses of a sentence, statement by statement, each with the pairs of words of
        its names and its names (see ``names``); the clauses that open a statement with names
        only go with the next."""
        out: list[tuple[str, set[tuple[str, str]], dict[str, bool]]] = []
        for statement in statements(plain):
            named = {word_value(n) for n in self.names(statement)}
            carry, joined, names, opening = "", set(), {}, True
            for part in clauses(statement):
                joined = joined | _name_pairs(part)
                names = {**names, **self.names(part)}
                stems = analyse(part, addresses=False).stems
                if opening and stems and stems <= named:
                    carry = f"{carry} {part}".strip()
                    continue
                out.append((f"{carry} {part}".strip(), joined, names))
                carry, joined, names, opening = "", set(), {}, False
            if carry:
                out.append((carry, joined, names))
        return out

    def _clause_fits(
        self,
        said: Analysis,
        names: dict[str, bool],
        joined: set[tuple[str, str]],
        beside: set[tuple[tuple[str, str], ...]],
        cited: Analysis,
    ) -> bool:
        if not joined <= cited.pairs or any(_name_displaced(context, cited) for context in beside):
            return False
        if any(word_value(n) in said.stems and not _named(n, inside, cited) for n, inside in names.items()):
            return False
        if any(v not in cited.quantities for v in said.quantities):
            return False
        pairs = {p for p in said.pairs if END not in p}
        if pairs and not (pairs & cited.pairs):
            return False
        return len(said.stems - cited.stems) <= self._allowed(len(said.stems))

    @staticmethod
    def _has_fact(stems: set[str], value: str, cited: Analysis) -> bool:
        return value in cited.quantities and stems <= (cited.stems | cited.quantities.keys())


def _named(name: str, inside: bool, cited: Analysis) -> bool:
    """Whether the cited text names ``name``: inside a sentence, as a word it writes with a
    capital (or its plural or singular); first in a sentence, as any word."""
    if not inside:
        return word_value(name) in cited.stems
    return bool({name, name[:-1] if name.endswith("s") else name + "s"} & cited.capitals)


def _name_pairs(text: str) -> set[tuple[str, str]]:
    """The words of a name of several words, pair by pair ('Verdant Feed')."""
    out = set()
    for items in _scanned(text):
        for (k1, a, _), (k2, b, _) in zip(items, items[1:]):
            if k1 == k2 == "name" and Verifier.is_name(a) and Verifier.is_name(b):
                out.add((word_value(name_key(a)), word_value(name_key(b))))
    return out


def _restatement_problem(said: list[Said], source: Analysis, whole: list[Said] = ()) -> str | None:
    """A statement that restates a sentence of the cited text (nearly all of the words of each
    are the other's; the most alike such sentence) but negates other words, or has a direction
    word or a name that sentence does not have, or negates a word no sentence holding nearly
    all of its words negates: a 'not' left out or put in, 'top' for 'bottom', another
    product, even where another sentence of the section has the other word beside the same
    words. ``said`` holds the statements of a sentence; ``whole``, when the sentence joins
    several, it read whole, compared when no statement restates a sentence on its own."""
    restated = False
    for statement in said:
        if not statement.words:
            continue
        alike, holding = _alike(statement.words, source)
        restated = restated or bool(alike)
        if alike and not any(_restates(statement, s) for s in alike):
            negations = all(_negated_in(statement, s) != statement.negated for s in alike)
            return f"it changes {'a negation' if negations else 'a word'} of the sentence of the cited text it restates"
        if holding and statement.negated - frozenset().union(*(s.negated for s in holding)):
            return "it adds a negation the cited text does not make"
    if not restated and whole:
        return _restatement_problem(whole, source)
    return None


def _negated_in(statement: Said, cited: Said) -> frozenset[str]:
    """What ``cited`` negates among the words of ``statement``."""
    return frozenset(w for w in cited.negated if w in statement.words or w in statement.negated)


def _restates(statement: Said, cited: Said) -> bool:
    """Whether ``statement`` keeps the negations, direction words and names of ``cited``. Its
    first word is capitalised wherever it stands, so it counts as a name only when ``cited``
    does not hold it at all ('Sprout 3 is a mustard green' for 'Red Giant is …'; a direction
    word is compared as one)."""
    first = {statement.first} if statement.first in cited.words or direction_of(statement.first) else set()
    return (
        _negated_in(statement, cited) == statement.negated
        and statement.groups <= cited.groups
        and statement.names - first <= cited.names
    )


def _alike(words: frozenset[str], source: Analysis) -> tuple[list[Said], list[Said]]:
    """The sentences of ``source`` that ``words`` restate (80% of its words are theirs and 70% of
    theirs are its own), the most alike of them, and every sentence holding 80% of ``words``.
    When none is alike, the words are compared again without their numbers ('Grove 6' for
    'Android' is one name swapped, not two words added)."""
    alike, holding = _alike_by(words, source, lambda w: w)
    if not alike:
        alike = _alike_by(words, source, _unnumbered)[0]
    return alike, holding


def _alike_by(
    words: frozenset[str], source: Analysis, read: Callable[[frozenset[str]], frozenset[str]]
) -> tuple[list[Said], list[Said]]:
    scored, holding = [], []
    words = read(words)
    for cited in source.sentences:
        theirs = read(cited.words)
        shared = len(words & theirs)
        if shared >= 0.8 * len(words):
            holding.append(cited)
        # a short clause restates with one word changed ('earlier than Thai basil' for 'Genovese')
        close = shared >= 0.8 * len(words) or (shared >= 2 and len(words) - shared <= 1)
        if close and shared >= 0.7 * len(theirs):  # a cited sentence may run on (a list marker, a heading)
            scored.append((shared / len(words | theirs), cited))
    best = max((score for score, _ in scored), default=0.0)
    return [cited for score, cited in scored if score == best], holding


_NUMBER = re.compile(r"^[\d.,:/-]+$")


@lru_cache(maxsize=1 << 16)  # a cited sentence's words are read again for every statement
def _unnumbered(words: frozenset[str]) -> frozenset[str]:
    """``words`` without its numbers (all of them when there is nothing else)."""
    return frozenset(w for w in words if not _NUMBER.match(w)) or words


def _inside_name(word: str, first: bool) -> bool:
    """A name as facts are compared: inside its sentence (a first word may be any word)."""
    return not first and Verifier.is_name(word)


def _said_of(named: set[str], held: list[frozenset[str]]) -> bool:
    """Whether a number the cited text gives of each of ``held`` (names) is said of ``named``:
    it gives it of those names, or of nothing named (a bare number tells nothing)."""
    return any(not h or named <= h for h in held)


def _name_contexts(text: str) -> set[tuple[tuple[str, str], ...]]:
    """Each name inside a clause (not its first word) with the content words beside it, as
    (word before, its first word) and (its last word, word after): 'introduced in Canopy 12'
    gives (introduced, Canopy). A side at the edge of the clause, or across a negation or a
    unit, is left out."""
    out = set()
    for items in _scanned(text):
        words = [(k, v, first) for k, v, first in items if v not in _SKIP]
        i = 0
        while i < len(words):
            kind, value, first = words[i]
            if kind != "name" or first or not Verifier.is_name(value):
                i += 1
                continue
            j = i
            while j + 1 < len(words) and words[j + 1][0] in ("name", "number"):
                j += 1
            before = words[i - 1] if i else None
            after = words[j + 1] if j + 1 < len(words) else None
            out.add(tuple(_side(a, b) for a, b in ((before, words[i]), (words[j], after))))
            i = j + 1
    return out


def _side(a: tuple | None, b: tuple | None) -> tuple[str, str]:
    """Two neighbouring words as the cited pairs hold them, or ('', '') for no side."""
    if not a or not b or not {a[0], b[0]} <= {"name", "word", "number"} or {a[1], b[1]} & NEGATORS:
        return ("", "")
    return (word_value(name_key(a[1])), word_value(name_key(b[1])))


def _name_displaced(context: tuple[tuple[str, str], ...], cited: Analysis) -> bool:
    """Whether a name stands where the cited text has another name (or a name's number) beside
    the same word, on a side the cited text does not have it: 'The LED is a freestanding' where
    the cited text says 'The Canopy 12 is a freestanding'."""
    (before, first), (last, after) = context
    if (before and (before, first) in cited.pairs) or (after and (last, after) in cited.pairs):
        return False
    for a, b in cited.pairs:
        if before and a == before and b != first and (b in cited.capital_stems or b[:1].isdigit()):
            return True
        if after and b == after and a != last and (a in cited.capital_stems or a[:1].isdigit()):
            return True
    return False


def _direction_problem(said: Analysis, source: Analysis) -> str | None:
    """Each direction or comparison word as the cited text has it: the same group, with the
    same word beside it on the same side ('after a minute' is not 'a minute after'), where the
    cited text has a word on that side; a word alone in its clause needs only the same group.
    The cited text may have the opposite word elsewhere."""
    for group, *sides in sorted(said.directions):
        found = [rest for g, *rest in source.directions if g == group]
        alone = sides == [END, END]
        if not (found if alone else any(_same_direction(sides, rest) for rest in found)):
            return f"'{group}' is not what the cited text says there"
    return None


def _same_direction(said: list[str], cited: list[str]) -> bool:
    return any(a == b for a, b in zip(said, cited) if a != END)


def _quantity_problem(said: Analysis, cited: dict[str, list[Quantity]]) -> str | None:
    """Each number with its unit and the words around it as in the cited text; numbers side by
    side in the order the cited text gives them."""
    missing = sorted(v for v in said.quantities if v not in cited)
    if missing:
        return f"number(s) {', '.join(missing)} not in the cited text"
    for value, qs in said.quantities.items():
        found = cited[value]
        for q in qs:
            same_unit = [
                c
                for c in found
                if q.unit is None or c.unit == q.unit or (c.unit is None and q.unit in c.units_before)
            ]
            if not same_unit:
                units = " or ".join(sorted({c.unit or "without a unit" for c in found}))
                return f"it gives {value} {q.unit}; the cited text gives {value} {units}"
            # no side may contradict, and one side must agree unless the number stands alone
            fits = [c for c in same_unit if _beside(q.left, c.left) and _beside(q.right, c.right)]
            if not fits or (q.left or q.right) and not any(_agrees(q, c) for c in fits):
                return f"{value} stands among other words in the cited text"
            other = _displaced(q, fits, cited)
            if other and other in said.quantities:
                return f"{value} stands where the cited text has {other} (swapped?)"
            if q.next_value and q.next_value != value:
                first = {c.run: c.pos for c in reversed(cited[value])}
                together = [(first[c.run], c.pos) for c in cited.get(q.next_value, ()) if c.run in first]
                if together and not any(a < b for a, b in together):
                    return f"{value} and {q.next_value} are the other way round in the cited text (swapped?)"
    return None


def _displaced(q: Quantity, fits: list[Quantity], cited: dict[str, list[Quantity]]) -> str | None:
    """Another number the cited text has beside the words ``q`` has on one side, where no
    occurrence of ``q``'s own value has them ('Sequence 1 has fewer commands' where the cited
    text says 'Sequence 2 has fewer commands … than Sequence 1'); a swap when the sentence
    has that number too."""
    for side in ("left", "right"):
        near = getattr(q, side)
        if not near or any(near[0] in getattr(c, side) for c in fits):
            continue
        for value, others in cited.items():
            if value != q.value and any(getattr(o, side)[:1] == near[:1] for o in others):
                return value
    return None


def _beside(said: tuple[str, ...], cited: tuple[str, ...]) -> bool:
    """No contradiction on one side of a number: either side is empty (the edge of a sentence or
    a number), or the sentence's nearest word is among the cited text's nearest words."""
    return not said or not cited or said[0] in cited


def _agrees(q: Quantity, c: Quantity) -> bool:
    return bool(q.left and c.left and q.left[0] in c.left) or bool(
        q.right and c.right and q.right[0] in c.right
    )


def _polarity_problem(said: Analysis, source: Analysis) -> str | None:
    """Each negation of the sentence matched to its own negation of the same words in the cited
    text (the words that follow it, or what precedes it at the end of a sentence: 'mould does not' says
    nothing of what mould is not); no pair of words the
    cited text separates with a negation stated plainly."""
    unused = list(source.negations)
    for neg in said.negations:
        match = next(
            (
                c
                for c in unused
                if _beside(neg.left, c.left)
                and (
                    neg.right <= c.right if neg.right else bool(neg.left and c.left and neg.left[0] in c.left)
                )
            ),
            None,
        )
        if match is None:
            what = " ".join(sorted(neg.right)) or neg.left[0]
            return f"it negates '{what}', which the cited text does not negate"
        unused.remove(match)
    for c in source.negations:
        plain, known = (said.pairs, source.pairs) if c.left else (said.plain_starts, source.plain_starts)
        if c.pair in plain and c.pair not in known:
            return f"the cited text says '{' '.join(t for t in c.pair if t != END)}' only with a negation"
        if END not in c.phrase and c.phrase in said.plain_starts and c.phrase not in source.plain_starts:
            return f"the cited text says '{' '.join(c.phrase)}' only with a negation"
    return None
