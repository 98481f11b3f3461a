"""Undeclared disagreements between sources that name different things for the same job.

Numbers that differ are the contradiction rule's (``lint.contradictions``) and changes over time
are the timeline's (``timeline``). This module finds sources that, for the same task or part,
*name* different things, and never mention each other's choice:

- **tools**: 'use a special writing tool called Raspberry Pi Imager' and 'flash the microSD card
  using the special Etcher program' (a name right after use / using / called / with / via);
- **kinds of a thing**: 'apply synthetic lubricant to the leadscrew' and 'use a dry graphite
  lubricant' (one distinctive noun, different words before it);
- **model variants**: 'Raspberry Pi Zero W, included with Express kits' and 'Express … a
  Raspberry Pi Zero 2 W computer' (names that differ by a number or version);
- **port lists**: 'Port 8883 · Port 80 · Port 443 · Port 3002' and 'ports 1883 (MQTT), 8883
  (MQTT over SSL), 80 (HTTP), and 443 (HTTPS) … UDP port 123': two sections that each list the
  ports to open, and each lists one the other does not (an IT department is given one list).

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
from ..core.words import listing
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


@dataclass(frozen=True)
class _Sentence:
    """A sentence that names a choice, as said by one or more documents (analysed once however
    many say it; its kinds depend on the document, so one text may give two of these)."""

    text: str
    words: frozenset[str]  # distinctive word stems
    tools: frozenset[str]
    kinds: frozenset[tuple[str, str]]  # (head noun, modifier)
    names: frozenset[str]
    prescribes: bool
    said: tuple[tuple[SourceDoc, str], ...]  # (document, anchor) of each place it is said


GROUP = 200  # a word more sentences that name a choice share is no subject of theirs


def disagreements(
    docs: list[SourceDoc], said: dict[str, list[tuple[str, str]]], df: Counter, limit: int = MAX_PAIRS
) -> list[Disagreement]:
    """Pairs of current documents that name different things for the same job, strongest first
    (``said``: each document's ``(anchor, sentence)`` list, as ``timeline.sentences_of``; ``df``:
    how many documents use each word stem).

    Each distinct sentence is analysed once, and only those that name a choice (a tool, a kind of
    a thing, a model's name) are compared: sentences sharing a distinctive word (their subject)
    in pairs, names of one model's variants by name. A pair of sentences is then a disagreement
    between the documents that say them, except where a document names both choices."""
    rare = max(2, RARE * len(docs))
    sentences = _sentences(docs, said, df, rare)
    texts = _Texts()
    found: dict[tuple, tuple[int, int, Disagreement]] = {}
    for x, y, n in _sharing(sentences):
        for kind, ca, cb, strength in _choices(x, y, n):
            wa, wb = (ca.split()[0], cb.split()[0]) if kind == "kind" else (ca, cb)
            _between(found, kind, x, y, (ca, cb), (wa, wb), strength, texts, limit, titles=True)
    for x, y, a, b, strength in _variant_pairs(sentences):
        _between(found, "variant", x, y, (a, b), (a, b), strength, texts, limit, titles=False)
    # strongest first; of many documents saying the same two sentences, one pair each before a second
    ranked = sorted(
        found.values(), key=lambda t: (-t[0], -t[1], t[2].a.doc.path, t[2].b.doc.path, t[2].choice_a)
    )
    return (port_lists(docs, said) + [d for _, _, d in ranked])[:limit]


def _sentences(
    docs: list[SourceDoc], said: dict[str, list[tuple[str, str]]], df: Counter, rare: float
) -> list[_Sentence]:
    """The sentences that name a choice, each text once per set of kinds its documents give it."""
    found: dict[str, tuple | None] = {}  # text → its analysis (None: it names no choice)
    places: dict[tuple, list[tuple[SourceDoc, str]]] = defaultdict(list)
    wanted: dict[str, set[str]] = defaultdict(set)  # path → modifiers whose count there matters
    occurrences = []
    for d in docs:
        for anchor, s in said.get(d.path, ()):
            if s not in found:
                found[s] = _analyse(s, df, rare)
            if found[s] is not None:
                occurrences.append((d, anchor, s))
                wanted[d.path] |= {m for _, m in found[s][2]}
    counts = _word_counts(docs, wanted)
    for d, anchor, s in occurrences:
        words, tools, kinds, names, prescribes = found[s]
        own = frozenset((h, m) for h, m in kinds if counts[d.path][m] >= 2)
        if tools or own or any(len(n.split()) >= 3 for n in names):
            places[(s, own)].append((d, anchor))
    return [
        _Sentence(s, found[s][0], found[s][1], own, found[s][3], found[s][4], tuple(at))
        for (s, own), at in places.items()
    ]


def _analyse(s: str, df: Counter, rare: float) -> tuple | None:
    """(distinctive words, tools, kinds before their documents are asked, names, prescribes) of a
    sentence that could name a choice, else None."""
    if not 5 <= len(s.split()) <= 50:
        return None
    prescribes = bool(_PRESCRIBES.search(s))
    if not prescribes and not _VARIANT_HINT.search(s):
        return None  # neither names a choice nor a model variant
    words = frozenset(w for x in tokens(s) if not x[0].isdigit() and df[w := stem(x)] <= rare)
    tools = frozenset(m.group("name").rstrip(".") for m in _TOOL.finditer(s))
    kinds = frozenset(
        (m.group("head"), m.group("mod"))
        for m in _KIND.finditer(s)
        if _a_kind(m.group("mod"), df, rare) and df[stem(m.group("head"))] <= rare
    )
    names = frozenset(
        name
        for m in _VARIANT.finditer(s)
        if (m.start() > 0 or " " in (name := m.group("name").rstrip(".,")))
        and (name := m.group("name").rstrip(".,"))
    )
    return words, tools, kinds, names, prescribes


def _word_counts(docs: list[SourceDoc], wanted: dict[str, set[str]]) -> dict[str, Counter]:
    """How often each document uses the words asked of it (a modifier it uses twice is its choice)."""
    out: dict[str, Counter] = defaultdict(Counter)
    for d in docs:
        if wanted.get(d.path):
            words = wanted[d.path]
            out[d.path] = Counter(w for w in _WORDS.findall(_plain(d)) if w in words)
    return out


def _plain(d: SourceDoc) -> str:
    return plain_inline(d.title + "\n" + d.body).lower()


class _Texts:
    """Documents' lower-cased plain text, worked out for those a pair involves."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def __getitem__(self, d: SourceDoc) -> str:
        if d.path not in self._texts:
            self._texts[d.path] = _plain(d)
        return self._texts[d.path]


def _sharing(sentences: list[_Sentence]):
    """(x, y, how many distinctive words they share) for pairs of sentences naming a tool or a kind
    that share one: each distinctive word groups the sentences about it."""
    choosing = [x for x in sentences if x.tools or x.kinds]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, x in enumerate(choosing):
        for w in x.words:
            postings[w].append(i)
    for i, x in enumerate(choosing):
        shared: Counter = Counter()
        for w in sorted(x.words):
            if len(postings[w]) <= GROUP:
                for j in postings[w]:
                    if j > i:
                        shared[j] += 1
        for j, n in shared.items():
            y = choosing[j]
            if x.prescribes or y.prescribes:
                yield x, y, n


def _between(
    found: dict,
    kind: str,
    x: _Sentence,
    y: _Sentence,
    choices: tuple[str, str],
    words: tuple[str, str],
    strength: int,
    texts: _Texts,
    limit: int,
    titles: bool,
) -> None:
    """Record the disagreements sentences x and y make between the documents that say them: x's
    document names neither x's choice in its title nor y's anywhere, and the other way round.
    Of one pair of sentences only the first ``limit`` document pairs (by path) can rank among
    the first ``limit`` overall, so only they are kept, each with its place among them."""
    (ca, cb), (wa, wb) = choices, words

    def saying(s: _Sentence, mine: str, other: str) -> list[tuple[SourceDoc, str]]:
        out = []
        for d, anchor in sorted(s.said, key=lambda t: (t[0].path, t[1])):
            if (titles and _names(mine, d.title.lower())) or _names(other, texts[d]):
                continue  # a pear's page names pear trees; a page naming both compares them
            out.append((d, anchor))
            if len(out) > limit:
                break
        return out

    pairs = []
    for dx, ax in saying(x, wa, wb):
        for dy, ay in saying(y, wb, wa):
            if dx.path != dy.path:
                a, b = Said(dx, ax, x.text), Said(dy, ay, y.text)
                pairs.append(
                    Disagreement(a, b, ca, cb, kind)
                    if dx.path < dy.path
                    else Disagreement(b, a, cb, ca, kind)
                )
    pairs.sort(key=lambda d: (d.a.doc.path, d.b.doc.path))
    for n, d in enumerate(pairs[:limit]):  # the n-th pair of documents saying these two sentences
        key = (kind, d.a.doc.path, d.b.doc.path, *sorted((ca.lower(), cb.lower())))
        if key not in found or found[key][:2] < (strength, -n):
            found[key] = (strength, -n, d)


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


def _a_kind(word: str, df: Counter, rare: float) -> bool:
    """A modifier naming a kind of thing ('graphite', 'synthetic'): a distinctive word, not a
    position or a verb (its document must also use it more than once: its choice, not a passing
    word; see ``_sentences``)."""
    return (
        word not in STOPWORDS
        and word not in _NOT_KINDS
        and not word.endswith(("ing", "ed"))
        and df[stem(word)] <= rare
    )


def _names(choice: str, text: str) -> bool:
    return bool(re.search(rf"(?<![\w-]){re.escape(choice.lower())}(?![\w-])", text))


def _variant_pairs(sentences: list[_Sentence]):
    """(x, y, name in x, name in y, strength) for sentences naming variants of one model ('Raspberry
    Pi Zero W' / 'Zero 2 W') alongside a common subject ('Express'): names are grouped by their
    first two words, and only names of one group are compared, each pair of names once."""
    by_prefix: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, x in enumerate(sentences):
        for name in sorted(x.names):
            if len(name.split()) >= 3:
                by_prefix[" ".join(name.split()[:2])][name].append(i)
    for names in by_prefix.values():
        ordered = list(names)
        for n, a in enumerate(ordered):
            for b in ordered[n + 1 :]:
                if not _variants(a, b):
                    continue
                for i in names[a]:
                    for j in names[b]:
                        x, y = sentences[i], sentences[j]
                        if i == j or not (x.prescribes or y.prescribes):
                            continue
                        subject_a = {w.lower() for other in x.names - {a} for w in other.split()}
                        subject_b = {w.lower() for other in y.names - {b} for w in other.split()}
                        if (
                            subject_a & subject_b
                        ):  # else variants of one part, in sentences about different things
                            yield x, y, a, b, len(subject_a & subject_b) + 1


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


# 'port 8883', 'PORT: 8883', 'ports 1883 (MQTT), 8883 (MQTT over SSL), 80 (HTTP), and 443': the
# numbers that follow the word, one after another
_PORT = re.compile(
    r"\bports?\s*:?\s*(\d{2,5}(?:\s*\([^)]*\))?(?:\s*(?:,|and|or|&)\s*(?:and\s+)?\d{2,5}(?:\s*\([^)]*\))?)*)(?!\d|\.\d)",
    re.IGNORECASE,
)
PORTS = 3  # ports a section lists, at least, to be a list of the ports to open


def port_lists(docs: list[SourceDoc], said: dict[str, list[tuple[str, str]]]) -> list[Disagreement]:
    """Pairs of sections of two documents that each list the network ports to open (three or
    more) and each name a port the other does not, where neither document names the other's
    anywhere: a support engineer would hand an IT department one list or the other."""
    lists: list[tuple[SourceDoc, str, str, frozenset[int]]] = []  # (doc, anchor, first sentence, ports)
    for d in docs:
        by_anchor: dict[str, tuple[str, set[int]]] = {}
        for anchor, sentence in said.get(d.path, ()):
            found = {
                int(n)
                for m in _PORT.finditer(sentence)
                for n in re.findall(r"\d+", re.sub(r"\([^)]*\)", "", m[1]))
            }
            if found:
                first, ports = by_anchor.setdefault(anchor, (sentence, set()))
                ports |= found
        lists += [(d, a, first, frozenset(p)) for a, (first, p) in by_anchor.items() if len(p) >= PORTS]
    texts = _Texts()
    out = []
    for n, (da, aa, sa, pa) in enumerate(lists):
        for db, ab, sb, pb in lists[n + 1 :]:
            if da.path == db.path or not (pa - pb and pb - pa):
                continue
            if _all_named(pb - pa, texts[da]) or _all_named(pa - pb, texts[db]):
                continue  # a document that names the other's ports too is not giving a different list
            out.append(Disagreement(Said(da, aa, sa), Said(db, ab, sb), _ports(pa), _ports(pb), "ports"))
    return sorted(out, key=lambda d: (d.a.doc.path, d.b.doc.path, d.a.anchor, d.b.anchor))


def _all_named(ports: frozenset[int], text: str) -> bool:
    return all(re.search(rf"(?<![\d.]){p}(?![\d.])", text) for p in ports)


def _ports(ports: frozenset[int]) -> str:
    """'ports 80, 443, 3002 and 8883'."""
    return "ports " + listing([str(p) for p in sorted(ports)])
