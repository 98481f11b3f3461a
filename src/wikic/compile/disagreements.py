"""Undeclared disagreements between sources that name different things for the same job.

Numbers that differ are the contradiction rule's (``lint.contradictions``) and changes over time
are the timeline's (``timeline``). This module finds sources that, for the same task or part,
*name* different things, and never mention each other's choice:

- **tools**: 'use a special writing tool called Raspberry Pi Imager' and 'flash the microSD card
  using the special Etcher program' (a name right after use / using / called / with / via);
- **kinds of a thing**: 'apply synthetic lubricant to the leadscrew' and 'use a dry graphite
  lubricant' (one distinctive noun, different words before it);
- **model variants**: 'Raspberry Pi Zero W, included with Express kits' and 'Express … a
  Raspberry Pi Zero 2 W computer' (names that differ by a number or version).

Both sentences must be about the same thing (sharing distinctive words, or a subject name for
variants), at least one must prescribe or state what is used, and neither document may mention
the other's choice (a document that names both is comparing them, not disagreeing). The result
is a list for review, both sides cited; nothing here decides which source is right.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..core.bm25 import tokens
from ..core.markdown import STOPWORDS, plain_inline
from ..core.models import SourceDoc
from .citations import stem

RARE = 0.05  # a distinctive word is in at most this share of documents
MAX_PAIRS = 50

_WORDS = re.compile(r"[a-z][a-z-]*")
_PRESCRIBES = re.compile(
    r"\b(use|uses|using|used|must|only|should|recommend\w*|apply|applying|called|requires?|need|includes?|"
    r"included|features?)\b",
    re.IGNORECASE,
)
_NAME = r"[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|\d+(?:\.\d+)?[A-Za-z]?|[A-Z]))*"
_TOOL = re.compile(
    rf"\b(?:use|uses|using|called|with|via)\s+(?:an?\s+|the\s+)?(?:special\s+)?(?P<name>{_NAME})"
)
_VARIANT = re.compile(rf"(?<![\w.])(?P<name>{_NAME})")
_VARIANT_HINT = re.compile(r"[A-Z]\w*\s+[A-Z]\w*\s+\w+")  # a name of three words or more
_KIND = re.compile(r"\b(?P<mod>[a-z][a-z-]{3,})\s+(?P<head>[a-z]{4,})s?\b")


@dataclass(frozen=True)
class Said:
    doc: SourceDoc
    anchor: str
    text: str


@dataclass(frozen=True)
class Disagreement:
    a: Said
    b: Said
    choice_a: str
    choice_b: str
    kind: str  # tool | kind | variant

    @property
    def summary(self) -> str:
        return f"{self.choice_a!r} or {self.choice_b!r}"


@dataclass
class _Sentence:
    said: Said
    words: frozenset[str]  # distinctive word stems
    tools: set[str]
    kinds: set[tuple[str, str]]  # (head noun, modifier)
    names: set[str]
    prescribes: bool


def disagreements(
    docs: list[SourceDoc], said: dict[str, list[tuple[str, str]]], df: Counter, limit: int = MAX_PAIRS
) -> list[Disagreement]:
    """Pairs of current documents that name different things for the same job, strongest first
    (``said``: each document's ``(anchor, sentence)`` list, as ``timeline.sentences_of``; ``df``:
    how many documents use each word stem)."""
    rare = max(2, RARE * len(docs))
    text_of = {d.path: plain_inline(d.title + "\n" + d.body).lower() for d in docs}
    counts = {p: Counter(_WORDS.findall(text)) for p, text in text_of.items()}
    sentences: list[_Sentence] = []
    for d in docs:
        for anchor, s in said.get(d.path, ()):
            if not 5 <= len(s.split()) <= 50:
                continue
            prescribes = bool(_PRESCRIBES.search(s))
            if not prescribes and not _VARIANT_HINT.search(s):
                continue  # neither names a choice nor a model variant
            words = frozenset(w for x in tokens(s) if not x[0].isdigit() and df[w := stem(x)] <= rare)
            sentences.append(
                _Sentence(
                    Said(d, anchor, s),
                    words,
                    {m.group("name").rstrip(".") for m in _TOOL.finditer(s)},
                    {
                        (m.group("head"), m.group("mod"))
                        for m in _KIND.finditer(s)
                        if _a_kind(m.group("mod"), counts[d.path], df, rare)
                        and df[stem(m.group("head"))] <= rare
                    },
                    {
                        name
                        for m in _VARIANT.finditer(s)
                        if (m.start() > 0 or " " in (name := m.group("name").rstrip(".,")))
                        and (name := m.group("name").rstrip(".,"))
                    },
                    prescribes,
                )
            )
    postings: dict[str, list[int]] = defaultdict(list)
    for i, x in enumerate(sentences):
        for w in x.words:
            postings[w].append(i)
    found: dict[tuple, tuple[int, Disagreement]] = {}
    for i, x in enumerate(sentences):
        shared: Counter = Counter()
        for w in x.words:
            if len(postings[w]) <= 200:
                for j in postings[w]:
                    if j > i and sentences[j].said.doc.path != x.said.doc.path:
                        shared[j] += 1
        for j, n in shared.items():
            y = sentences[j]
            if not (x.prescribes or y.prescribes):
                continue
            for kind, ca, cb, strength in _choices(x, y, n):
                wa, wb = (ca.split()[0], cb.split()[0]) if kind == "kind" else (ca, cb)
                if _names(wa, x.said.doc.title.lower()) or _names(wb, y.said.doc.title.lower()):
                    continue  # a pear's page names pear trees: its own subject, not a choice
                if _names(wa, text_of[y.said.doc.path]) or _names(wb, text_of[x.said.doc.path]):
                    continue  # one source names both: it compares them
                key = (kind, *sorted((x.said.doc.path, y.said.doc.path)), *sorted((ca.lower(), cb.lower())))
                if key not in found or found[key][0] < strength:
                    found[key] = (strength, Disagreement(x.said, y.said, ca, cb, kind))
    for strength, d in _variant_pairs(sentences, text_of):
        key = (
            "variant",
            *sorted((d.a.doc.path, d.b.doc.path)),
            *sorted((d.choice_a.lower(), d.choice_b.lower())),
        )
        found.setdefault(key, (strength, d))
    ranked = sorted(found.values(), key=lambda t: (-t[0], t[1].a.doc.path, t[1].b.doc.path, t[1].choice_a))
    return [d for _, d in ranked[:limit]]


def _choices(x: _Sentence, y: _Sentence, shared: int):
    """(kind, choice of x, choice of y, strength) for each way x and y name different things."""
    for a in x.tools - y.tools:
        for b in y.tools - x.tools:
            if shared >= 3 and not _overlap(a, b):
                yield "tool", a, b, shared + 2
    heads = {h for h, _ in x.kinds} & {h for h, _ in y.kinds}
    for h in heads:
        ma = {m for hh, m in x.kinds if hh == h} - {m for hh, m in y.kinds if hh == h}
        mb = {m for hh, m in y.kinds if hh == h} - {m for hh, m in x.kinds if hh == h}
        if shared >= 2 and ma and mb and x.prescribes and y.prescribes:
            yield "kind", f"{sorted(ma)[0]} {h}", f"{sorted(mb)[0]} {h}", shared + 1  # compared by modifier


# Words before a noun that say where, which or how many, not what kind.
_NOT_KINDS = frozenset(
    "other both either each every same back front right left upper lower first second third three four two "
    "using includes include including used uses cause causes along main new old small large".split()
)


def _a_kind(word: str, doc_words: Counter, df: Counter, rare: float) -> bool:
    """A modifier naming a kind of thing ('graphite', 'synthetic'): a distinctive word, not a
    position or a verb, that its document uses more than once (its choice, not a passing word)."""
    return (
        doc_words[word] >= 2
        and word not in STOPWORDS
        and word not in _NOT_KINDS
        and not word.endswith(("ing", "ed"))
        and df[stem(word)] <= rare
    )


def _names(choice: str, text: str) -> bool:
    return bool(re.search(rf"(?<![\w-]){re.escape(choice.lower())}(?![\w-])", text))


def _variant_pairs(sentences: list[_Sentence], text_of: dict[str, str]):
    """(strength, disagreement) for sentences of different documents naming variants of one
    model ('Raspberry Pi Zero W' / 'Zero 2 W') alongside a common subject ('Express')."""
    by_prefix: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for i, x in enumerate(sentences):
        for name in x.names:
            if len(name.split()) >= 3:
                by_prefix[" ".join(name.split()[:2])].append((i, name))
    for items in by_prefix.values():
        for n, (i, a) in enumerate(items):
            for j, b in items[n + 1 :]:
                x, y = sentences[i], sentences[j]
                if (
                    x.said.doc.path == y.said.doc.path
                    or not _variants(a, b)
                    or not (x.prescribes or y.prescribes)
                ):
                    continue
                subject_a = {w.lower() for other in x.names - {a} for w in other.split()}
                subject_b = {w.lower() for other in y.names - {b} for w in other.split()}
                if not subject_a & subject_b:
                    continue  # variants of one part, but in sentences about different things
                if _names(a, text_of[y.said.doc.path]) or _names(b, text_of[x.said.doc.path]):
                    continue
                yield len(subject_a & subject_b) + 1, Disagreement(x.said, y.said, a, b, "variant")


def _overlap(a: str, b: str) -> bool:
    return bool(set(a.lower().split()) & set(b.lower().split()))


def _variants(a: str, b: str) -> bool:
    """'Raspberry Pi Zero W' and 'Raspberry Pi Zero 2 W': at least two words in common, the same
    first word, and the only difference a number or version."""
    ta, tb = a.split(), b.split()
    if ta == tb or ta[0] != tb[0] or len(set(ta) & set(tb)) < 2:
        return False
    extra = set(ta) ^ set(tb)
    return bool(extra) and all(re.fullmatch(r"v?\d+(?:\.\d+)*[A-Za-z]?", w) for w in extra)
