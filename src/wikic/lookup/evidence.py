"""Whether the retrieved sections can answer a question, or the answer must be the refusal.

The evidence is the text of the first ``EVIDENCE_TOP`` current sections the lookup found (with
their documents' titles, headings and frontmatter fields). A question is refused when:

1. **a named thing is not in the evidence**: a product, brand, model or feature the question
   names, written as a name (capitalised inside the sentence, mixed case, all capitals, or
   letters and digits together: 'Home Assistant', 'HomeKit', 'PDF', 'Pi 5', '230V'), must occur
   in one evidence section, its words within a few words of each other;
2. **a feature it asks about is not in the evidence**: the object of 'is there a…', 'does … support
   …', 'work with…', 'compatible with…', 'integrate with…', 'sync with…', 'run on…', 'connect to…',
   'pair with…', when it is a phrase of two words or more ('dark mode', 'two-factor
   authentication'), must occur in one evidence section the same way, even if each word occurs
   somewhere in the knowledge base;
3. **its words are foreign to the knowledge base**: the rarity-weighted share of its words that
   no source uses (nor a word sharing their first five letters) reaches ``FOREIGN_SHARE``;
4. **the evidence is weak**: the rarity-weighted share of its words the evidence holds is below
   ``REFUSE_BELOW``, counting only the sections that hold ``ABOUT`` of its words or more: a
   section sharing one word with it shares it by chance ('Can you hear me now?' for 'can the
   camera tell me whether…', a setting that 'tells' the motors how far to turn).

The thresholds were calibrated on the FarmBot dev questions, a held-out set of FarmBot questions
and the example KB's questions together (see the README for the curve).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..compile.citations import stem
from ..compile.searchindex.chunks import split_ref
from ..core.facts import format_value
from ..core.markdown import STOPWORDS, plain_inline, split_sentences, words
from ..core.models import SourceDoc
from .counts import PREFIX  # a word matches another sharing this many first letters ('powdery' ~ 'powder')
from .text import query_terms

EVIDENCE_TOP = 5  # sections whose text counts as evidence
REFUSE_BELOW = 0.2  # evidence coverage below this → refuse
ABOUT = 2  # of the question's words (all, when it has fewer) a section holds to count as evidence
FOREIGN_SHARE = 0.5  # share of the question's (weighted) words no source uses → refuse
WINDOW = 6  # words of a name or feature phrase must lie within this many words of each other

_TOKEN = re.compile(r"[\w'’+.-]+")
_CONTRACTION = re.compile(r"^I['’]")
_FEATURE = re.compile(
    r"\b(?:is there(?: a| an| any)?|are there(?: any)?|supports?|works? with|compatible with|"
    r"integrat\w* with|sync\w* with|runs? on|connects? to|pair\w* with|get (?:a|an))\s+(.*)",
    re.IGNORECASE,
)
# ... or the subject of 'how many years of warranty come with…', 'what accessories are included with…'
_INCLUDED = re.compile(
    r"\b(?:how many|how much|what|which)\s+(.*?)\s+(?:comes?|is included|are included|ships?)\s+with\b",
    re.IGNORECASE,
)
_PHRASE_END = re.compile(
    r"\b(?:for|in|on|to|with|from|of|that|which|so|when|if|or|and|by|at|into)\b|[?,.!;:]"
)
_VAGUE = frozenset({"way", "official", "option", "setting", "thing", "something", "anything"})


@dataclass(frozen=True)
class Judgement:
    """``coverage``: the rarity-weighted share of the question's words the evidence holds;
    ``reason``: why the question is refused ('' when it is answered)."""

    coverage: float
    reason: str = ""

    @property
    def refused(self) -> bool:
        return bool(self.reason)


def section_text(docs: Mapping[str, SourceDoc], ref: str) -> str:
    """A layer-1 section's text with its document's title and its heading path ('' when the
    document is gone); a document's first section (or the whole) with its description."""
    path, anchor = split_ref(ref)
    doc = docs.get(path)
    if doc is None:
        return ""
    parts = [doc.title]
    for s in doc.sections:
        if s.anchor == anchor or not anchor:
            parts += [" ".join(s.path), plain_inline(s.text)]
            if anchor:
                break
    if not anchor or anchor == (doc.sections[0].anchor if doc.sections else ""):
        desc = doc.meta.get("description")
        if isinstance(desc, str):
            parts.append(desc)
    return "\n".join(parts)


def evidence_texts(
    docs: Mapping[str, SourceDoc], current: Sequence[str], top: int = EVIDENCE_TOP
) -> list[str]:
    """The evidence: the text of the first ``top`` of the ``current`` sections found (none of a
    superseded version), each with its document's fields."""
    out = []
    for ref in current[:top]:
        doc = docs.get(split_ref(ref)[0])
        fields = " ".join(format_value(v) for k, v in doc.meta.items() if k != "layer0") if doc else ""
        out.append(section_text(docs, ref) + "\n" + fields)
    return out


def coverage(terms: Sequence[str], text: str, weight: Callable[[str], float]) -> float:
    """The rarity-weighted share of ``terms`` that ``text`` holds."""
    total = sum(weight(t) for t in terms)
    return sum(weight(t) for t in held_terms(terms, text)) / total if total else 0.0


def held_terms(terms: Sequence[str], text: str) -> list[str]:
    """The ``terms`` that ``text`` holds (as stems; a non-Latin term as written)."""
    vocab = {stem(w) for w in words(text)}
    low = text.lower()
    return [t for t in terms if stem(t) in vocab or (not t.isascii() and t in low)]


def names(question: str) -> list[str]:
    """The names a question uses: runs of words written as names (see the module docstring), with a
    number that follows one ('Pi 5'); a sentence's first word, 'I' and its contractions, and
    counts such as '16-pocket' are not names."""
    out: list[str] = []
    for sentence in split_sentences(question):
        run: list[str] = []
        for i, raw in enumerate(_TOKEN.findall(sentence)):
            tok = raw.strip(".'’-")
            if _is_name(tok, first=i == 0) or (run and tok.isdigit()):
                run.append(tok)
                continue
            if run:
                out.append(" ".join(run))
            run = []
        if run:
            out.append(" ".join(run))
    return out


def _is_name(tok: str, first: bool) -> bool:
    if not tok or tok == "I" or _CONTRACTION.match(tok) or tok.lower() in STOPWORDS:
        return False
    if re.match(r"^\d+-", tok):  # '16-pocket', '3-way': a count, not a name
        return False
    capital = tok[0].isupper() and not first
    mixed = bool(re.search(r"[a-z][A-Z]", tok)) or (tok[0].islower() and any(c.isupper() for c in tok))
    shouted = tok.isupper() and len(tok) > 1 and tok.isalpha()
    alnum = bool(re.search(r"[A-Za-z]", tok)) and bool(re.search(r"\d", tok))
    return capital or mixed or shouted or alnum


def feature(question: str) -> list[str]:
    """The content words of the feature a question asks about ('is there a dark mode…' → dark,
    mode), or [] when it asks about none or names it in a single word."""
    m = _FEATURE.search(question) or _INCLUDED.search(question)
    if not m:
        return []
    rest = m.group(1)
    end = _PHRASE_END.search(rest) if m.re is _FEATURE else None
    phrase = [
        w for w in words(rest[: end.start()] if end else rest) if w not in STOPWORDS and w not in _VAGUE
    ]
    return phrase if len(phrase) > 1 else []


def _same(a: str, b: str) -> bool:
    return a == b or (len(a) >= PREFIX and len(b) >= PREFIX and a[:PREFIX] == b[:PREFIX])


def near(phrase: Sequence[str], text: str, window: int = WINDOW) -> bool:
    """Whether every word of ``phrase`` occurs in ``text`` within ``window`` words of the first."""
    toks = [stem(w) for w in words(text)]
    want = [stem(w) for w in phrase]
    if not want:
        return True
    spots = [[i for i, t in enumerate(toks) if _same(t, w)] for w in want]
    if any(not s for s in spots):
        return False
    return any(all(any(abs(j - i) <= window for j in s) for s in spots[1:]) for i in spots[0])


def judge(
    question: str,
    evidence: Sequence[str],
    weight: Callable[[str], float],
    known: Callable[[str, bool], bool],
    coverage: Callable[[Sequence[str], str], float],
) -> Judgement:
    """Whether ``evidence`` (one text per section) can answer ``question``. ``weight(term)`` is a
    term's rarity, ``known(term, prefix)`` whether any source uses it (or, with ``prefix``, a
    word it begins), and ``coverage(terms, text)`` the rarity-weighted share of ``terms`` that
    ``text`` holds."""
    terms = query_terms(question)
    about = [text for text in evidence if len(held_terms(terms, text)) >= min(ABOUT, len(terms))]
    held = coverage(terms, "\n".join(about))
    for name in names(question):
        if not any(near(words(name), text) for text in evidence):
            return Judgement(held, f"it names {name!r}, which the sources found do not mention")
    wanted = feature(question)
    if wanted and not any(near(wanted, text) for text in evidence):
        return Judgement(held, f"it asks about {' '.join(wanted)!r}, which the sources found do not mention")
    total = sum(weight(t) for t in terms)
    foreign = [t for t in terms if not known(t, False) and not (len(t) > PREFIX and known(t[:PREFIX], True))]
    if total and sum(weight(t) for t in foreign) / total >= FOREIGN_SHARE:
        return Judgement(held, f"the knowledge base never uses {', '.join(foreign)!r}")
    if held < REFUSE_BELOW:
        return Judgement(held, f"the sources found hold only {held:.0%} of what it asks")
    return Judgement(held)


__all__ = [
    "ABOUT",
    "EVIDENCE_TOP",
    "Judgement",
    "coverage",
    "evidence_texts",
    "feature",
    "held_terms",
    "judge",
    "names",
    "near",
    "section_text",
]
