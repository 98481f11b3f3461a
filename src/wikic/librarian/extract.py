"""Building blocks every backend shares: quotable prose units, spec and comparison tables,
and notes for superseded sources. All are supported by construction: they quote the source or
restate one of its structured fields, and cite the section that says it."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import cached_property

from ..bm25 import tokens
from ..draft import Block, Cell, Citation, Sentence
from ..facts import aliases as field_aliases
from ..facts import field_label, plural_stem
from ..markdown import Section, code_lines, plain_inline, split_sentences, words
from ..models import SourceDoc
from ..transform import format_value

_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_META_FIELDS = {
    "title",
    "source",
    "id",
    "url",
    "updated_at",
    "generated_by",
    "layer0",
    "hand_maintained",
    "device",
    "supersedes",
    "products",
    "tags",
    "category",
    "image",
    "icon",
    "slug",
}


def prose_units(text: str) -> list[tuple[str, str]]:
    """Quotable units of a section as (kind, text): 'para' sentences and 'bullet' list items.

    Code, tables, HTML blocks and image-only lines are skipped; inline Markdown is flattened.
    """
    units: list[tuple[str, str]] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            for s in split_sentences(plain_inline(_IMAGE.sub("", " ".join(para)))):
                if _quotable(s):
                    units.append(("para", s))
            para.clear()

    for _, line, code in code_lines(text.split("\n")):
        stripped = line.strip()
        if code or stripped.startswith(("|", "<", "#", ">")) or not stripped:
            flush()
            continue
        m = _LIST.match(line)
        if m:
            flush()
            item = plain_inline(_IMAGE.sub("", m.group(1)))
            if _quotable(item):
                units.append(("bullet", " ".join(item.split())))
            continue
        para.append(stripped)
    flush()
    return units


def _quotable(s: str) -> bool:
    n = len(s.split())
    return 3 <= n <= 80 and bool(re.search(r"[^\W\d_]", s)) and not s.rstrip().endswith(":")


def section_blocks(doc: SourceDoc, section: Section, limit: int, table_rows: int = 12) -> list[Block]:
    """Up to ``limit`` quoted units of one section, as paragraph and bullet blocks; a section with
    no prose but a table yields the table's first rows, each fact cell citing the section."""
    cite = (Citation(doc.path, section.anchor),)
    blocks: list[Block] = []
    units = prose_units(section.text)
    if not units and table_rows:
        for sec, header, rows in source_tables(doc):
            if sec is section and rows and any(header):
                width = len(header)
                body = tuple(
                    tuple(
                        Cell(c) if i == 0 else Cell(c, cite) if c else Cell("")
                        for i, c in enumerate((row + [""] * width)[:width])
                    )
                    for row in rows[:table_rows]
                )
                return [Block("table", header=tuple(header), rows=body)]
    for kind, text in units[:limit]:
        sentence = Sentence(text, cite)
        block_kind = "bullets" if kind == "bullet" else "para"
        if blocks and blocks[-1].kind == block_kind:
            blocks[-1] = Block(block_kind, sentences=blocks[-1].sentences + (sentence,))
        else:
            blocks.append(Block(block_kind, sentences=(sentence,)))
    return blocks


def lead_section(doc: SourceDoc) -> Section | None:
    for s in doc.sections:
        if prose_units(s.text):
            return s
    return None


def cite_field(doc: SourceDoc, value: object) -> Citation:
    """The section that states a structured value, else the document's first section."""
    needle = format_value(value).lower()
    for s in doc.sections:
        if s.anchor and needle and needle in plain_inline(s.text).lower():
            return Citation(doc.path, s.anchor)
    first = next((s.anchor for s in doc.sections if s.anchor), "")
    return Citation(doc.path, first)


def spec_fields(doc: SourceDoc, wanted: tuple[str, ...] = ()) -> list[str]:
    if wanted:
        return [f for f in wanted if f in doc.meta]
    return [
        k
        for k, v in doc.meta.items()
        if k not in _META_FIELDS
        and not k.startswith("record_")
        and not isinstance(v, dict)
        and (not isinstance(v, str) or len(v) <= 80)
        and v not in (None, "", [])
    ]


def comparison_table(rows: list[tuple[str, SourceDoc]], fields: tuple[str, ...]) -> Block:
    out = []
    for name, doc in rows:
        cells = [Cell(name)]
        for f in fields:
            value = doc.meta.get(f)
            if value in (None, "", []):
                cells.append(Cell("—"))
            else:
                cells.append(Cell(format_value(value), (cite_field(doc, value),)))
        out.append(tuple(cells))
    return Block("table", header=("Name", *(field_label(f) for f in fields)), rows=tuple(out))


def superseded_notes(older: list[SourceDoc]) -> list[Block]:
    """For each older version a note with its date, quoting what it said, citing it."""
    notes = []
    for old in older:
        section = lead_section(old)
        if section is None:
            continue
        quoted = prose_units(section.text)[:2]
        when = old.meta.get("updated_at", "an unknown date")
        lead = f"(earlier version, updated {when}):"
        notes.append(
            Block(
                "note",
                text=lead,
                sentences=tuple(Sentence(text, (Citation(old.path, section.anchor),)) for _, text in quoted),
            )
        )
    return notes


class Vocabulary:
    """Document frequencies over every layer-1 document of a compile, counted on first use and
    shared by its pages (so distinctive keywords cost one pass over the corpus)."""

    def __init__(self, docs: Iterable[SourceDoc]):
        self._docs = list(docs)

    @cached_property
    def frequencies(self) -> tuple[int, Counter]:
        df: Counter = Counter()
        for d in self._docs:
            df.update(set(tokens(d.title + " " + d.body)))
        return max(1, len(self._docs)), df


def aliases(doc: SourceDoc) -> list[str]:
    """Other names a source gives its subject (e.g. ``common_names``), which users search by."""
    return field_aliases(doc.meta)


def keywords(
    texts: list[str],
    n: int = 12,
    extra: tuple[str, ...] = (),
    docs: list[SourceDoc] = (),
    vocabulary: Vocabulary | None = None,
) -> tuple[str, ...]:
    """Index keywords: given names first, then the sources' aliases, then the page's most
    distinctive words (frequent here, rare in the corpus)."""
    counts = Counter(t for text in texts for t in tokens(text) if len(t) > 2 and not t.isdigit())
    if vocabulary is not None:
        total, df = vocabulary.frequencies
        score = {t: c * math.log(1 + total / (1 + df.get(t, 0))) for t, c in counts.items()}
    else:
        score = dict(counts)
    ranked = [t for t, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))]
    names = [a.lower() for d in docs for a in aliases(d)]
    taken = {d.title.lower() for d in docs}
    out = list(dict.fromkeys([*(e.lower() for e in extra), *(a for a in names if a not in taken), *ranked]))
    return tuple(out[: n + len(extra) + min(len(names), 24)])


def _cells(line: str) -> list[str]:
    line = line.strip().strip("|")
    return [plain_inline(c.strip()) for c in re.split(r"(?<!\\)\|", line)]


def source_tables(doc: SourceDoc):
    """Yield (section, header cells, data rows) for every Markdown table in a document."""
    for section in doc.sections:
        lines = section.text.split("\n")
        i = 0
        while i < len(lines) - 1:
            if lines[i].strip().startswith("|") and re.match(r"^\s*\|?\s*:?-{2,}", lines[i + 1]):
                header = _cells(lines[i])
                rows = []
                j = i + 2
                while j < len(lines) and lines[j].strip().startswith("|"):
                    rows.append(_cells(lines[j]))
                    j += 1
                yield section, header, rows
                i = j
            else:
                i += 1


def _names_match(cell: str, names: tuple[str, ...], brand: str = "") -> bool:
    text = " ".join(cell.lower().replace("(", " ").replace(")", " ").split())
    for name in names:
        n = " ".join(name.lower().replace("(", " ").replace(")", " ").split())
        if text == n or (brand and text == f"{brand.lower()} {n}"):
            return True
    return False


def device_facts(device: dict, docs: list[SourceDoc]) -> list[tuple[str, str, Citation]]:
    """(label, value, citation) facts about a device: its spec pages' frontmatter fields, then the
    rows of source tables whose first cell names the device."""
    facts: list[tuple[str, str, Citation]] = []
    seen: set[str] = set()
    spec_refs = tuple(device.get("sources") or ())
    names = tuple(device.get("match") or ()) + (device["title"],)
    for doc in docs:
        if any(doc.answers_to(r) for r in spec_refs):
            for f in spec_fields(doc, tuple(device.get("fields") or ())):
                if f not in seen:
                    seen.add(f)
                    facts.append((f, format_value(doc.meta[f]), cite_field(doc, doc.meta[f])))
    for doc in docs:
        for section, header, rows in source_tables(doc):
            for row in rows:
                if not row or not _names_match(row[0], names):
                    continue
                for label_, value in zip(header[1:], row[1:]):
                    key = label_.strip()
                    if key and value.strip() and key.lower() not in seen:
                        seen.add(key.lower())
                        facts.append((key, value.strip(), Citation(doc.path, section.anchor)))
    return facts


def facts_table(facts: list[tuple[str, str, Citation]]) -> Block | None:
    if not facts:
        return None
    rows = tuple((Cell(field_label(k) if "_" in k else k), Cell(v, (c,))) for k, v, c in facts)
    return Block("table", header=("Specification", "Value"), rows=rows)


def mentions(text: str, names: tuple[str, ...]) -> int:
    low = text.lower()
    return sum(len(re.findall(r"(?<!\w)" + re.escape(n.lower()) + r"(?!\w)", low)) for n in names)


def facts_comparison(
    rows: list[tuple[str, dict[str, tuple[str, Citation]]]], fields: tuple[str, ...]
) -> Block:
    """Rows of (name, {field: (value, citation)}) as a comparison table."""
    out = []
    for name, facts in rows:
        lowered = {k.lower(): v for k, v in facts.items()}
        cells = [Cell(name)]
        for f in fields:
            hit = facts.get(f) or lowered.get(f.lower())
            cells.append(Cell(hit[0], (hit[1],)) if hit else Cell("—"))
        out.append(tuple(cells))
    return Block(
        "table", header=("Name", *(field_label(f) if "_" in f else f for f in fields)), rows=tuple(out)
    )


def has_quotable(doc: SourceDoc) -> bool:
    """Whether a document has any prose or table a page could quote (image-only pages have none)."""
    return any(prose_units(s.text) for s in doc.sections) or any(rows for _, _, rows in source_tables(doc))


class MentionIndex:
    """Quotable sentences of a set of documents, indexed by word, to find where a name occurs."""

    def __init__(self, docs: list[SourceDoc]):
        self.units: list[tuple[SourceDoc, Section, str, tuple[str, ...]]] = []
        self.postings: dict[str, list[int]] = {}
        for doc in docs:
            for section in doc.sections:
                for _, text in prose_units(section.text):
                    toks = tuple(plural_stem(w) for w in words(text))
                    n = len(self.units)
                    self.units.append((doc, section, text, toks))
                    for t in set(toks):
                        self.postings.setdefault(t, []).append(n)

    def find(self, names: list[str], exclude: str, limit: int) -> list[tuple[SourceDoc, Section, str]]:
        """Up to ``limit`` sentences naming any of ``names`` (as whole words), outside ``exclude``;
        sentences whose section heading names it come first."""
        hits: dict[int, bool] = {}
        for name in names:
            toks = tuple(plural_stem(w) for w in words(name))
            if not toks or len(" ".join(toks)) < 4:
                continue
            candidates = set(self.postings.get(toks[0], ()))
            for t in toks[1:]:
                candidates &= set(self.postings.get(t, ()))
            for n in candidates:
                doc, section, _, unit = self.units[n]
                if doc.path == exclude:
                    continue
                if any(unit[i : i + len(toks)] == toks for i in range(len(unit) - len(toks) + 1)):
                    heading = tuple(plural_stem(w) for w in words(section.heading))
                    named = any(heading[i : i + len(toks)] == toks for i in range(len(heading)))
                    hits[n] = hits.get(n, False) or named
        ranked = sorted(hits, key=lambda n: (not hits[n], self.units[n][0].path, n))
        return [self.units[n][:3] for n in ranked[:limit]]


def mention_blocks(doc: SourceDoc, mentions: list[tuple[SourceDoc, Section, str]]) -> list[Block]:
    if not mentions:
        return []
    sentences = tuple(Sentence(text, (Citation(d.path, s.anchor),)) for d, s, text in mentions)
    return [
        Block("heading", text=f"{doc.title} elsewhere in the knowledge base", level=3),
        Block("bullets", sentences=sentences),
    ]
