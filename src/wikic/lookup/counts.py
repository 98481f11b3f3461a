"""How many layer-1 sections hold each word a question is read by: its term counts.

A lookup writes the words no source holds as words some do (``respell.py``), weighs a question's
words by their rarity (judging the evidence, scoring the answer's units), and tells the entities
and subjects it names by their rare words. Every count those steps need is read in the
question's pass (``SearchIndex.term_counts``): first the counts of its own words (``wanted``),
then, for the words no source holds, those of the words they may be written as
(``alternatives_wanted``). A count nobody foresaw is read when asked for, and ``late`` says how
many were.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from ..core.words import words
from .respell import RESPELL_CAP, alternatives, spelled_words
from .text import query_terms

ALL = -1  # count every section holding a term: its rarity; a cap of 1 asks only whether any does
PREFIX = 5  # a word no source holds is known by a word sharing this many first letters

Term = tuple[str, bool]  # (term, prefix): with prefix, the sections holding a word it begins
Wanted = dict[Term, int]  # the counts to read, each up to a cap (ALL: no cap)
Reader = Callable[[Mapping[Term, int]], Mapping[Term, int]]  # reads counts, in one statement


class TermCounts:
    """The counts read for one question. ``read`` reads counts in one statement; ``sources``
    says how many layer-1 sections there are (asked only when a rarity is)."""

    def __init__(self, read: Reader, sources: Callable[[], int]):
        self._read = read
        self._sources = sources
        self._got: dict[Term, tuple[int, int]] = {}  # term → (count, the cap it was read up to)
        self.late = 0  # counts read after the pass, when asked for

    @property
    def sources(self) -> int:
        return self._sources()

    def add(self, wanted: Mapping[Term, int]) -> None:
        """Read the counts of ``wanted`` that are not known yet, in one statement."""
        need = {term: cap for term, cap in wanted.items() if not self._holds(term, cap)}
        if need:
            for term, n in self._read(need).items():
                self._got[term] = (n, need[term])

    def _holds(self, term: Term, cap: int) -> bool:
        got = self._got.get(term)
        if got is None:
            return False
        n, read_to = got
        return read_to == ALL or n < read_to or (cap != ALL and cap <= read_to)

    def df(self, term: str, prefix: bool = False, cap: int = ALL) -> int:
        """How many sections hold ``term`` (counting at most ``cap`` of them)."""
        key = (term, prefix)
        if not self._holds(key, cap):
            self.late += 1
            self.add({key: cap})
        n = self._got[key][0]
        return n if cap == ALL else min(n, cap)

    def known(self, term: str, prefix: bool = False) -> bool:
        """Whether any section holds ``term`` (with ``prefix``, a word it begins)."""
        return self.df(term, prefix, 1) > 0

    def weight(self, term: str) -> float:
        """The term's rarity: its inverse document frequency among layer-1 sections."""
        return math.log((self.sources + 1) / (self.df(term) + 0.5))

    def spelling_count(self, word: str) -> int:
        """The count ``respell`` chooses a split by (past ``RESPELL_CAP`` no count differs)."""
        return self.df(word, cap=RESPELL_CAP)

    def unknown(self, terms: Iterable[str]) -> list[str]:
        """Those of ``terms`` no section holds (each already counted)."""
        return [t for t in terms if not self.known(t)]


def wanted(question: str, weigh: bool) -> Wanted:
    """The counts a question needs first: whether each word it may respell is known and, with
    ``weigh``, the rarity of each of its words, of the word without a plural ending and of its
    plurals (a subject it names is found under any of them)."""
    out: Wanted = dict.fromkeys(((w, False) for w in spelled_words(question)), 1)
    if weigh:
        for w in [*query_terms(question), *words(question)]:
            out |= dict.fromkeys(((x, False) for x in (w, *plural_family(w))), ALL)
    return out


def alternatives_wanted(counts: TermCounts, question: str, weigh: bool) -> Wanted:
    """The counts a question needs once its own are known: those of the words it may be
    respelled as, for each word no source holds, and, with ``weigh``, whether each of its search
    terms no source holds begins a word some do ('powdery' as 'powde…')."""
    out: Wanted = {}
    for word in counts.unknown(spelled_words(question)):
        for alt in alternatives(word):
            cap = ALL if weigh else RESPELL_CAP
            out |= dict.fromkeys(((x, False) for x in (alt, *(plural_family(alt) if weigh else ()))), cap)
    if weigh:
        out |= {(t[:PREFIX], True): 1 for t in counts.unknown(query_terms(question)) if len(t) > PREFIX}
    return out


def plural_family(word: str) -> list[str]:
    """Every word that ``plural_stem`` makes the same as ``word`` does ('berry' and 'berries';
    'tomato', 'tomatos' and 'tomatoes')."""
    from ..core.facts import plural_stem  # here: only weighing a question needs it, not a search

    stem = plural_stem(word)
    forms = [stem, stem + "s", stem + "es"]
    if stem.endswith("y"):
        forms.append(stem[:-1] + "ies")
    return [f for f in dict.fromkeys(forms) if plural_stem(f) == stem]


__all__ = ["ALL", "TermCounts", "alternatives_wanted", "plural_family", "wanted"]
