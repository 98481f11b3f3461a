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
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from ..core.markdown import STOPWORDS, plain_inline
from ..core.models import SourceDoc
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


@lru_cache(maxsize=1 << 16)
def word_stem(word: str) -> str:
    """The verifier's stem: plural, -ed and -ing endings and a final 'e' go, so 'shade', 'shades',
    'shaded' and 'shading' are one word, as are 'berry' and 'berries'."""
    w = word
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("es") and w[:-2].endswith(("x", "z", "ch", "sh", "o", "ss")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if w[-1] == w[-2] and w[-1] not in "lsz":  # running → run
                w = w[:-1]
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


# -- tokens ----------------------------------------------------------------------------------------

NEGATORS = frozenset("not no never none nothing nobody nowhere neither nor cannot without".split())
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
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
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


@dataclass
class Analysis:
    """What a text says, in the form the checks compare."""

    stems: set[str] = field(default_factory=set)  # content words
    quantities: dict[str, list[Quantity]] = field(default_factory=dict)
    negations: list[Negation] = field(default_factory=list)
    pairs: set[tuple[str, str]] = field(default_factory=set)  # adjacent tokens, no negator between
    plain_starts: set[tuple[str, str]] = field(default_factory=set)  # ... nor just before the first
    addresses: set[str] = field(default_factory=set)  # URLs, e-mail addresses, domain names

    def add(self, other: Analysis) -> None:
        self.stems |= other.stems
        for value, qs in other.quantities.items():
            self.quantities.setdefault(value, []).extend(qs)
        self.negations += other.negations
        self.pairs |= other.pairs
        self.plain_starts |= other.plain_starts


# Token kinds: 'n' number (a range such as '12-20' or '555-0100' is one), 'd' date, 'u' a number's unit, 'c' a currency sign (the unit of the
# number after it), 'x' negator, 's' stop word, 'b' end of a sentence (or an arrow), 'w' content
# word (its stem, or the unit it names).
Token = tuple[str, str]
END = "<end>"  # stands for the end of a sentence in a pair of tokens


def _tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for m in _TOKEN.finditer(text.replace("’", "'")):
        tok = m.group()
        if tok[0].isdigit():
            out.append(("n" if len(tok) < 10 or tok[4] != "-" else "d", tok.replace(",", ".")))
            continue
        low = tok.lower()
        if low[0] == "°":
            low = "°" + low[-1]
        if low in (".", "!", "?", ";", "→", "->", "⟶"):  # an arrow ('20% → 15%') separates two statements
            out.append(("b", low))
        elif low in "$€£":
            out.append(("c", UNITS[low]))
        elif low in UNITS and out and out[-1][0] == "n":
            out.append(("u", UNITS[low]))
        elif low in NEGATORS or low.endswith("n't"):
            out.append(("x", low))
        elif low in _SKIP or low == "%":
            out.append(("s", low))
        else:
            out.append(("w", UNITS.get(low) or word_stem(low)))
    return out


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


def analyse(text: str, addresses: bool = True) -> Analysis:
    """Analyse one run of text (a paragraph, a field, a sentence); nothing links across runs."""
    a = Analysis()
    if addresses:
        a.addresses = {_address(m.group()) for m in _ADDRESS.finditer(text)}
    tokens = _tokens(text)
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
        sentence = tokens[start:end]
        start = end + 1
        content = [i for i, (k, _) in enumerate(sentence) if k in ("n", "w")]
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
        for i, (kind, _) in enumerate(sentence):
            if kind == "x":
                left = _window(sentence, i, -1, True)
                after = [t for k, t in sentence[i + 1 :] if k in ("n", "w")][:2]
                if left:
                    pair = (left[0], after[0] if after else END)
                elif after:
                    pair = (after[0], after[1] if len(after) > 1 else END)
                else:
                    continue
                a.negations.append(Negation(left, frozenset(after), pair))
    return a


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
        for run in [*re.split(r"\n\s*\n", plain), *table_rows(plain), *self._rest]:
            analysis.add(analyse(run, addresses=False))
        return analysis

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
        self._cited: dict[Citation, Cited] = {}  # per verifier, so no cache outlives its KB
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
        if doc is None:
            return f"cites {cite.path}, which does not exist"
        if cite.anchor and doc.section(cite.anchor) is None:
            return f"cites #{cite.anchor}, which is not a heading of {cite.path}"
        return None

    def cited(self, cite: Citation) -> Cited:
        found = self._cited.get(cite)
        if found is None:
            doc = self.docs[cite.path]
            if cite.path not in self._rest:
                rest = [doc.title, *field_lines(doc)]
                self._rest[cite.path] = rest, [x for x in map(_normal, rest) if x]
            found = self._cited[cite] = _cited(doc, cite.anchor, *self._rest[cite.path])
        return found

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
        if any(self.cited(c).quotes(plain.rstrip(".")) for c in cites):
            return Support(True)
        return self.supports(plain, cites)

    def supports(self, plain: str, cites: tuple[Citation, ...]) -> Support:
        """The checks for a sentence that is not a verbatim quote."""
        source = self._analysis(cites)
        said = analyse(plain)
        missing = sorted(a for a in said.addresses if not any(a in self.cited(c).raw for c in cites))
        if missing:
            return Support(False, f"{', '.join(missing)} does not occur in the cited text")
        problem = _quantity_problem(said, source.quantities) or _polarity_problem(said, source)
        if problem:
            return Support(False, problem)
        if said.stems:
            unsupported = sorted(said.stems - source.stems)
            allowed = int(len(said.stems) * (1 - self.min_overlap) + 1e-9)
            if len(unsupported) > allowed:
                return Support(
                    False, f"{', '.join(unsupported[:5])} not in the cited text ({len(unsupported)} words)"
                )
        return Support(True)


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
            if q.next_value and q.next_value != value:
                first = {c.run: c.pos for c in reversed(cited[value])}
                together = [(first[c.run], c.pos) for c in cited.get(q.next_value, ()) if c.run in first]
                if together and not any(a < b for a, b in together):
                    return f"{value} and {q.next_value} are the other way round in the cited text (swapped?)"
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
    text (what follows it, or what precedes it at the end of a sentence); no pair of words the
    cited text separates with a negation stated plainly."""
    unused = list(source.negations)
    for neg in said.negations:
        match = next(
            (
                c
                for c in unused
                if _beside(neg.left, c.left)
                and (
                    bool(neg.right & c.right)
                    if neg.right and c.right
                    else bool(neg.left and c.left and neg.left[0] in c.left)
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
    return None
