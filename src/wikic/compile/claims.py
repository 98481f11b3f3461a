"""What a sentence claims beyond its bag of words, for the citation check.

- **names**: the products, proper names and model numbers it uses (camel case, capitals,
  capitalised words inside a sentence, and a capitalised first word that is no common word);
- **directions**: its direction and comparison words (before/after, more/less, above/below,
  top/bottom, min/max, within, increase/decrease, enable/disable, …), each with the words beside it;
- **clauses**: its parts between commas, semicolons, brackets, dashes and conjunctions, each of
  which must be supported on its own (and by one cited section), not the sentence on average;
- **wording**: plain synonyms of common verbs and spelled-out units read as the same word, so a
  faithful restatement is not taken for a new claim.
"""

from __future__ import annotations

import re
from functools import lru_cache


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


# Plain synonyms of common verbs and phrases: each group reads as its first word.
_VERB_GROUPS = (
    "use employ utilise utilize",
    "need require",
    "buy bought purchase",
    "check inspect",
    "start begin commence",
    "help assist aid",
    "put place",
    "show display",
    "choose select pick",
    "fix repair",
    "get obtain receive",
    "give provide supply",
    "keep maintain retain",
    "try attempt",
    "find locate",
    "stop halt",
    "grow cultivate",
    "move shift",
    "let allow permit",
    "remove detach",
    "end finish",
    "wait pause",
    "say state",
    "cut trim snip",
    "make create",
    "ensure",
)
# Phrases that mean one of the words above (matched case-insensitively, before the words are read).
_PHRASES = {
    "make sure": "ensure",
    "take out": "remove",
    "switch on": "turn on",
    "switch off": "turn off",
    "per cent": "percent",
}
_PHRASE = re.compile(r"\b(" + "|".join(map(re.escape, _PHRASES)) + r")\b", re.IGNORECASE)
# '21 degrees Celsius' is '21 °C'.
_DEGREES = re.compile(r"(\d)\s*(?:degrees?|deg\.?)\s+(celsius|fahrenheit|centigrade|[CF]\b)", re.IGNORECASE)


def reword(text: str) -> str:
    """``text`` with the phrases above and spelled-out degrees in their short form."""
    if " " not in text:
        return text
    text = _PHRASE.sub(lambda m: _PHRASES[m.group(1).lower()], text)
    return _DEGREES.sub(lambda m: f"{m.group(1)} °{m.group(2)[0].upper()}", text)


# Direction and comparison words, by what they say; words of one group say the same.
_DIRECTION_GROUPS = (
    ("before", "before prior earlier"),
    ("after", "after afterwards later"),
    ("within", "within"),
    ("more", "more greater most"),
    ("less", "less fewer least"),
    ("above", "above over exceeding"),
    ("below", "below under beneath underneath"),
    ("top", "top upper uppermost"),
    ("bottom", "bottom"),
    ("higher", "higher highest raise raises raised"),
    ("lower", "lower lowest"),
    ("min", "min minimum minimal"),
    ("max", "max maximum"),
    ("increase", "increase increases increased increasing"),
    ("decrease", "decrease decreases decreased decreasing reduce reduces reduced"),
    ("enable", "enable enables enabled"),
    ("disable", "disable disables disabled"),
    ("larger", "larger bigger largest biggest"),
    ("smaller", "smaller smallest"),
    ("longer", "longer longest"),
    ("shorter", "shorter shortest"),
    ("faster", "faster quicker fastest quickest"),
    ("slower", "slower slowest"),
    ("warmer", "warmer hotter warmest"),
    ("cooler", "cooler colder coolest coldest"),
    ("inside", "inside indoors"),
    ("outside", "outside outdoors"),
    ("first", "first"),
    ("last", "last"),
    ("up", "up"),
    ("down", "down"),
    ("early", "early"),
    ("late", "late"),
    ("high", "high"),
    ("low", "low"),
)
DIRECTIONS = {w: pole for pole, group in _DIRECTION_GROUPS for w in group.split()}


@lru_cache(maxsize=1)
def _synonyms() -> dict[str, str]:
    out = {}
    for group in _VERB_GROUPS:
        head, *_ = words = group.split()
        for word in words:  # every inflection: 'used' stems to 'us', 'uses' to 'use'
            base = word[:-1] if word.endswith("e") else word
            for form in (word, word + "s", word + "es", base + "ed", base + "ing"):
                out[word_stem(form)] = word_stem(head)
    return out


def canonical(stem: str) -> str:
    """The stem a synonym group is read as ('employ' → 'use')."""
    return _synonyms().get(stem, stem)


# The direction group of each word as the check reads it (lower-cased, or its stem).
DIRECTION_OF = {**{word_stem(w): group for w, group in DIRECTIONS.items()}, **DIRECTIONS}


def direction_of(value: str) -> str | None:
    """The direction group of a word as the check reads it (lower-cased, or its stem), or None."""
    return DIRECTION_OF.get(value)


_STARTS = frozenset(".!?:;—–")  # what a capitalised word may follow as a sentence start

# ---- names and facts ---------------------------------------------------------------------------

_SCAN = re.compile(r"\d+(?:[.,]\d+)*(?:-\d+(?:[.,]\d+)*)*|[^\W\d_]+(?:['’][^\W\d_]+)*|[.!?:;—–](?=\s|$)")
# Where one fact ends and the next begins: a comma, a bracket, a dash, a subordinate clause.
_FACT_BREAK = re.compile(
    r"(,\s(?![\d$€£-])|;\s|\((?![\d$€£-])|[)\[\]]|\s[—–-]\s"
    r"|\s(?:which|while|whereas|because|although|though|unless|until|when|if|where)\s)",
    re.IGNORECASE,
)

# ('name' | 'word' | 'number' | 'unit' | 'stop', lower-cased text, first in its sentence)
Item = tuple[str, str, bool]


def scan(text: str, units: frozenset[str] | dict = frozenset()) -> list[list[Item]]:
    """The words of ``text`` by fact (see ``_FACT_BREAK``), each marked as a name (camel case,
    capitals, a capitalised word inside a sentence, or first in it), a number, a unit (one of
    ``units`` right after a number: '4 L', '179 USD') or another word."""
    parts: list[list[Item]] = []
    first = True
    pieces = _FACT_BREAK.split(text)
    for n, chunk in enumerate(pieces[::2]):
        if n and pieces[2 * n - 1].strip() in (";", "—", "–", "-"):
            first = True  # 'Chervil — Light hours: 12': a new statement
        items: list[Item] = []
        for m in _SCAN.finditer(chunk):
            tok = m.group()
            if tok in _STARTS:
                first = True
                items.append(("stop", tok, False))
            elif tok[0].isdigit():
                items.append(("number", tok.replace(",", "."), first))
                first = False
            elif items and items[-1][0] == "number" and tok.lower() in units:
                items.append(("unit", tok.lower(), False))
            else:
                upper = tok[0].isupper() and (len(tok) > 1 or first)
                # 'FAQ', 'FarmBot' (shaped: two capitals or more) are names wherever they stand
                shaped = first and upper and sum(c.isupper() for c in tok) > 1
                items.append(("name" if upper else "word", tok.lower(), first and upper and not shaped))
                first = False
        parts.append(items)
    return parts


Fact = tuple[frozenset[str], frozenset[str], str]  # names, other words, the number


def facts(parts: list[list[Item]], is_name) -> list[Fact]:
    """Each number with what it is said of: the names and the other words since the part's start
    or the last run of numbers ('The Grove 6 holds 14 litres' gives ({grove, 6}, {the, holds},
    '14'); 'set your home (0, 1800, 0)' gives ({}, {set, your, home}, '1800')). A number right
    after a name is part of the name."""
    out = []
    for items in parts:
        names: list[str] = []
        words: list[str] = []
        previous = ""
        for kind, value, first in items:
            if kind == "stop":  # a sentence ends: so does what the next number is said of
                names, words, previous = [], [], ""
                continue
            named = kind == "name" and is_name(value, first)
            if kind == "number" and previous == "name":  # 'Grove 6': the name goes on
                names.append(value)
                continue
            elif kind == "number":
                out.append((frozenset(names), frozenset(words), value))
            elif previous == "number":
                names, words = [], []
            if named:
                names.append(value)
            elif kind != "number":
                words.append(value)
            previous = "name" if named else kind
    return out


def name_key(word: str) -> str:
    """A name as compared: lower-cased, without a possessive ("FarmBot's" is FarmBot)."""
    low = word.lower().replace("’", "'")
    return low[:-2] if low.endswith("'s") else low


# ---- clauses -----------------------------------------------------------------------------------

_CLAUSE = re.compile(
    r",\s|;\s|\s[—–-]\s|[()\[\]]"
    r"|\s(?:and|but|or|so|which|while|whereas|because|although|though|then|unless|until|when|if|where|once|whether)\s",
    re.IGNORECASE,
)


def clauses(text: str) -> list[str]:
    """The clauses of a sentence, each with at least one word or number."""
    return [c for c in (p.strip(" ,;:.!?") for p in _CLAUSE.split(text)) if any(ch.isalnum() for ch in c)]


# Where a sentence joins two statements (not a list: ', and 40%' goes on listing numbers); a
# dash joins a name and what is said of it ('Chervil — Light hours: 12').
_JOINT = re.compile(r";\s+|\s[—–]\s|,\s+(?:and|but|so|while|whereas)\s+(?![\d$€£])", re.IGNORECASE)


def statements(text: str) -> list[str]:
    """The statements a sentence joins with a semicolon or a comma and a conjunction (two
    sentences of a source merged into one), read apart where numbers are compared."""
    return [p for p in _JOINT.split(text) if p.strip()]
