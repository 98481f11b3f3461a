"""``wikic plan``: propose ``schema/wiki.yaml`` from layer 1, shown as a diff against the current file.

Offline, every proposal is a deterministic heuristic over the layer-1 documents, and each item is
written with a comment saying what was seen:

- topics: per source, the categorical field that best splits it (``plan.group_field``); a source
  whose entries other sources name (an encyclopedia) also quotes those mentions;
- devices: products named across the sources that have spec data, either a spec page with
  numeric fields or rows of tables with measured values, with their aliases and the exclusions
  between near-names (a device "X" excludes "X XL");
- comparisons: the devices by the facts they share, and groups of a source's records that share
  numeric fields;
- guides: set-up, troubleshooting and maintenance clusters, from titles and headings;
- versions: documents with one base name and a version suffix or a later date.

An LLM may then refine names, purposes and guide queries (``refine``); the structure, ids and
fields stay the offline ones, so the proposal stays reviewable. Only the kinds asked for are
replaced in the file, block by block, so the rest of it (and its comments) is kept as it is.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from ..compile.librarian.extract import MentionIndex, aliases, device_facts, field_label, prose_units
from ..compile.librarian.model import ModelError, ModelRequest, Tool
from ..compile.pageplan import group_field, plan, reference_entries, slugify
from ..compile.schema import load_wiki_schema
from ..compile.versions import current_view, supersession, version_chains
from ..core.bm25 import tokens
from ..core.errors import ConfigError
from ..core.facts import TAXONOMY, filed_under
from ..core.facts import UNITS as FIELD_UNITS
from ..core.fsutil import atomic_write
from ..core.markdown import STOPWORDS, plain_inline, word_matches, words
from ..core.models import SourceDoc
from ..core.pool import default_jobs
from ..core.words import listing
from ..transform.layer1 import load_layer1
from ..transform.run import label
from .scaffold import replace_block, template_text

KINDS = ("topics", "devices", "comparisons", "guides", "versions", "facts")
BOOKKEEPING = {"title", "source", "id", "url", "updated_at", "generated_by", "layer0", "supersedes"}
MAX_ROWS = 40  # a comparison of more records than this is too long to read as one table
MAX_FIELDS = 8
MAX_DEVICES = 12
MAX_GUIDES = 8
UNIT = re.compile(
    r"\d(?:[\d.,]*)\s*(?:mm|cm|m|km|in|ft|kg|g|lb|lbs|w|kw|v|a|mah|ah|gb|mb|tb|°\s?[cf]|%|l|ml|h|hrs|"
    r"hours|days|min|s|m2|m²)\b|[$€£]\s?\d|\d\s*m<sup>|\d\s*x\s*\d",
    re.IGNORECASE,
)
RANGE = re.compile(r"^\s*-?\d+(?:[.,]\d+)?(?:\s*[-–]\s*\d+(?:[.,]\d+)?)?\s*[a-zA-Z%°]{0,3}\s*$")
VERSION_TOKEN = re.compile(r"\bv?\d+(?:\.\d+)+\+?|\bv\d+\+?", re.IGNORECASE)


@dataclass(frozen=True)
class Intent:
    """A kind of how-to material, known by words in titles and headings."""

    key: str
    title: str
    purpose: str
    words: frozenset[str]
    phrases: tuple[tuple[str, ...], ...] = ()

    def hits(self, text: str) -> list[str]:
        ws = words(text)
        found = [w for w in ws if w in self.words]
        for phrase in self.phrases:
            n = len(phrase)
            found += [" ".join(phrase) for i in range(len(ws) - n + 1) if tuple(ws[i : i + n]) == phrase]
        return found


INTENTS = (
    Intent(
        "setup",
        "Getting started",
        "Installing, setting up and connecting",
        frozenset(
            """install installing installation setup configure configuring configuration connect connecting
            assemble assembling assembly pair pairing unbox unboxing flash flashing onboarding""".split()
        ),
        (("set", "up"), ("setting", "up"), ("getting", "started"), ("first", "steps"), ("first", "week")),
    ),
    Intent(
        "troubleshooting",
        "Troubleshooting",
        "Diagnosing and fixing problems",
        frozenset(
            """troubleshoot troubleshooting problem problems issue issues fix fixing error errors fail fails
            failed failure broken offline reset diagnose diagnosing diagnosis""".split()
        ),
        (("not", "working"), ("won't",), ("doesn't",), ("can't",)),
    ),
    Intent(
        "maintenance",
        "Maintenance and care",
        "Cleaning, servicing and replacing parts",
        frozenset(
            """maintain maintaining maintenance clean cleaning care replace replacing replacement lubricate
            lubricating inspect inspection upkeep descale service servicing""".split()
        ),
    ),
)
CUES = set().union(*(i.words for i in INTENTS)) | {w for i in INTENTS for p in i.phrases for w in p}
# Words that structure headings rather than name a subject.
HEADING_WORDS = set(
    """step steps part parts overview introduction intro summary note notes guide guides section chapter
    appendix example examples more other general details using use new next previous page""".split()
)


@dataclass
class Item:
    """One proposed entry of a wiki.yaml list, with what was seen; ``todo`` when a person should check."""

    data: dict[str, Any]
    seen: str
    todo: str = ""
    context: list[str] = field(default_factory=list)  # example titles, for an LLM to name the item


@dataclass
class Proposal:
    items: dict[str, list[Item]]

    @property
    def todos(self) -> list[str]:
        return [
            f"{kind}: {_item_name(i)}: {i.todo}" for kind in KINDS for i in self.items.get(kind, []) if i.todo
        ]


@dataclass
class PlanReport:
    proposal: Proposal
    current: str  # the wiki.yaml text now ('' when missing)
    proposed: str  # the text --write writes
    diff: str
    written: bool = False
    refined: str = ""  # the model that refined names, if any
    notes: list[str] = field(default_factory=list)


def _item_name(item: Item) -> str:
    d = item.data
    return str(d.get("id") or d.get("source") or "")


# -- helpers -----------------------------------------------------------------------------------------


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bookkeeping(name: str) -> bool:
    return name in BOOKKEEPING or name.startswith(("record_", "layer0")) or name.endswith(("_id", "_url"))


def _naming(name: str, lowered: list[str]) -> int:
    """How many of the (lower-cased) texts name ``name`` as whole words."""
    low = name.lower()
    pattern = re.compile(r"(?<!\w)" + re.escape(low) + r"(?!\w)")
    return sum(1 for text in lowered if low in text and pattern.search(text))


class Corpus:
    """The current layer-1 documents and the text statistics every heuristic reads."""

    def __init__(self, docs: list[SourceDoc], superseded: dict[str, str]):
        self.docs = [current_view(d, superseded) for d in docs if d.path not in superseded]
        self.by_source: dict[str, list[SourceDoc]] = defaultdict(list)
        for d in self.docs:
            self.by_source[d.source].append(d)
        self.texts = [f"{d.title}\n{d.body}" for d in self.docs]
        self.lower = [t.lower() for t in self.texts]

    @cached_property
    def source_df(self) -> dict[str, Counter]:
        """In how many documents of each source each word occurs (stopwords aside), counted in one
        pass that keeps no document's words."""
        out: dict[str, Counter] = defaultdict(Counter)
        for d, text in zip(self.docs, self.texts):
            found = set(words(text))
            found -= STOPWORDS
            out[d.source].update(found)
        return out

    def df(self, sources: Iterable[str] | None = None) -> Counter:
        """In how many documents (of ``sources``, or all) each word occurs."""
        total: Counter = Counter()
        for source, counts in self.source_df.items():
            if sources is None or source in sources:
                total.update(counts)
        return total

    def named_in(self, name: str, skip_source: str = "") -> int:
        """How many documents (outside ``skip_source``) name ``name`` as whole words, any case."""
        return _naming(name, [t for d, t in zip(self.docs, self.lower) if d.source != skip_source])

    @cached_property
    def prose(self) -> list[str]:
        """Each document's title and quotable sentences: its text outside tables, code and markup."""
        return [
            "\n".join([d.title, *(t for s in d.sections for _, t in prose_units(s.text))]).lower()
            for d in self.docs
        ]

    def in_prose(self, name: str) -> int:
        """How many documents name ``name`` in their title or sentences (not only in a table)."""
        return _naming(name, self.prose)

    def proper(self, name: str) -> tuple[int, float]:
        """(documents naming it, share of its occurrences written exactly so): a product name is
        capitalised wherever it occurs, a common noun ('Length') mostly is not."""
        any_case = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)", re.IGNORECASE)
        exact = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")
        docs = total = same = 0
        low = name.lower()
        for text, lowered in zip(self.texts, self.lower):
            if low not in lowered:
                continue
            n = len(any_case.findall(text))
            if n:
                docs += 1
                total += n
                same += len(exact.findall(text))
        return docs, (same / total if total else 0.0)


# -- topics ----------------------------------------------------------------------------------------


def propose_topics(corpus: Corpus, device_only: set[str]) -> list[Item]:
    items = []
    for source in sorted(corpus.by_source):
        docs = corpus.by_source[source]
        if source in device_only:
            continue
        name = group_field(docs)
        data: dict[str, Any] = {"source": source}
        if name:
            values = Counter(_first(d.meta.get(name)) for d in docs)
            values.pop("", None)
            shown = ", ".join(
                f"{v} ({n})" for v, n in sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))[:6]
            )
            data["group_by"] = name
            seen = f"'{name}' splits the {len(docs)} records into {len(values)} groups: {shown}"
        else:
            seen = f"no categorical field splits the {len(docs)} records; grouped by shared title words"
        if reference_entries(docs):
            share = _mentioned_share(corpus, source)
            seen += "; short reference entries: a page for each, listed by group"
            if share >= 0.05:
                data["mentions"] = 2
                seen += f"; {share:.0%} of them are named in other sources, which are quoted"
        items.append(Item(data, seen, context=[d.title for d in docs[:8]]))
    return items


def _first(value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value).strip() if value not in (None, "") else ""


def _mentioned_share(corpus: Corpus, source: str) -> float:
    docs = corpus.by_source[source]
    others = [d for d in corpus.docs if d.source != source]
    if not others or not docs:
        return 0.0
    index = MentionIndex(others)
    named = sum(1 for d in docs if index.find([d.title, *aliases(d)], d.path, 1))
    return named / len(docs)


# -- devices ---------------------------------------------------------------------------------------


@dataclass
class Entity:
    name: str  # normalised, e.g. "Rover XL"
    forms: set[str] = field(default_factory=set)  # as written, e.g. "Rover (XL)"
    spec_docs: set[str] = field(default_factory=set)  # documents with a row of measured values
    tables: set[tuple[str, int]] = field(default_factory=set)  # (document, table number) it is a row of
    spec_source: str = ""  # "source:id" of its spec page, for spec-page devices
    named: int = 0
    evidence: str = ""


def _row_names(cell: str) -> list[tuple[str, str]]:
    """(normalised name, written form) of each name in a table's first cell: 'Rover v1.2+<br>Rover
    XL v1.2+' names Rover and Rover XL; 'Rover (XL)' is a written form of Rover XL."""
    out = []
    for part in re.split(r"<br\s*/?>|\s+and\s+|\s*/\s*", cell, flags=re.IGNORECASE):
        written = " ".join(
            VERSION_TOKEN.sub(" ", plain_inline(part.replace("[[", "").replace("]]", ""))).split()
        )
        name = " ".join(written.replace("(", " ").replace(")", " ").split())
        if name and name[0].isupper() and re.search(r"[^\W\d_]", name) and len(name.split()) <= 4:
            out.append((name, written))
    return out


def _tables(doc: SourceDoc):
    """(table number, [(first cell as written, other cells)]) for every Markdown table."""
    n = 0
    for section in doc.sections:
        lines = section.text.split("\n")
        i = 0
        while i < len(lines) - 1:
            if lines[i].strip().startswith("|") and re.match(r"^\s*\|?\s*:?-{2,}", lines[i + 1]):
                rows = []
                j = i + 2
                while j < len(lines) and lines[j].strip().startswith("|"):
                    cells = re.split(r"(?<!\\)\|", lines[j].strip().strip("|"))
                    rows.append((cells[0].strip(), cells[1:]))
                    j += 1
                yield n, rows
                n += 1
                i = j
            else:
                i += 1


VARIANT_NAMED = 3  # documents, at least, that name a variant the prose never does, for a page of its own


def table_entities(corpus: Corpus) -> list[Entity]:
    """Products compared in tables: names that are rows with measured values in two or more
    documents (seeds), and the other names in the tables those seeds are rows of (peers). Each is a
    proper name (capitalised wherever it occurs) that the sources name more than once."""
    found: dict[str, Entity] = {}
    members: dict[tuple[str, int], set[str]] = defaultdict(set)
    for d in corpus.docs:
        for n, rows in _tables(d):
            for first, cells in rows:
                measured = any(UNIT.search(c) for c in cells)
                for name, written in _row_names(first):
                    e = found.setdefault(name.lower(), Entity(name))
                    e.forms.add(written)
                    e.tables.add((d.path, n))
                    members[(d.path, n)].add(name.lower())
                    if measured:
                        e.spec_docs.add(d.path)

    def proper(e: Entity, least: int) -> bool:
        docs, exact = corpus.proper(e.name)
        e.named = docs
        return docs >= least and exact >= 0.8

    seeds = {
        k: e
        for k, e in found.items()
        if len(e.spec_docs) >= 2 and proper(e, 3) and corpus.in_prose(e.name) >= 3
    }
    for e in seeds.values():
        e.evidence = (
            f"a row of measured values in {len(e.spec_docs)} documents' tables, named in {e.named} documents"
        )
    peers: dict[str, Entity] = {}
    for seed in sorted(seeds.values(), key=lambda e: e.name):
        for table in sorted(seed.tables):
            for other in sorted(members[table] - set(seeds) - set(peers)):
                e = found[other]
                # named in the sources' own words, or a variant of a name that is ("X" → "X XL");
                # a variant the sources name in only two documents would be a page of a line or
                # two, which its model's page says (it matches there: 'Rover' in 'Rover XL')
                prose = corpus.in_prose(e.name) >= 2
                variant = any(_contains(e.name, k.name) for k in [*seeds.values(), *peers.values()])
                if proper(e, 2 if prose else VARIANT_NAMED) and (prose or variant):
                    e.evidence = f"listed beside {seed.name} in a table, named in {e.named} documents"
                    peers[other] = e
    return sorted([*seeds.values(), *peers.values()], key=lambda e: (-e.named, e.name))[:MAX_DEVICES]


def spec_page_entities(corpus: Corpus) -> list[Entity]:
    """Records of a source that read like spec pages: three or more numeric fields, and a title
    most other sources' documents name (a product catalogue, not an encyclopedia)."""
    out = []
    for source in sorted(corpus.by_source):
        docs = corpus.by_source[source]
        qualified = []
        for d in docs:
            numbers = [k for k, v in d.meta.items() if _numeric(v) and not _bookkeeping(k)]
            named = corpus.named_in(d.title, skip_source=source) if len(numbers) >= 3 else 0
            if named >= 3:
                e = Entity(d.title, {d.title, *aliases(d)}, spec_source=f"{source}:{d.id}", named=named)
                e.evidence = f"a spec page ({source}:{d.id}) with {len(numbers)} numeric fields, named in {named} documents"
                qualified.append(e)
        if len(qualified) * 2 >= len(docs):
            out += qualified
    return out


def _brand(corpus: Corpus, names: list[str]) -> str:
    """A word written before most of the names ('Acme' in 'Acme Rover'), or ''."""
    before: Counter = Counter()
    total = 0
    for name in names:
        pattern = re.compile(r"(?:(\b[A-Z][\w-]*)\s+)?(?<!\w)" + re.escape(name) + r"(?!\w)")
        for text in corpus.texts:
            if name in text:
                for m in pattern.finditer(text):
                    total += 1
                    if m.group(1) and m.group(1).lower() not in STOPWORDS:
                        before[m.group(1)] += 1
    if not before or not total:
        return ""
    word, n = before.most_common(1)[0]
    return word if n / total >= 0.25 and not any(word in name.split() for name in names) else ""


def propose_devices(corpus: Corpus) -> tuple[list[Item], list[dict]]:
    """Device items, and the device settings the compile would use (for the device comparison)."""
    entities = spec_page_entities(corpus)
    spec_names = {e.name.lower() for e in entities}
    entities += [e for e in table_entities(corpus) if e.name.lower() not in spec_names]
    brand = _brand(corpus, [e.name for e in entities if not e.spec_source])
    items, devices = [], []
    for e in _variants_after_their_model(entities):
        title = f"{brand} {e.name}" if brand and not e.spec_source else e.name
        match = sorted({e.name, *e.forms}, key=lambda f: (f != e.name, f))
        # A near-name that contains this one names another device: "Rover" must not match "Rover XL".
        longer = [o for o in entities if o is not e and _contains(o.name, e.name)]
        exclude = sorted({f for o in longer for f in {o.name, *o.forms}})
        data: dict[str, Any] = {"id": slugify(title), "title": title}
        if e.spec_source:
            data["sources"] = [e.spec_source]
        data["match"] = match
        if exclude:
            data["exclude"] = exclude
        seen = e.evidence + (
            f"; '{brand}' is written before these names in most places" if title != e.name else ""
        )
        items.append(Item(data, seen, context=sorted(e.forms)[:4]))
        devices.append({**data, "sources": data.get("sources", []), "fields": []})
    return items, devices


def _variants_after_their_model(entities: list) -> list:
    """``entities`` (best evidenced first) with each variant right after the model its name
    contains ('Rover', 'Rover XL', 'Scout', 'Scout XL'): a comparison and the index then read the
    two side by side."""
    out: list = []
    for e in entities:
        if e in out or any(_contains(e.name, o.name) for o in entities):
            continue  # placed already, or placed after its model
        out += [e, *(o for o in entities if _contains(o.name, e.name) and o not in out)]
    return out + [e for e in entities if e not in out]


def _contains(longer: str, shorter: str) -> bool:
    return longer.lower() != shorter.lower() and bool(
        re.search(r"(?<!\w)" + re.escape(shorter.lower()) + r"(?!\w)", longer.lower())
    )


# -- comparisons -----------------------------------------------------------------------------------


def device_comparison(corpus: Corpus, devices: list[dict], brand_title: str) -> Item | None:
    if len(devices) < 2:
        return None
    counts: Counter = Counter()
    order: dict[str, int] = {}
    for device in devices:
        keys = set()
        for key, value, _ in device_facts(device, corpus.docs):
            if key in _META_KEYS or not re.search(r"\d", value):
                continue
            keys.add(key)
            order.setdefault(key, len(order))
        counts.update(keys)
    shared = [k for k, n in counts.items() if n >= 2]
    if not shared:
        return None
    fields = sorted(shared, key=lambda k: (-counts[k], order[k]))[:MAX_FIELDS]
    fields.sort(key=lambda k: order[k])
    title = f"{brand_title} models compared" if brand_title else "Models compared"
    data = {
        "id": slugify(title),
        "title": title,
        "of": "devices",
        "purpose": f"{_models_text(devices)} side by side: {_fields_text(fields)}.",
        "fields": fields,
    }
    seen = f"facts at least two of the {len(devices)} devices state: " + ", ".join(
        f"{k} ({counts[k]})" for k in fields
    )
    return Item(data, seen, context=[d["title"] for d in devices])


_META_KEYS = {"hand_maintained", "device", "updated_at"}
NAMED_MODELS = 4  # models a comparison's purpose names, at most; past that it counts them


def _models_text(devices: list[dict]) -> str:
    """What a comparison of devices sets side by side: 'The Acme Rover, Acme Rover XL and Acme
    Scout', or 'The 6 models' when they are many."""
    names = [d["title"] for d in devices]
    if len(names) > NAMED_MODELS:
        return f"The {len(names)} models"
    return "The " + listing(names)


def _fields_text(fields: list[str]) -> str:
    """'tank_capacity_l, pod_count' → 'tank capacity (l), pod count'; table labels stay as written."""
    shown = [_lower_first(field_label(f)) if "_" in f or f.islower() else f for f in fields[:5]]
    if len(fields) > 5:
        return ", ".join(shown) + " and more"
    return listing(shown)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _numeric_like(values: list[Any]) -> bool:
    present = [v for v in values if v not in (None, "")]
    if not present:
        return False
    ok = sum(1 for v in present if _numeric(v) or (isinstance(v, str) and RANGE.match(v)))
    return ok == len(present) and len({str(v) for v in present}) > 1


def record_comparisons(corpus: Corpus, topics: list[Item], device_only: set[str]) -> list[Item]:
    """For each source whose records share numeric fields: one table per group of its topic field
    (2 to ``MAX_ROWS`` records each), or one for the whole source when it is small."""
    group_of = {i.data["source"]: i.data.get("group_by", "") for i in topics}
    items = []
    for source in sorted(corpus.by_source):
        docs = corpus.by_source[source]
        if source in device_only or len(docs) < 2:
            continue
        names = list(dict.fromkeys(k for d in docs for k in d.meta if not _bookkeeping(k)))
        group = group_of.get(source, "")
        numeric, categorical = [], []
        for name in names:
            values = [d.meta.get(name) for d in docs]
            if sum(v not in (None, "", []) for v in values) * 2 < len(docs) or name == group:
                continue
            if _numeric_like(values):
                numeric.append(name)
            elif all(isinstance(v, str) and len(v) <= 30 for v in values if v not in (None, "")):
                distinct = {v for v in values if v}
                if 2 <= len(distinct) <= 6 and len(docs) >= 2 * len(distinct):
                    categorical.append(name)
        if len(numeric) < 2:
            continue
        fields = (categorical[:2] + numeric)[:MAX_FIELDS]
        sizes = Counter(_first(d.meta.get(group)) for d in docs) if group else Counter()
        sizes.pop("", None)
        rows = [(v, n) for v, n in sorted(sizes.items()) if 2 <= n <= MAX_ROWS]
        skipped = [f"{v} ({n})" for v, n in sorted(sizes.items()) if n > MAX_ROWS]
        seen_fields = f"numeric fields shared by most records: {', '.join(numeric[:MAX_FIELDS])}"
        noun = label(source).lower()
        for value, n in rows:
            data = {
                "id": slugify(f"{source}-{value}"),
                "title": _sentence(f"{label(value)} {noun}"),
                "of": source,
                "where": {group: value},
                "purpose": _sentence(f"{_fields_text(fields)} of the {label(value).lower()} {noun}."),
                "fields": fields,
            }
            seen = f"{n} records with {group} = {value}; {seen_fields}"
            if skipped:
                seen += f"; groups too large for one table: {', '.join(skipped)}"
            items.append(
                Item(data, seen, context=[d.title for d in docs if _first(d.meta.get(group)) == value][:6])
            )
        if not rows and len(docs) <= MAX_ROWS:
            data = {
                "id": slugify(f"{source}-compared"),
                "title": f"{label(source)} compared",
                "of": source,
                "purpose": _sentence(f"{_fields_text(fields)} of every {noun} record."),
                "fields": fields,
            }
            items.append(
                Item(data, f"all {len(docs)} records; {seen_fields}", context=[d.title for d in docs[:6]])
            )
    return items


# -- guides ----------------------------------------------------------------------------------------


_TAXONOMY = tuple(sorted(TAXONOMY))  # every field that files a document, read as its filing


def propose_guides(corpus: Corpus) -> list[Item]:
    """For each intent with material in three or more documents (its words in their titles,
    headings or categories): a guide over all of it, and one
    per subject (a word four or more of those documents' titles and headings share)."""
    df = corpus.df()
    n_docs = max(1, len(corpus.docs))
    items: list[Item] = []
    taken: set[str] = set()
    for intent in INTENTS:
        key, title, purpose = intent.key, intent.title, intent.purpose
        matched: dict[str, list[str]] = {}  # document path → matching titles/headings
        sources: set[str] = set()
        cues: Counter = Counter()
        for d in corpus.docs:
            heads = [d.title] + [s.heading for s in d.sections if s.heading and s.heading != d.title]
            hit = [h for h in heads if intent.hits(h)]
            filed = intent.hits(filed_under(d, _TAXONOMY))
            if filed and not hit:  # 'category: troubleshooting' above a title without its words
                hit = [d.title]
            if hit:
                matched[d.path] = hit
                sources.add(d.source)
                # once per document, in an order no hash seed moves (ties rank in it)
                cues.update(sorted({w for h in hit for w in intent.hits(h)} | set(filed)))
        if len(matched) < 3:
            continue
        pool = [d for d in corpus.docs if d.source in sources]
        local = corpus.df(sources)
        subjects = _subjects(matched, local, len(pool))
        examples = [h for hs in matched.values() for h in hs]
        query = _query(
            [w for w, _ in cues.most_common(4)], [" ".join(hs) for hs in matched.values()], df, n_docs
        )
        general = {
            "id": slugify(title),
            "title": title,
            "purpose": f"{purpose}.",
            "query": query,
        }
        if len(sources) == 1:
            general["sources"] = sorted(sources)
        seen = f"{len(matched)} documents with {key} words in their titles, headings or categories ({', '.join(w for w, _ in cues.most_common(5))})"
        items.append(Item(general, seen, context=examples[:8]))
        for word, phrase, paths in subjects[:2]:
            if phrase.lower() in taken or not _a_subject(corpus, phrase):
                continue
            taken.add(phrase.lower())
            heads = [h for p in paths for h in matched[p]]
            sub_title = f"{title}: {phrase}"
            data = {
                "id": slugify(sub_title),
                "title": sub_title,
                "purpose": f"{purpose}: {phrase}.",
                "query": _query(
                    [word, *(w for w, _ in cues.most_common(3))],
                    [" ".join(matched[p]) for p in paths],
                    df,
                    n_docs,
                ),
            }
            if len({p.split("/")[1] for p in paths}) == 1:
                data["sources"] = [paths[0].split("/")[1]]
            items.append(
                Item(data, f"{len(paths)} of those documents are about '{phrase}'", context=heads[:8])
            )
    return items[:MAX_GUIDES]


def _a_subject(corpus: Corpus, phrase: str) -> bool:
    """Whether a guide can be named after ``phrase``: a term of two or more words ('Acme OS',
    'Cable carrier') or a name the corpus capitalises wherever it writes it, never a bare common
    word that Title Case headings happen to capitalise ('Getting started: Axis')."""
    return " " in phrase or corpus.proper(phrase)[1] >= PROPER_SHARE


PROPER_SHARE = 0.8  # of a word's occurrences written capitalised: a name, not a common noun


def _subjects(matched: dict[str, list[str]], df: Counter, n_docs: int) -> list[tuple[str, str, list[str]]]:
    """(word, phrase as written, documents) for words four or more matched documents' headings share,
    that at most a quarter of the sources' documents use (``df``), the most shared first."""
    by_word: dict[str, set[str]] = defaultdict(set)
    for path, heads in matched.items():
        for h in heads:
            for t in tokens(plain_inline(h)):  # the words a reader sees, as ``_phrase`` reads them
                if t not in CUES and t not in HEADING_WORDS and len(t) > 2 and not t.isdigit():
                    by_word[t].add(path)
    out = []
    for word, paths in by_word.items():
        if len(paths) < 4 or len(paths) == len(matched) or df[word] > n_docs * 0.25:
            continue
        phrase = _phrase(word, [h for p in paths for h in matched[p]])
        out.append((word, phrase, sorted(paths)))
    out.sort(key=lambda t: (-len(t[2]), df[t[0]], t[0]))
    return out


def _phrase(word: str, heads: list[str]) -> str:
    """The word as the headings write it, with a capitalised neighbour when they usually have one
    ('os' → 'Acme OS', 'axis' → 'Z-Axis'). ``word`` is one of the headings' ``tokens``."""
    forms: Counter = Counter()
    joined: set[str] = set()
    for h in heads:
        text = plain_inline(h)
        found = list(word_matches(text))
        for i, m in enumerate(found):
            if m.group().lower() != word:
                continue
            forms[m.group()] += 1
            before = found[i - 1].group() if i > 0 else ""
            if before[:1].isupper() and before.lower() not in STOPWORDS | CUES:
                gap = "-" if text[found[i - 1].end() : m.start()] == "-" else " "
                joined.add(phrase := f"{before}{gap}{m.group()}")
                forms[phrase] += 1
    best = max(forms.items(), key=lambda kv: (kv[1] >= 2 and kv[0] in joined, kv[1], kv[0]))[0]
    return best if best[:1].isupper() else best.capitalize()


def _query(first: list[str], texts: list[str], df: Counter, n_docs: int, n: int = 10) -> str:
    """Words for a guide's query: ``first``, then each document's own best word (``texts`` are
    the matched headings of one document each), the strongest first: a word scores by how many
    of the documents use it and how rare it is in the corpus. One word per document keeps the
    guide broad: counting every heading, one article's six headings about resets made a
    troubleshooting guide's query 'reset … hard soft option'."""
    said = [{t for t in tokens(text) if len(set(t)) > 2 and t.isalpha()} for text in texts]
    counts = Counter(t for words in said for t in words)
    score = {t: c * math.log(1 + n_docs / (1 + df.get(t, 0))) for t, c in counts.items()}
    chosen = list(dict.fromkeys(first))
    best = {
        min((w for w in words if w not in chosen), key=lambda t: (-score[t], t), default="") for words in said
    }
    chosen += sorted(best - {""}, key=lambda t: (-score[t], t))
    return " ".join(chosen[:n])


# -- versions --------------------------------------------------------------------------------------


def propose_versions(docs: list[SourceDoc], superseded: dict[str, str]) -> list[Item]:
    return [
        Item({"source": c.source, "chain": [d.id for d in c.docs]}, c.evidence, c.todo)
        for c in version_chains(docs, superseded)
    ]


# -- the proposal ----------------------------------------------------------------------------------


def propose(docs: list[SourceDoc]) -> Proposal:
    """The offline proposal for every kind, from the layer-1 documents."""
    superseded = supersession(docs)  # what documents say themselves; chains are proposed below
    corpus = Corpus(docs, superseded)
    devices, settings = propose_devices(corpus)
    # A source every record of which is a device's spec page is shown on the device pages.
    refs = {s for i in devices for s in i.data.get("sources", [])}
    device_only = {
        source for source, ds in corpus.by_source.items() if all(f"{source}:{d.id}" in refs for d in ds)
    }
    topics = propose_topics(corpus, device_only)
    brand = _common_first_word([d["title"] for d in settings])
    comparisons = [c for c in [device_comparison(corpus, settings, brand)] if c]
    comparisons += record_comparisons(corpus, topics, device_only)
    return Proposal(
        {
            "topics": topics,
            "devices": devices,
            "comparisons": comparisons,
            "guides": _distinct_titles(propose_guides(corpus), corpus, topics),
            "versions": propose_versions(docs, superseded),
            "facts": propose_facts(corpus),
        }
    )


# -- facts ------------------------------------------------------------------------------------------

LENGTH_FIELDS = re.compile(
    r"(?:^|_)(?:height|spread|spacing|width|length|depth|diameter|distance|size)(?:_|$)"
)
LENGTH_UNIT = re.compile(r"\b\d+(?:[.,]\d+)?\s?(mm|cm|m|in|inch|inches|ft)\b")
UNIT_EVIDENCE = 3  # lengths written with a unit in a source's text, at least, to propose it


def propose_facts(corpus: Corpus) -> list[Item]:
    """Units for numeric length fields whose names do not say them ('spread', 'row_spacing'): the
    unit the same source's text writes its lengths in ('thin to 3cm apart'), when it writes them
    in one unit."""
    units: dict[str, str] = {}
    seen = []
    for source in sorted(corpus.by_source):
        docs = corpus.by_source[source]
        fields = sorted(
            {
                k
                for d in docs
                for k, v in d.meta.items()
                if _numeric(v) and LENGTH_FIELDS.search(k) and k.rpartition("_")[2].lower() not in FIELD_UNITS
            }
        )
        if not fields:
            continue
        written = Counter(m.group(1) for d in docs for m in LENGTH_UNIT.finditer(d.body))
        written = Counter({("in" if u in ("inch", "inches") else u): n for u, n in written.items()})
        if not written:
            continue
        unit, n = written.most_common(1)[0]
        if n < UNIT_EVIDENCE or n < 0.8 * sum(written.values()):
            continue
        units.update(dict.fromkeys(fields, unit))
        seen.append(
            f"{source}: {', '.join(fields)} are lengths; its text writes lengths in {unit} ({n} times)"
        )
    return [Item({"units": units}, "; ".join(seen))] if units else []


def _distinct_titles(guides: list[Item], corpus: Corpus, topics: list[Item]) -> list[Item]:
    """A guide titled like a topic group ('Troubleshooting' next to a 'troubleshooting' category)
    or like a document that may title a topic page becomes '… guide', so two pages never share a
    title."""
    groups = {
        label(_first(d.meta.get(t.data["group_by"]))).lower()
        for t in topics
        if t.data.get("group_by")
        for d in corpus.by_source[t.data["source"]]
    }
    # a document can title a topic page too (it introduces its folder, or stands alone)
    groups |= {d.title.lower() for t in topics for d in corpus.by_source[t.data["source"]]}
    _titled_apart(guides, groups, "a topic group has")
    return guides


def _titled_apart(guides: list[Item], titles: set[str], whose: str) -> None:
    """Each guide titled like one of ``titles`` (lower-cased) becomes '… guide', its id with it."""
    for g in guides:
        if g.data["title"].lower() in titles:
            g.data["title"] += " guide"
            g.data["id"] = slugify(g.data["title"])
            g.seen += f"; 'guide' added to the title, which {whose}"


def _common_first_word(titles: list[str]) -> str:
    firsts = {t.split()[0] for t in titles if t.split()}
    return firsts.pop() if len(firsts) == 1 and all(len(t.split()) > 1 for t in titles) else ""


# -- LLM refinement --------------------------------------------------------------------------------

REFINE_TOOL = Tool(
    "refine_plan",
    "Return better names, purposes and search queries for the proposed wiki pages.",
    {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string"},
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "purpose": {"type": "string"},
                        "query": {"type": "string"},
                        "group_titles": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                    "required": ["kind", "id"],
                },
            }
        },
        "required": ["items"],
    },
)
REFINE_RULES = """You review the proposed structure of a support wiki that is compiled from a company's documents.
Each proposed page below was found by a heuristic; its evidence and some example titles are given.
For each one, give a clear reader-facing title (at most 8 words), a one-sentence purpose, and for guides
a search query of 6 to 14 words that would find the documents the guide should draw on. For topic
groupings, give a short title for each group value. Keep every kind and id as given; do not add, remove
or merge pages, and do not state facts that the evidence and titles do not show. Call refine_plan."""
REFINABLE = {
    "devices": ("title",),
    "comparisons": ("title", "purpose"),
    "guides": ("title", "purpose", "query"),
}


def refine_request(proposal: Proposal, corpus_groups: dict[str, dict[str, list[str]]]) -> ModelRequest:
    lines = ["# Plan to refine", ""]
    for kind in ("topics", "devices", "comparisons", "guides"):
        for item in proposal.items.get(kind, []):
            d = item.data
            lines.append(f"## {kind} {_item_name(item)}")
            for k in ("title", "purpose", "query", "group_by"):
                if k in d:
                    lines.append(f"- {k}: {d[k]}")
            lines.append(f"- evidence: {item.seen}")
            if kind == "topics" and d.get("group_by"):
                for value, titles in sorted(corpus_groups.get(d["source"], {}).items())[:30]:
                    lines.append(f"- group {json.dumps(value)}: {'; '.join(titles[:3])}")
            elif item.context:
                lines.append(f"- examples: {'; '.join(item.context[:6])}")
            lines.append("")
    return ModelRequest(
        system=(REFINE_RULES,),
        user="\n".join(lines),
        tools=(REFINE_TOOL,),
        tool_name=REFINE_TOOL.name,
        max_tokens=4096,
    )


def _clean(value: Any, limit: int) -> str:
    text = " ".join(str(value).split()) if isinstance(value, str) else ""
    return text if 0 < len(text) <= limit and "\n" not in text else ""


def refine(proposal: Proposal, docs: list[SourceDoc], model: Any) -> str:
    """Apply a model's names, purposes and queries to the proposal; returns a note on failure."""
    groups: dict[str, dict[str, list[str]]] = {}
    for item in proposal.items.get("topics", []):
        field_name = item.data.get("group_by")
        if field_name:
            by_value: dict[str, list[str]] = defaultdict(list)
            for d in docs:
                if d.source == item.data["source"] and _first(d.meta.get(field_name)):
                    by_value[_first(d.meta.get(field_name))].append(d.title)
            groups[item.data["source"]] = by_value
    try:
        response = model.complete(refine_request(proposal, groups))
    except ModelError as exc:
        return f"the model could not refine the proposal ({exc}); the offline proposal is shown"
    args = response.tool_input
    if args is None:
        try:
            args = json.loads(response.text)
        except ValueError:
            args = None
    answers = args.get("items") if isinstance(args, dict) else None
    if not isinstance(answers, list):
        return "the model's answer had no 'items' list; the offline proposal is shown"
    by_key = {(kind, _item_name(i)): i for kind in KINDS for i in proposal.items.get(kind, [])}
    changed = 0
    for answer in answers:
        if not isinstance(answer, dict):
            continue
        item = by_key.get((str(answer.get("kind")), str(answer.get("id"))))
        if item is None:
            continue
        kind = str(answer["kind"])
        done = []
        for key in REFINABLE.get(kind, ()):
            value = _clean(answer.get(key), 300 if key != "title" else 80)
            if value and value != item.data.get(key):
                item.data[key] = value
                done.append(key)
        titles = answer.get("group_titles")
        if kind == "topics" and isinstance(titles, dict) and item.data.get("group_by"):
            known = groups.get(item.data["source"], {})
            clean = {str(k): _clean(v, 60) for k, v in titles.items() if str(k) in known}
            clean = {k: v for k, v in sorted(clean.items()) if v}
            if clean:
                item.data["titles"] = clean
                done.append("group titles")
        if done:
            item.seen += f"; {' and '.join(done)} by {getattr(model, 'name', 'the model')}"
            changed += 1
    return "" if changed else "the model changed nothing; the offline proposal is shown"


# -- writing ---------------------------------------------------------------------------------------

HEADERS = {
    "topics": "Topic pages: each source's records grouped by a field (proposed by 'wikic plan').",
    "devices": "Devices: products named across the sources with spec data (proposed by 'wikic plan').",
    "comparisons": "Comparison tables (proposed by 'wikic plan').",
    "guides": "Guides: how-to material found in titles and headings (proposed by 'wikic plan').",
    "versions": "Version chains, oldest first: each document supersedes the one before (proposed by 'wikic plan').",
    "facts": "Fact lists: the units of fields whose names do not say them (proposed by 'wikic plan').",
}


def _flow(value: Any) -> str:
    """A YAML value on one line: ``[a, b]``, ``{k: v}``, or a scalar quoted only when it must be."""
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=100_000, sort_keys=False)
    return text.strip().removesuffix("...").strip()


def render_kind(kind: str, items: list[Item]) -> str:
    lines = [f"# {HEADERS[kind]}"]
    if not items:
        empty = "{}" if kind == "facts" else "[]"
        return "\n".join([*lines, f"{kind}: {empty}   # nothing found to propose"]) + "\n"
    lines.append(f"{kind}:")
    if kind == "facts":  # one mapping, not a list
        for item in items:
            lines += (
                ["  # " + c for c in textwrap.wrap(item.seen, 104, break_long_words=False)]
                if item.seen
                else []
            )
            lines += [f"  {key}: {_flow(value)}" for key, value in item.data.items()]
        return "\n".join(lines) + "\n"
    for item in items:
        comment = item.seen + (f"; TODO: {item.todo}" if item.todo else "")
        lines += [
            "  # " + c for c in textwrap.wrap(comment, 104, break_long_words=False, break_on_hyphens=False)
        ]
        for n, (key, value) in enumerate(item.data.items()):
            lines.append(f"  {'-' if n == 0 else ' '} {key}: {_flow(value)}")
    return "\n".join(lines) + "\n"


PAGE_TYPE = {"devices": "device", "guides": "guide", "comparisons": "comparison"}
GUIDE_SOURCES = 2  # the fewest documents a proposed guide quotes


def drop_unplanned(proposal: Proposal, docs: list[SourceDoc], schema: Any, jobs: int = 1) -> list[str]:
    """Take out of ``proposal`` the devices, guides and comparisons the compile planner would
    leave out with ``schema`` (a comparison none of whose rows has a value, a guide no section
    answers), and the guides it would make of one document's sections (its topic page holds them
    whole: a guide is for what several say), planning in ``jobs`` processes; returns them as
    'kind id'. A guide the planner would title like another page ('Troubleshooting: handling', a
    topic split by subject) becomes '… guide', so two pages never share a title."""
    pages = plan(docs, schema, jobs).pages
    planned = {(s.type, s.slug) for s in pages if s.type != "guide" or len(s.sources) >= GUIDE_SOURCES}
    dropped = []
    for kind, page_type in PAGE_TYPE.items():
        items = proposal.items.get(kind, [])
        keep = [i for i in items if (page_type, i.data.get("id")) in planned]
        dropped += [f"{kind[:-1]} {i.data.get('id')}" for i in items if i not in keep]
        proposal.items[kind] = keep
    titles = {s.title.lower() for s in pages if s.type != "guide"}
    _titled_apart(proposal.items.get("guides", []), titles, "another page has")
    return dropped


def proposed_text(current: str, proposal: Proposal, kinds: tuple[str, ...]) -> str:
    text = current or template_text("schema/wiki.yaml")
    for kind in kinds:
        text = replace_block(text, kind, render_kind(kind, proposal.items.get(kind, [])))
    return text


def _keep_fact_settings(proposal: Proposal, current: str) -> None:
    """The facts block is replaced whole: keep what the owner set there besides units."""
    try:
        kept = (yaml.safe_load(current) or {}).get("facts") or {}
    except yaml.YAMLError:
        kept = {}
    kept = {k: v for k, v in kept.items() if k != "units"} if isinstance(kept, dict) else {}
    if not kept:
        return
    items = proposal.items.get("facts") or [Item({}, "")]
    items[0].data = {**kept, **items[0].data}
    proposal.items["facts"] = items


def plan_schema(
    root: Path, kinds: tuple[str, ...] = (), *, write: bool = False, model: Any = None
) -> PlanReport:
    """Propose wiki.yaml from layer 1; with ``write`` replace the ``kinds`` (all when empty)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ConfigError(f"unknown kind(s) {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    kinds = tuple(k for k in KINDS if k in kinds) or KINDS
    jobs = default_jobs()
    docs = load_layer1(root, jobs=jobs)
    if not docs:
        raise ConfigError(
            f"{root / 'layer1_sources'} has no documents; run 'wikic fetch' and 'wikic transform' first"
        )
    proposal = propose(docs)
    notes = []
    if model is not None:
        note = refine(proposal, docs, model)
        if note:
            notes.append(note)
    path = root / "schema" / "wiki.yaml"
    current = path.read_text("utf-8") if path.exists() else ""
    _keep_fact_settings(proposal, current)
    text = proposed_text(current, proposal, kinds)
    # what would be written must load
    left_out = drop_unplanned(proposal, docs, load_wiki_schema(root, text), jobs)
    text = proposed_text(current, proposal, kinds)  # less what was left out, a guide renamed
    if left_out:
        notes.append(
            "not proposed, as compile would write no page for it (or a guide of one document's"
            f" sections, which its topic page holds): {', '.join(left_out)}"
        )
    diff = "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            text.splitlines(keepends=True),
            "schema/wiki.yaml",
            "schema/wiki.yaml (proposed)",
        )
    )
    report = PlanReport(
        proposal, current, text, diff, refined=getattr(model, "name", "") if model else "", notes=notes
    )
    if write and text != current:
        atomic_write(path, text)
        report.written = True
    return report
