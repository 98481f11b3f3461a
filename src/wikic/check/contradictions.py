"""Contradictions: structured fields of one subject, and numbers with units in comparable sentences."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from ..compile.citations import stem
from ..compile.timeline import _UNIT_WORDS, quantities
from ..core.markdown import STOPWORDS, content_words, github_slug, plain_inline
from ..core.models import SourceDoc
from .findings import WARNING, Finding, finding, short
from .state import KB, DocRow

_NOT_FACTS = {
    "title",
    "source",
    "id",
    "url",
    "updated_at",
    "published_at",
    "created_at",
    "generated_by",
    "layer0",
    "supersedes",
    "hand_maintained",
    "author",
    "slug",
    "icon",
    "image",
    "tags",
    "products",
    "category",
    "product",
    "section",
    "type",
    "device",
    "position",
    "order",
    "summary",
    "description",
    "svg_icon",
    "html_url",
}


def _fact_value(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return f"{float(value):g}"
    if isinstance(value, str):
        v = " ".join(value.split())
        if not v or len(v) > 80 or "://" in v or v.startswith("/"):
            return None
        try:
            return f"{float(v):g}"
        except ValueError:
            return v.casefold()
    return None


def _fact_fields(doc: SourceDoc) -> dict[str, tuple[str, Any]]:
    out = {}
    for key, value in doc.meta.items():
        if key in _NOT_FACTS or key.startswith("record_") or key.endswith(("_at", "_url", "_id")):
            continue
        norm = _fact_value(value)
        if norm is not None:
            out[key] = (norm, value)
    return out


def _subject_keys(doc: DocRow) -> list[str]:
    keys = [f"title:{github_slug(doc.title)}"]
    if not doc.id.isdigit():
        keys.append(f"id:{PurePosixPath(doc.id).stem.lower()}")
    return keys


class Claims:
    """What the contradiction rules keep of each layer-1 document as layer 1 is read
    (``state.gather`` passes every document to ``add``): its fact fields, and the sentences that
    state a quantity with their analysis, kept once however many documents say them. Not its
    text."""

    def __init__(self) -> None:
        self.fields: dict[str, dict[str, tuple[str, Any]]] = {}  # path → fact fields
        self.said: dict[str, tuple[str, ...]] = {}  # path → its sentences that state a quantity, in order
        self.analysed: dict[str, tuple] = {}  # such a sentence → (quantities, word stems, names)

    def add(self, doc: SourceDoc) -> None:
        from ..compile.librarian.extract import prose_units

        fields = _fact_fields(doc)
        if fields:
            self.fields[doc.path] = fields
        said = []
        for section in doc.sections:
            for kind, sentence in prose_units(section.text):
                if kind != "para":
                    continue
                if sentence not in self.analysed:
                    found = _analyse(sentence)
                    if found is None:
                        continue
                    self.analysed[sentence] = found
                said.append(sentence)
        if said:
            self.said[doc.path] = tuple(said)


def rule_contradictions(kb: KB, claims: Claims) -> Iterator[Finding]:
    current = [d for p, d in sorted(kb.docs.items()) if p not in kb.superseded_by]
    yield from _field_contradictions(kb, current, claims.fields)
    yield from _sentence_contradictions(kb, current, claims)
    yield from _named_contradictions(kb)


def _named_contradictions(kb: KB) -> Iterator[Finding]:
    """Sources that name different things for one job (``disagree``), both sides cited."""
    for d in kb.plan.disputes if kb.plan is not None else ():
        yield finding(
            "contradiction",
            d.a.doc.path,
            _sentence_line(kb.root, d.a.doc, d.a.text),
            f"names {d.choice_a!r} ({short(d.a.text, 90)!r}, {d.a.doc.path}#{d.a.anchor}) but "
            f"{d.b.doc.path}#{d.b.anchor} names {d.choice_b!r} for the same job ({short(d.b.text, 90)!r}); "
            "review which holds, and correct one or mark the newer with 'supersedes:'",
            WARNING,
        )


def _field_contradictions(kb: KB, docs: list[DocRow], fields: dict[str, dict]) -> Iterator[Finding]:
    groups: dict[str, list[DocRow]] = defaultdict(list)
    for d in docs:
        if d.path in fields:  # a document without fact fields contradicts none
            for key in _subject_keys(d):
                groups[key].append(d)
    seen: set[tuple[str, str, str]] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if a.source == b.source:
                    continue  # one API, two records: separate subjects (versions use supersedes)
                for name in sorted(fields[a.path].keys() & fields[b.path].keys()):
                    (va, raw_a), (vb, raw_b) = fields[a.path][name], fields[b.path][name]
                    if va == vb or (a.path, b.path, name) in seen:
                        continue
                    seen.add((a.path, b.path, name))
                    yield finding(
                        "contradiction",
                        b.path,
                        _field_line(kb.root, b.path, name),
                        f"{name} is {raw_b!r} here but {raw_a!r} in {a.path} (both about {b.title!r}); "
                        "correct one, or mark the newer one with 'supersedes:'",
                    )


def _field_line(root: Path, path: str, name: str) -> int | None:
    try:
        for n, line in enumerate((root / path).read_text("utf-8").split("\n"), 1):
            if line.startswith(f"{name}:"):
                return n
    except OSError:
        pass
    return None


_MIN_SHARED, _MIN_JACCARD, _GROUP = 4, 0.6, 300


@dataclass
class _Claim:
    docs: list[DocRow]  # the documents that say it (about one subject), in path order
    text: str
    quantities: dict[str, frozenset[str]]
    stems: frozenset[str]
    names: frozenset[str]  # capitalised names in the sentence
    subject: frozenset[str]  # ... and in its documents' title


_CAPITALISED = re.compile(r"\b([A-Z][A-Za-z]+(?:[ -]?(?:v?\d+(?:\.\d+)*|XL)\b)?)")


def entities(text: str, *, title: bool = False) -> set[str]:
    """Capitalised names, with a model number where one follows: 'Grove 6', 'Express XL'.

    The first word only counts in a title, and there only with a model number or in a short title
    ('Sprout 3', 'Spinach', but not 'Longer returns and free return shipping').
    """
    found = set()
    short = len(text.split()) <= 3
    for m in _CAPITALISED.finditer(text):
        name = m.group(1).lower()
        first_ok = title and (short or any(ch.isdigit() for ch in name))
        if (m.start() > 0 or first_ok) and name not in STOPWORDS:
            found.add(name)
    return found


def _claims(docs: list[DocRow], claims: Claims) -> list[_Claim]:
    """Every sentence that states a quantity, once per distinct text and subject however many
    documents say it (help centres repeat themselves)."""
    found: dict[tuple[str, frozenset[str]], _Claim] = {}
    for doc in docs:
        said = claims.said.get(doc.path, ())
        subject = frozenset(entities(doc.title, title=True)) if said else frozenset()
        for sentence in said:
            claim = found.get((sentence, subject))
            if claim is None:
                claim = found[(sentence, subject)] = _Claim([], sentence, *claims.analysed[sentence], subject)
            if not claim.docs or claim.docs[-1] is not doc:
                claim.docs.append(doc)
    return list(found.values())


@lru_cache(maxsize=1 << 16)  # help centres repeat their sentences; most state no quantity
def _analyse(sentence: str) -> tuple | None:
    """(quantities, word stems, names) of a sentence stating a quantity, else None (shared by
    every caller: never change it)."""
    qty = quantities(sentence)
    if not qty or len(sentence.split()) > 60:
        return None
    stems = frozenset(stem(w) for w in content_words(sentence) if w not in _UNIT_WORDS)
    return qty, stems, frozenset(entities(sentence))


def _same_subject(a: _Claim, b: _Claim) -> bool:
    if a.subject and b.subject and not a.subject & b.subject:
        return bool(a.names & b.subject or b.names & a.subject)
    return not (a.names and b.names and not a.names & b.names)


def _sentence_contradictions(kb: KB, docs: list[DocRow], claims_kept: Claims) -> Iterator[Finding]:
    """Comparable sentences (same unit, mostly the same words, same subject) with different values.

    Candidate pairs come from an inverted index of word stems per unit over the distinct
    sentences, so the cost grows with the number of sentences sharing words, not with the square
    of all sentences, and a sentence many documents repeat counts once. A pair is resolved when
    the later document mentions the other value (it acknowledges the change); of the documents
    saying the same two sentences, one pair is reported with how many more say them.
    """
    claims = _claims(docs, claims_kept)
    full_text: dict[str, dict[str, frozenset[str]]] = {}
    reported: set[tuple[str, str, str]] = set()
    postings: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, c in enumerate(claims):
        for unit in c.quantities:
            for s in c.stems:
                postings[(unit, s)].append(i)
    for i, a in enumerate(claims):
        for unit, values in a.quantities.items():
            shared: Counter[int] = Counter()
            for s in a.stems:
                plist = postings[(unit, s)]
                if len(plist) > _GROUP:
                    continue  # a word that many different statements share names no one subject
                for j in plist:
                    if j > i:
                        shared[j] += 1
            for j, n in shared.items():
                if n < _MIN_SHARED:
                    continue
                b = claims[j]
                if b.quantities[unit] & values or n / len(a.stems | b.stems) < _MIN_JACCARD:
                    continue
                if not _same_subject(a, b):
                    continue  # about different things (Sprout 3 vs Grove 6)
                found = _between(kb, a, b, unit, reported, full_text)
                if found is not None:
                    yield found


def _between(kb: KB, a: _Claim, b: _Claim, unit: str, reported: set, full_text: dict) -> Finding | None:
    """The contradiction two statements make: between the first pair of documents (by path) that
    say them, do not acknowledge the other value and were not reported yet, with how many more
    pairs say the same two things."""
    quiet_a = [d for d in a.docs if not _acknowledged(kb, d, b.quantities[unit], unit, full_text)]
    quiet_b = [d for d in b.docs if not _acknowledged(kb, d, a.quantities[unit], unit, full_text)]
    pairs = [(x, y) for x in quiet_a for y in quiet_b if x.path != y.path]
    first = next((p for p in pairs if (*sorted((p[0].path, p[1].path)), unit) not in reported), None)
    if first is None:
        return None
    reported.add((*sorted((first[0].path, first[1].path)), unit))  # type: ignore[arg-type]
    (older, old_doc), (newer, new_doc) = sorted(((a, first[0]), (b, first[1])), key=lambda t: t[1].updated_at)
    more = f"; {len(pairs) - 1} more pairs of documents say the same two things" if len(pairs) > 1 else ""
    return finding(
        "contradiction",
        new_doc.path,
        _sentence_line(kb.root, new_doc, newer.text),
        f"says {_fmt(newer.quantities[unit], unit)} ({short(newer.text, 90)!r}) but "
        f"{old_doc.path} says {_fmt(older.quantities[unit], unit)} "
        f"({short(older.text, 90)!r}); if one replaces the other, add 'supersedes:' to it{more}",
        WARNING,
    )


def _acknowledged(kb: KB, doc: DocRow, other: frozenset[str], unit: str, cache: dict) -> bool:
    """True when the document also states the other's value (e.g. 'replaces the 45-day policy')."""
    q = cache.get(doc.path)
    if q is None:
        q = cache[doc.path] = quantities(plain_inline(kb.doc(doc.path).body))
    return bool(q.get(unit, frozenset()) & other)


def _sentence_line(root: Path, doc: DocRow | SourceDoc, text: str) -> int | None:
    """The line of a document's file where a sentence starts (matched on its first words)."""
    words = text.split()[:5]
    if not words:
        return None
    try:
        lines = (root / doc.path).read_text("utf-8").split("\n")
    except OSError:
        return None
    needle = words[0]
    for n, line in enumerate(lines, 1):
        if needle in line and all(w.strip("*_`") in plain_inline(line) for w in words[1:3]):
            return n
    return None


def _fmt(values: frozenset[str], unit: str) -> str:
    vals = " / ".join(sorted(values, key=float))
    return f"${vals}" if unit == "usd" else f"{vals} {unit}"
