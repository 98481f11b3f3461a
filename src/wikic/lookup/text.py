"""The words of a query and how the index stores and matches them: pure text handling.

Chinese, Japanese and Korean text is indexed as overlapping character bigrams (the unicode61
tokenizer would keep a whole run of CJK characters as one token), and queries are split the same
way. A query is never an AND of all its words: content words are quoted (so user input cannot
break the FTS syntax) and OR-ed, and BM25 ranks documents by how many, and how rare, the words
they hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..compile.searchindex.cjk import cjk_bigrams, cjk_patterns, has_cjk
from ..core.errors import UsageError
from ..core.words import STOPWORDS, words

STRONG_TOP = 0.85
STRONG_GAP = 0.15
MAX_QUERY_CHARS = 2000  # a question, not a document
MAX_WORD_CHARS = 100  # no word is longer; matching cost grows with the square of a word's length
PREFIX_MIN = 4  # shortest term searched as a prefix in prefix queries


def query_terms(query: str) -> list[str]:
    """The words of a natural-language query worth searching for: stopwords, personal pronouns and
    the pronouns and negations of contractions dropped ("I've", "don't"; "bot's" is searched as "bot") unless
    nothing else is left, CJK runs split into bigrams, duplicates removed, order kept."""
    latin: list[str] = []
    cjk: list[str] = []
    for w in map(uncontract, words(query)):
        if not w:
            continue
        if has_cjk(w):
            run_of = cjk_patterns()[0]
            for run in run_of.findall(w):
                cjk.extend(cjk_bigrams(run))
            rest = run_of.sub(" ", w).split()
            latin.extend(rest)
        else:
            latin.append(w)
    content = [w for w in latin if w not in STOPWORDS and w not in PRONOUNS]
    return list(dict.fromkeys((content or latin) + cjk))


# The personal pronouns the stopwords leave out: a question's 'me' or 'him' names no subject, and a
# source that happens to say it ('Can you hear me now?') holds nothing the question asks for.
PRONOUNS = frozenset("me him her he she his hers mine ours myself yourself ourselves themselves".split())


def check_query(query: str) -> None:
    """A UsageError for a query past the caps, before any work is done on it."""
    longest = max(query.split(), key=len, default="")
    if len(longest) > MAX_WORD_CHARS:
        raise UsageError(
            f"the query has a {len(longest):,}-character word ({longest[:20]}…); words longer than "
            f"{MAX_WORD_CHARS} characters are not searched"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are searched. "
            "Ask with fewer words"
        )


_CONTRACTED = re.compile(r"^(\w+)['’](s|m|ve|ll|re|d|t)$")


def uncontract(word: str) -> str:
    """'bot's' → 'bot', "it'll" → 'it', "don't" → '' (a negation says nothing to search for)."""
    m = _CONTRACTED.match(word)
    if not m:
        return word
    return "" if m.group(2) == "t" else m.group(1)


def match_expression(terms: Sequence[str], prefix: bool = False) -> str:
    """An FTS5 MATCH string that ORs the quoted terms; a lone CJK character matches as a prefix,
    and with ``prefix`` so does every Latin term of ``PREFIX_MIN`` letters or more ('safe' finds
    'safety', 'rain' finds 'rainproof')."""
    parts = []
    for t in terms:
        quoted = '"' + t.replace('"', '""') + '"'
        if (len(t) == 1 and has_cjk(t)) or (prefix and len(t) >= PREFIX_MIN and t.isalpha()):
            quoted += "*"
        parts.append(quoted)
    return " OR ".join(parts)


def normalise(score: float) -> float:
    """A BM25 score mapped into [0, 1): |x| / (1 + |x|). SQLite's bm25() is negative, better = lower."""
    x = abs(score)
    return x / (1.0 + x)


def is_strong_signal(scores: Sequence[float], top: float = STRONG_TOP, gap: float = STRONG_GAP) -> bool:
    """True when the BM25 probe already answers the query: the normalised top score is ≥ ``top``
    and its gap to the second is ≥ ``gap`` (a lone hit has the whole score as its gap)."""
    if not scores:
        return False
    norm = sorted((normalise(s) for s in scores), reverse=True)
    second = norm[1] if len(norm) > 1 else 0.0
    return norm[0] >= top and norm[0] - second >= gap


def snippet(text: str, terms: Sequence[str], width: int = 160) -> str:
    """A window of ``text`` around the first query term it contains, on one line."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    low = flat.lower()
    best = -1
    for t in terms:
        i = low.find(t.lower()) if has_cjk(t) else _word_find(low, t.lower())
        if i >= 0 and (best < 0 or i < best):
            best = i
    start = max(0, best - width // 3) if best >= 0 else 0
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < best else start
    out = flat[start : start + width].rstrip()
    return ("…" if start else "") + out + ("…" if start + width < len(flat) else "")


def _word_find(text: str, term: str) -> int:
    m = re.search(r"\b" + re.escape(term[: max(4, len(term) - 2)]), text)
    return m.start() if m else -1
