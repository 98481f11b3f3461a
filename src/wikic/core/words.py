"""The words of a text, as search and every stage count them (``markdown.py`` re-exports them): in a
module of their own so that a search, which needs them, does not load the Markdown parser."""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*", re.UNICODE)

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its may more most my no not of on or our so such than that the their them then there these they this
    to too up was we were what when where which while who why will with you your yours also any all each
    about after before over under should would just only very much many some one""".split()
)


def words(text: str) -> list[str]:
    if text.isascii():  # lower case first: the same words, found in one pass
        return WORD.findall(text.lower())
    return [w.lower() for w in WORD.findall(text)]


# A writer speaking for themself ('… and I cut it at around nine days'): a story, not a definition
# or a procedure.
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|[Mm]y|[Mm]e)\b")


def listing(items: list[str], most: int | None = None) -> str:
    """Items as a sentence lists them: 'A', 'A and B', 'A, B and C'; past ``most``, the first
    ``most`` and how many more ('A, B and 3 more')."""
    if most is not None and len(items) > most:
        return ", ".join(items[:most]) + f" and {len(items) - most} more"
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)
