"""Sentences a model writes from a cited section: wrong ones (mutations) and faithful ones
(rewrites), each a pure function of a quote and the section it comes from.

Mutations, each a sentence the cited text does not say:

- ``name swap``: a product, proper name or model number replaced by one the cited section does
  not name (another document's, or a made-up one such as "Zorblax");
- ``direction swap``: a direction or comparison word replaced by its opposite (before/after,
  more/less, above/below, top/bottom, min/max, within → after, increase/decrease, enable/disable…);
- ``appended clause``: a clause no source says, some of it in the section's own words;
- ``negation``: a 'not' added, or one removed;
- ``merged facts``: one section's subject with another's numbers, citing both.

Faithful rewrites, the way a capable model restates a section: clauses reordered, two sentences
of one section merged, plain synonyms for common verbs, units spelled out, or several of these.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# ---- names -----------------------------------------------------------------------------------

INVENTED = ("Zorblax", "Quentaro 9", "Morrow X2", "Halvik Pro")
_NAME = re.compile(
    r"\b(?:[A-Z][a-z]*[A-Z]\w*|[A-Z]{2,}\w*|[A-Za-z]+\d[\w-]*|[A-Z][a-z]+(?:\s+(?:[A-Z][a-z]+|\d+[A-Za-z]?))*)\b"
)
_STARTERS = frozenset(
    """A An The This That These Those It Its If When Where While To For In On At By With Without Each Every
    Some Any All Your You We Our They Their Do Does Don Use Make Keep Check Add Fill Set After Before Once
    Most More Less Many Much Both Either Neither Not No Never Also Only Then There Here What Which Who How
    Why Note Tip Warning Step Be Is Are Can Should Must Will May I Yes Please See From As Or And But So My""".split()
)


def names_in(text: str) -> list[tuple[int, int, str]]:
    """Spans of what reads as a name in ``text``: camel case (FarmBot), capitals (LED), words with
    digits (X200, v2), and capitalised words with what follows them ('Grove 6'); at the start of
    a sentence, where every word is capitalised, only a name of two words or more ('Lemon Balm',
    'Sprout 3') or of the shapes above."""
    out = []
    for m in _NAME.finditer(text):
        word, start = m.group(), m.start()
        first, _, rest = word.partition(" ")
        at_start = start == 0 or re.search(r"[.!?:;]\s*$", text[:start]) is not None
        if first in _STARTERS:
            if not rest or not rest[0].isupper():
                continue
            word, start, at_start = rest, m.end() - len(rest), False
        words = word.split(" ")
        cut = next((i for i, w in enumerate(words) if i and w in _STARTERS), len(words))
        if cut < len(words):  # 'Description The' is a heading run into its text
            word = " ".join(words[:cut])
            m_end = start + len(word)
        else:
            m_end = m.end()
        shaped = any(c.isupper() for c in word[1:].split(" ")[0]) or any(c.isdigit() for c in word)
        if at_start and " " not in word and not shaped:
            continue
        out.append((start, m_end, word))
    return out


def name_pool(texts: list[str], common: set[str] = frozenset()) -> list[str]:
    """Every name of three letters or more the given texts use, in order of first use, but
    words the texts also write in lower case (``common``)."""
    names = (n for t in texts for _, _, n in names_in(t) if len(n) > 2)
    return list(dict.fromkeys(n for n in names if not set(n.lower().split()) & common))


def common_words(texts: list[str]) -> set[str]:
    """The words the texts write in lower case."""
    return {w for t in texts for w in re.findall(r"(?<![\w'])[a-z]+", t)}


def swap_name(quote: str, section: str, pool: list[str]) -> str | None:
    """``quote`` with its first name replaced by a name of ``pool`` (or a made-up one) that the
    section does not use anywhere."""
    low = section.lower()
    for start, end, name in names_in(quote):
        if len(name) < 3:
            continue
        for other in [*pool, *INVENTED]:
            words = other.lower().split()
            stem = re.match(r"[a-z]*", name.lower()).group()
            if other.lower().startswith(stem):  # 'GPIO24' for 'GPIO 24' says the same
                continue
            if not any(w in low for w in words if len(w) > 2 and not w.isdigit()):
                return quote[:start] + other + quote[end:]
    return None


# ---- directions --------------------------------------------------------------------------------

OPPOSITES = {
    "before": "after",
    "after": "before",
    "within": "after",
    "more": "less",
    "less": "more",
    "fewer": "more",
    "above": "below",
    "below": "above",
    "top": "bottom",
    "bottom": "top",
    "min": "max",
    "max": "min",
    "minimum": "maximum",
    "maximum": "minimum",
    "increase": "decrease",
    "increases": "decreases",
    "increased": "decreased",
    "decrease": "increase",
    "decreases": "increases",
    "decreased": "increased",
    "enable": "disable",
    "enabled": "disabled",
    "enables": "disables",
    "disable": "enable",
    "disabled": "enabled",
    "disables": "enables",
    "higher": "lower",
    "lower": "higher",
    "upper": "lower",
    "larger": "smaller",
    "smaller": "larger",
    "longer": "shorter",
    "shorter": "longer",
    "faster": "slower",
    "slower": "faster",
    "warmer": "cooler",
    "cooler": "warmer",
    "inside": "outside",
    "outside": "inside",
    "earlier": "later",
    "later": "earlier",
    "first": "last",
    "last": "first",
    "under": "over",
    "over": "under",
    "up": "down",
    "down": "up",
    "least": "most",
    "most": "least",
}
_DIRECTION = re.compile(r"\b(" + "|".join(sorted(OPPOSITES, key=len, reverse=True)) + r")\b", re.I)


def swap_direction(quote: str) -> str | None:
    """``quote`` with its first direction or comparison word replaced by the opposite one."""
    m = _DIRECTION.search(quote)
    if m is None:
        return None
    word = m.group()
    other = OPPOSITES[word.lower()]
    if re.search(rf"\b{other}\b", quote, re.I):  # 'up and down', 'before and after': no claim
        return None
    other = other.capitalize() if word[0].isupper() else other
    return quote[: m.start()] + other + quote[m.end() :]


# ---- appended clauses and merged facts ---------------------------------------------------------

TAILS = (
    ", and this also voids the warranty.",
    ", and every order now ships with a free robot gardener.",
    ", which also resets the {word} to its factory settings.",
    ", so the {word} never needs replacing.",
    ", and the {word} is covered for ten years.",
)
_CONTENT = re.compile(r"\b[a-z]{5,}\b")


def append_clause(quote: str, section: str, n: int) -> str:
    """``quote`` with a clause it does not say; some tails reuse a word of the section, so the
    clause's words alone are no giveaway."""
    tail = TAILS[n % len(TAILS)]
    words = [w for w in _CONTENT.findall(section.lower()) if w not in quote.lower()]
    word = words[n % len(words)] if words else "pump"
    return quote.rstrip(".!?") + tail.format(word=word)


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def merge_facts(quote: str, section: str, other: str) -> str | None:
    """A sentence of ``section`` with the numbers of the ``other`` section in place of its own
    (its subject, the other's facts): None unless some new number is one ``section`` lacks and
    the other section names nothing the sentence names."""
    mine, theirs = _NUMBER.findall(quote), _NUMBER.findall(other)
    if not mine or not theirs:
        return None
    values = iter(theirs)
    out = _NUMBER.sub(lambda m: next(values, m.group()), quote)
    new = set(_NUMBER.findall(out)) - set(_NUMBER.findall(section))
    names = [n for _, _, n in names_in(quote)]
    if not new or not names or any(n.lower() in other.lower() for n in names):
        return None
    return out


def borrow_subject(quote: str, section: str, other: str) -> str | None:
    """A sentence of ``section`` (with its numbers) told of a name of the ``other`` section:
    "Beets germinate at 21 C" from red cabbage's "Red cabbage germinates at 21 C". None unless
    the sentence has a number the other section lacks."""
    names = [n for _, _, n in names_in(other) if n.lower() not in section.lower() and len(n) > 2]
    names = [n for n in names if not any(c in ".:" for c in n)]
    spans = names_in(quote)
    numbers = set(_NUMBER.findall(quote)) - set(_NUMBER.findall(other))
    if not names or not spans or not numbers:
        return None
    start, end, _ = spans[0]
    return quote[:start] + names[0] + quote[end:]


# ---- faithful rewrites -------------------------------------------------------------------------

SYNONYMS = {
    "use": "employ",
    "uses": "employs",
    "used": "employed",
    "using": "employing",
    "need": "require",
    "needs": "requires",
    "needed": "required",
    "buy": "purchase",
    "bought": "purchased",
    "make sure": "ensure",
    "check": "inspect",
    "checks": "inspects",
    "start": "begin",
    "starts": "begins",
    "help": "assist",
    "helps": "assists",
    "remove": "take out",
    "put": "place",
    "show": "display",
    "shows": "displays",
    "choose": "select",
    "pick": "select",
    "fix": "repair",
    "get": "obtain",
    "gets": "obtains",
    "give": "provide",
    "gives": "provides",
    "keep": "maintain",
    "keeps": "maintains",
    "try": "attempt",
    "find": "locate",
    "turn on": "switch on",
    "turn off": "switch off",
    "stop": "halt",
    "grow": "cultivate",
    "grows": "cultivates",
    "move": "shift",
    "moves": "shifts",
    "lets": "allows",
    "let": "allow",
}
_SYNONYM = re.compile(r"\b(" + "|".join(sorted(SYNONYMS, key=len, reverse=True)) + r")\b", re.I)

UNIT_WORDS = {
    "L": "litres",
    "l": "litres",
    "ml": "millilitres",
    "mL": "millilitres",
    "cm": "centimetres",
    "mm": "millimetres",
    "m": "metres",
    "km": "kilometres",
    "W": "watts",
    "V": "volts",
    "kg": "kilograms",
    "g": "grams",
    "h": "hours",
    "hr": "hours",
    "hrs": "hours",
    "min": "minutes",
    "mins": "minutes",
    "s": "seconds",
    "%": " percent",
    "°C": " degrees Celsius",
    "°F": " degrees Fahrenheit",
    "C": " degrees Celsius",
    "F": " degrees Fahrenheit",
}
_UNIT = re.compile(r"(\d)(\s?)(°C|°F|%|mL|ml|cm|mm|km|kg|hrs|hr|mins|min|[LlmWVghsCF])(?![\w°])")


def spell_units(text: str) -> str | None:
    def word(m: re.Match) -> str:
        unit = UNIT_WORDS[m.group(3)]
        return m.group(1) + (unit if unit.startswith(" ") else " " + unit)

    out = _UNIT.sub(word, text)
    return out if out != text else None


def use_synonyms(text: str) -> str | None:
    """Up to two common verbs in lower case replaced by a plain synonym (a capitalised one may
    be a button's label, which a careful writer keeps)."""

    def sub(m: re.Match) -> str:
        word = m.group()
        return SYNONYMS[word] if word.islower() and text[m.end() : m.end() + 1] not in "'’" else word

    out = _SYNONYM.sub(sub, text, count=2)
    return out if out != text else None


_LEAD = re.compile(r"^(If|When|Once|While|Until|Because|Although|To)\s+([^,;]{3,}),\s+([^;]+?)([.!?]?)$")
_TRAIL = re.compile(
    r"^([^;]{8,}?)(?<!\bor)(?<!\bon)\s+(if|when|once|while|until|because|although)\s+([^;]{6,}?)([.!?]?)$"
)


def reorder_clauses(text: str) -> str | None:
    """'If X, Y.' → 'Y if X.' and 'Y when X.' → 'When X, Y.'"""
    m = _LEAD.match(text)
    if m:
        lead, cond, main, end = m.groups()
        return f"{_upper(main)} {lead.lower()} {cond}{end or '.'}"
    m = _TRAIL.match(text)
    if m and "," not in m.group(1):
        main, lead, cond, end = m.groups()
        return f"{lead.capitalize()} {cond}, {_lower(main)}{end or '.'}"
    return None


def merge_sentences(first: str, second: str) -> str | None:
    """Two sentences of one section as one: 'A. B.' → 'A, and b.' ('A; b.' when A has a comma)."""
    if not first.endswith(".") or not second or len(first) + len(second) > 320:
        return None
    glue = "; " if "," in first else ", and "
    return first[:-1] + glue + _lower(second)


def _lower(text: str) -> str:
    """The sentence as it goes on after a comma: its first word in lower case, unless it is a
    name ('Sprout 3', 'Verdant Feed', 'LED', 'I')."""
    head, _, rest = text.partition(" ")
    if len(head) < 2 or any(c.isupper() for c in head[1:]) or rest[:1].isupper() or rest[:1].isdigit():
        return text
    return text[0].lower() + text[1:]


def _upper(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


@dataclass(frozen=True)
class Rewrite:
    kind: str
    text: str
    source: str  # what it rewrites


def rewrites(quotes: list[str]) -> Iterator[Rewrite]:
    """The faithful rewrites of one section's quotes (in their order)."""
    for i, quote in enumerate(quotes):
        for kind, fn in (
            ("reordered clauses", reorder_clauses),
            ("synonyms", use_synonyms),
            ("units spelled out", spell_units),
        ):
            out = fn(quote)
            if out:
                yield Rewrite(kind, out, quote)
        both = use_synonyms(spell_units(quote) or quote)
        if both and spell_units(quote):
            yield Rewrite("units and synonyms", both, quote)
        if i + 1 < len(quotes):
            merged = merge_sentences(quote, quotes[i + 1])
            if merged:
                yield Rewrite("merged sentences", merged, quote + " " + quotes[i + 1])
