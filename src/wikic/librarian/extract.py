"""Building blocks every backend shares: quotable prose units, spec and comparison tables,
and notes for superseded sources. All are supported by construction: they quote the source or
restate one of its structured fields, and cite the section that says it."""

from __future__ import annotations

import re
from collections import Counter

from ..bm25 import tokens
from ..draft import Block, Cell, Citation, Sentence
from ..markdown import Section, plain_inline, split_sentences
from ..models import SourceDoc
from ..transform import format_value, label

UNITS = {
    "l": "l",
    "ml": "ml",
    "w": "W",
    "cm": "cm",
    "mm": "mm",
    "m": "m",
    "kg": "kg",
    "g": "g",
    "usd": "USD",
    "eur": "EUR",
    "c": "°C",
    "f": "°F",
    "h": "h",
    "pct": "%",
}


def field_label(name: str) -> str:
    """'tank_capacity_l' → 'Tank capacity (l)'; other names as ``transform.label``."""
    head, _, unit = name.rpartition("_")
    if head and unit.lower() in UNITS:
        return f"{label(head)} ({UNITS[unit.lower()]})"
    return label(name)


_FENCE = re.compile(r"^\s*(```|~~~)")
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
    in_fence = False

    def flush() -> None:
        if para:
            for s in split_sentences(plain_inline(_IMAGE.sub("", " ".join(para)))):
                if _quotable(s):
                    units.append(("para", s))
            para.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        stripped = line.strip()
        if in_fence or stripped.startswith(("|", "<", "#", ">")) or not stripped:
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


def section_blocks(doc: SourceDoc, section: Section, limit: int) -> list[Block]:
    """Up to ``limit`` quoted units of one section, as paragraph and bullet blocks."""
    cite = (Citation(doc.path, section.anchor),)
    blocks: list[Block] = []
    for kind, text in prose_units(section.text)[:limit]:
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


def spec_table(doc: SourceDoc, fields: tuple[str, ...] = ()) -> Block | None:
    rows = [
        (Cell(field_label(f)), Cell(format_value(doc.meta[f]), (cite_field(doc, doc.meta[f]),)))
        for f in spec_fields(doc, fields)
    ]
    return Block("table", header=("Specification", "Value"), rows=tuple(rows)) if rows else None


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
        lead = f"An earlier version, updated {when}, said:"
        notes.append(
            Block(
                "note",
                text=lead,
                sentences=tuple(Sentence(text, (Citation(old.path, section.anchor),)) for _, text in quoted),
            )
        )
    return notes


def keywords(texts: list[str], n: int = 10, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    counts = Counter(t for text in texts for t in tokens(text) if len(t) > 2 and not t.isdigit())
    ranked = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    out = list(dict.fromkeys([*(e.lower() for e in extra), *ranked]))
    return tuple(out[:n])
