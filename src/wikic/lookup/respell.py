"""Writing a question in the words the sources use: pure functions over term counts.

A word no layer-1 section contains is written as words some do contain, and everything else is
kept exactly as typed: two words run together as those two ('sweetcorn' → 'sweet corn', chosen
by the split whose rarer half is most common), and a derived word as the word it derives from
('crusty' → 'crust'). Which words a source contains is read from the search index's term counts
(``SearchIndex.counts``); the words worth counting are ``spelled_words`` of the question and,
for those no source contains, their ``alternatives``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

COMPOUND_PART = 3  # shortest half when an unknown word is split in two
RESPELL_CAP = 1000  # document counts past this make no difference when choosing a split
BASE_MIN = 3  # shortest base a derived word is searched as
# Endings that make an adjective or adverb of a word, and what the word ended in before them:
# 'crusty' → 'crust', 'slimy' → 'slime', 'easily' → 'easy', 'greenish' → 'green'.
_DERIVED = (("ily", ("y",)), ("ly", ("",)), ("ish", ("", "e")), ("y", ("", "e")))
_LATIN = re.compile(r"[A-Za-z]+")

Count = Callable[[str], int]  # how many layer-1 sections hold a word


def split_compound(word: str, doc_freq: Count, known: Callable[[str], bool] | None = None) -> str | None:
    """A word the index has never seen split into two words it has ('sweetcorn' → 'sweet corn',
    'bluetooth' → 'blue tooth'), choosing the split whose rarer half is most common; None when
    the word is known, short, not plain Latin letters, or splits into nothing known. ``known``
    is a cheaper test than ``doc_freq`` for whether the whole word occurs."""
    if not _splittable(word):
        return None
    if (known or doc_freq)(word):
        return None
    best: tuple[int, str] | None = None
    for left, right in _halves(word):
        common = min(doc_freq(left), doc_freq(right))
        if common and (best is None or common > best[0]):
            best = (common, f"{left} {right}")
    return best[1] if best else None


def base_form(word: str, known: Callable[[str], bool]) -> str | None:
    """A word the index has never seen searched as the word it derives from, when the index
    has that one ('crusty' → 'crust', 'muddy' → 'mud'); None when the word is known or derives
    from nothing known."""
    if not (word.isascii() and word.isalpha()) or known(word):
        return None
    for base in _bases(word):
        if len(base) >= BASE_MIN and known(base):
            return base
    return None


def respell(
    query: str, df: Count, known: Callable[[str], bool], split: bool = True, derive: bool = False
) -> str:
    """``query`` with the words no layer-1 section contains written as words some do contain
    (``df``: how many sections hold a word, counted up to ``RESPELL_CAP``; ``known``: whether
    any does); the rest is kept exactly as typed. With ``split``, two words run together are
    written as those two ('fulltank' → 'full tank'); with ``derive``, a derived word as the
    word it derives from ('crusty' → 'crust')."""

    def fix(m: re.Match) -> str:
        word = m.group().lower()
        if split and (whole := split_compound(word, df, known)):
            return whole
        return (derive and base_form(word, known)) or m.group()

    return _LATIN.sub(fix, query)


def spelled_words(query: str) -> list[str]:
    """The words ``respell`` asks the count of first: each run of Latin letters, lowercased."""
    return list(dict.fromkeys(m.group().lower() for m in _LATIN.finditer(query)))


def alternatives(word: str) -> list[str]:
    """The words ``respell`` may write an unknown ``word`` as, and so asks the count of: its two
    halves at every split, and the words it may derive from."""
    out = [half for pair in _halves(word) for half in pair] if _splittable(word) else []
    if word.isascii() and word.isalpha():
        out += [b for b in _bases(word) if len(b) >= BASE_MIN]
    return list(dict.fromkeys(out))


def _splittable(word: str) -> bool:
    return len(word) >= 2 * COMPOUND_PART + 1 and word.isascii() and word.isalpha()


def _halves(word: str) -> list[tuple[str, str]]:
    return [(word[:i], word[i:]) for i in range(COMPOUND_PART, len(word) - COMPOUND_PART + 1)]


def _bases(word: str) -> list[str]:
    """The words ``word`` may derive from, in the order they are tried."""
    out: list[str] = []
    for suffix, ends in _DERIVED:
        if not word.endswith(suffix):
            continue
        root = word[: -len(suffix)]
        undoubled = root[:-1] if root[-2:-1] == root[-1:] else root  # 'mudd' → 'mud'
        out += [*(root + end for end in ends), undoubled]
    return list(dict.fromkeys(out))


__all__ = ["alternatives", "base_form", "respell", "spelled_words", "split_compound"]
