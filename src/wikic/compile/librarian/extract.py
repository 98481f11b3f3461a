"""Building blocks every backend shares: quotable prose units, spec and comparison tables,
and notes for superseded sources. All are supported by construction: they quote the source or
restate one of its structured fields, and cite the section that says it."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from itertools import chain

from ...core.bm25 import tokens
from ...core.facts import (
    BYLINE,
    PROSE_FIELDS,
    TAXONOMY,
    field_label,
    format_value,
    is_unknown,
    label,
    plural_stem,
    prose_fields,
    restated_field,
)
from ...core.facts import aliases as field_aliases
from ...core.facts import facts as field_facts
from ...core.markdown import (
    IMAGE_MARKUP,
    STOPWORDS,
    Section,
    code_lines,
    heading,
    is_caption,
    is_navigation,
    is_table_start,
    plain_inline,
    points_at_media,
    readable,
    split_sentences,
    table_cells,
    unnumbered,
    words,
)
from ...core.models import SourceDoc
from ...core.words import FIRST_PERSON
from ..citations import stem
from ..draft import Block, Cell, Citation, Sentence
from ..links import Names, Target, key_of
from ..safety import suspicious

_IMAGE = IMAGE_MARKUP
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


_ORDERED = re.compile(r"^\s*\d+[.)]\s+")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")


_LETTER = re.compile(r"[^\W\d_]")


_RUN_IN = re.compile(r"^\*\*([^*\n]{2,80}?)\*\*[ \t]+(?=[A-Z])")


def run_in_label(marked: str, said: list[str]) -> list[str]:
    """A paragraph's sentences, the first keeping the bold of a run-in label the paragraph opens
    with ('**We're here to help** Have a question?'): without its stop, the label read as plain
    text runs into the sentence after it."""
    m = _RUN_IN.match(marked)
    label = plain_inline(m.group(1)).strip() if m else ""
    if not label or label[-1] in ".:!?;," or not said or not said[0].startswith(label + " "):
        return said
    return [f"**{label}** {said[0][len(label) + 1 :]}", *said[1:]]


def _has_letters(text: str) -> bool:
    return bool(_LETTER.search(text))


def _table_at(marked: list, i: int, cite: tuple[Citation, ...]) -> tuple[Block | None, int]:
    """The table whose header is ``marked[i]`` (its rows cited but for their label, padded or cut
    to the header's width), and the index of the line after it."""
    header = table_cells(marked[i][1].strip())
    rows = []
    i += 2
    while i < len(marked) and "|" in marked[i][1] and not marked[i][2]:
        rows.append(table_cells(marked[i][1]))
        i += 1
    width = len(header)
    body_rows = tuple(
        tuple(
            Cell(c) if n == 0 else Cell(c, cite) if _has_letters(c) or c.strip(" -—–") else Cell(c)
            for n, c in enumerate((row + [""] * width)[:width])
        )
        for row in rows
        if any(row)
    )
    return (Block("table", header=tuple(header), rows=body_rows) if body_rows else None), i


def section_content(doc: SourceDoc, section: Section) -> list[Block]:
    """Everything a section says, in order and whole: every sentence of its paragraphs, every
    list item (numbered lists stay numbered steps), every table row, and code blocks verbatim.

    Only what carries no text is left out: images, HTML-only lines and rules, and a section that
    is only a list of links ('What's next?': the site's navigation). Sentences and list items
    cite the section; so does every table cell but the row label.
    """
    if is_navigation(section.text):
        return []
    cite = (Citation(doc.path, section.anchor),)
    blocks: list[Block] = []
    para: list[str] = []
    items: list[list[str]] = []  # the open list's items, each a list of its lines
    ordered = [False]
    code: list[str] = []

    def flush_para() -> None:
        if para:
            marked = _IMAGE.sub("", " ".join(para))
            said = [
                s for s in split_sentences(plain_inline(marked)) if _has_letters(s) and not points_at_media(s)
            ]
            sentences = tuple(Sentence(s, cite) for s in run_in_label(marked, said))
            if sentences:
                blocks.append(Block("para", sentences=sentences))
            para.clear()

    def flush_list() -> None:
        if items:
            texts = [" ".join(plain_inline(_IMAGE.sub("", " ".join(i))).split()) for i in items]
            sentences = tuple(Sentence(x, cite) for x in texts if _has_letters(x))
            if sentences:
                blocks.append(Block("steps" if ordered[0] else "bullets", sentences=sentences))
            items.clear()

    lines = readable(section.text).split("\n")
    i = 0
    marked = list(code_lines(lines))
    while i < len(marked):
        _, line, in_code = marked[i]
        stripped = line.strip()
        if in_code:
            flush_para()
            flush_list()
            code.append(line)
            if i + 1 == len(marked) or not marked[i + 1][2]:
                body = "\n".join(code[1:-1] if len(code) > 1 and _FENCE_LINE.match(code[-1]) else code[1:])
                blocks += [Block("code", text=body)] if body.strip() else []
                code.clear()
            i += 1
            continue
        if i + 1 < len(marked) and not marked[i + 1][2] and is_table_start(stripped, marked[i + 1][1]):
            flush_para()
            flush_list()
            table, i = _table_at(marked, i, cite)
            blocks += [table] if table else []
            continue
        if is_caption(stripped, _above(marked, i)):  # '_Box LEDs on Genesis kit_' under its image
            i += 1
            continue
        m = _LIST.match(line)
        if m:
            flush_para()
            is_ordered = bool(_ORDERED.match(line))
            if items and is_ordered != ordered[0] and not line.startswith((" ", "\t")):
                flush_list()
            if not items:
                ordered[0] = is_ordered
            items.append([m.group(1)])
            i += 1
            continue
        if not stripped or _RULE.match(stripped):
            flush_para()
            nxt = next((x[1] for x in marked[i + 1 :] if x[1].strip()), "")
            if items and not _LIST.match(nxt) and not nxt.startswith((" ", "\t")):
                flush_list()
            i += 1
            continue
        if items and (line.startswith((" ", "\t")) or para == []) and not _has_text_start(stripped):
            items[-1].append(stripped)  # a list item's continuation line
            i += 1
            continue
        flush_list()
        text = stripped.lstrip(">").strip() if stripped.startswith(">") else stripped
        if text and _has_letters(plain_inline(_IMAGE.sub("", text))):
            para.append(text)
        else:
            flush_para()
        i += 1
    flush_para()
    flush_list()
    return blocks


def _above(marked: list, i: int) -> str:
    """The last line with text before line ``i``."""
    return next((x[1].strip() for x in reversed(marked[:i]) if x[1].strip()), "")


def heading_level(entry_level: int, section: Section, top: int = 2) -> int:
    """A source heading's level on the page: under the entry's heading, the document's top
    heading level (``top``: H2 under an H1 title, H1 where a help center heads its sections so)
    one below it, deeper headings keeping their depth below that, never past H6. 'Add tensioning
    cables' (H2 under the H1 'Maintain bed alignment') stood level with it."""
    return min(6, entry_level + 1 + max(0, section.level - top))


def _groups(doc: SourceDoc, n: int) -> bool:
    """Whether section ``n``, empty, is the heading of those under it (the next is deeper)."""
    here = doc.sections[n]
    return (
        bool(here.heading)
        and not here.text.strip()
        and not is_title_section(doc, here)
        and n + 1 < len(doc.sections)
        and doc.sections[n + 1].level > here.level
    )


def top_level(doc: SourceDoc) -> int:
    """The level of a document's highest heading other than its title (2 when it has none)."""
    return min((s.level for s in doc.sections if s.heading and not is_title_section(doc, s)), default=2)


def is_title_section(doc: SourceDoc, section: Section) -> bool:
    """The section under the document's own H1 title: its text is the entry's opening, unheaded."""
    return not section.heading or (section.level == 1 and section.heading == doc.title)


def described_section(doc: SourceDoc) -> Section | None:
    """The section that is the record's own description: headed by the label of its description
    field (``PROSE_FIELDS``), it holds that field's text (transform writes a long field so). It
    opens the entry, unheaded: it is what the record says the entry is. None when the document
    has an opening of its own."""
    if any(is_title_section(doc, s) and s.text.strip() for s in doc.sections):
        return None
    texts = {  # a description, not any long field ('Sowing method' is how to sow it)
        label(k): " ".join(v.split()) for k, v in doc.meta.items() if isinstance(v, str) and k in PROSE_FIELDS
    }
    return next(
        (
            s
            for s in doc.sections
            if s.level == 2 and s.heading in texts and texts[s.heading] == " ".join(s.text.split())
        ),
        None,
    )


FOOTER_FACTS = 3  # up to this many facts close an entry; more open it, as an infobox


def home_blocks(
    doc: SourceDoc,
    entry_level: int = 2,
    show: tuple[str, ...] = (),
    hide: tuple[str, ...] = (),
    units: dict[str, str] | None = None,
) -> list[Block]:
    """A source rendered completely, for its home: its long text fields as prose, its other
    fields as a cited fact list (labelled with ``units``), then every section in source order
    (sub-headings kept one level below the entry). List items that restate a frontmatter field
    (a details list rendered by transform) are left to the fact list, so no fact is stated twice."""
    first = next((s.anchor for s in doc.sections if s.anchor), "")
    top = Citation(doc.path, first)
    blocks: list[Block] = []
    for _, text in prose_fields(doc, hide):
        for para in re.split(r"\n\s*\n", text):
            sentences = tuple(
                Sentence(s, (top,)) for s in split_sentences(plain_inline(para)) if _has_letters(s)
            )
            if sentences:
                blocks.append(Block("para", sentences=sentences))
    listed = field_facts(doc, show, hide, units)
    infobox = len(listed) > FOOTER_FACTS
    fact_list = fact_table(doc, listed) if listed else None
    # a record mostly made of fields (an encyclopedia entry) opens with them, under the heading of
    # the section that lists them ('Details'), so that they are found as that section is
    box: list[Block] = [fact_list] if infobox else []
    at = len(blocks)
    top = top_level(doc)
    described = described_section(doc)
    if described is not None:  # an encyclopedia entry opens with what its record says it is
        blocks += section_content(doc, described)
        at = len(blocks)
    for n, section in enumerate(doc.sections):
        if section is described:
            continue
        content = section_content(doc, section)
        body = [b for b in (_without_restated(doc, b) for b in content) if b is not None]
        if not body:
            if box == [fact_list] and content and not is_title_section(doc, section):
                at = len(blocks)
                box.insert(
                    0, Block("heading", text=section.heading, level=heading_level(entry_level, section, top))
                )
            elif _groups(doc, n):  # 'Hot weather management' over 'Provide shade' and 'Add heatsinks'
                blocks.append(
                    Block("heading", text=section.heading, level=heading_level(entry_level, section, top))
                )
            continue
        if not is_title_section(doc, section):
            blocks.append(
                Block("heading", text=section.heading, level=heading_level(entry_level, section, top))
            )
        blocks.extend(body)
    blocks[at:at] = box
    if fact_list is not None and not infobox:  # a few labels (category, tags) close the entry
        blocks.append(fact_list)
    return blocks


def taxonomy_fields(doc: SourceDoc) -> tuple[str, ...]:
    """The fields that say where a record is filed and who wrote it (category, tags, author)."""
    return tuple(k for k in doc.meta if k in TAXONOMY or k in BYLINE)


def filed_under(entries: list[tuple[SourceDoc, list]]) -> list[Block]:
    """What the entries of a page are filed under (category, tags, author …), each value cited:
    a field every entry gives the same value is one row for the page (its value cites every
    entry), not a column repeating it; the other fields are a table with a row per entry that
    has any of them. Nothing when no entry has such fields."""
    listed = [(doc, {f.label: f for f in facts}) for doc, facts in entries if facts]
    labels = list(dict.fromkeys(label for _, by_label in listed for label in by_label))
    shared = [
        lbl
        for lbl in labels
        if len(listed) > 1 and len({_value_of(by_label, lbl) for _, by_label in listed}) == 1
    ]
    out: list[Block] = []
    if shared:
        rows = tuple(
            (
                Cell(lbl),
                Cell(
                    listed[0][1][lbl].value,
                    tuple(dict.fromkeys(cite_field(d, d.meta[by[lbl].key]) for d, by in listed)),
                ),
            )
            for lbl in shared
        )
        out.append(Block("table", header=("Field", "Every entry here"), rows=rows))
    own = [lbl for lbl in labels if lbl not in shared]
    rows_by_entry = []
    for doc, by_label in listed:
        if not any(lbl in by_label for lbl in own):
            continue
        cells = [Cell(doc.title)]
        for lbl in own:
            f = by_label.get(lbl)
            cells.append(Cell(f.value, (cite_field(doc, doc.meta[f.key]),)) if f else Cell("—"))
        rows_by_entry.append(tuple(cells))
    if rows_by_entry:
        out.append(Block("table", header=("Entry", *own), rows=tuple(rows_by_entry)))
    return out


def _value_of(by_label: dict, label: str) -> str | None:
    f = by_label.get(label)
    return None if f is None else f.value


def fact_table(doc: SourceDoc, listed: list) -> Block:
    """A source's fields as a two-column infobox, each value citing the section that states it
    (the document's first section when only the frontmatter does)."""
    rows = tuple((Cell(f.label), Cell(f.value, (cite_field(doc, doc.meta[f.key]),))) for f in listed)
    return Block("table", header=("Fact", "Value"), rows=rows)


def _without_restated(doc: SourceDoc, block: Block) -> Block | None:
    if block.kind not in ("bullets", "steps"):
        return block
    kept = tuple(s for s in block.sentences if restated_field(doc, s.text) is None)
    return Block(block.kind, sentences=kept) if kept else None


_FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,})\s*$")


def _has_text_start(line: str) -> bool:
    """A line that starts a paragraph of its own after a list (not an item's continuation)."""
    return line.startswith((">", "|", "<")) or bool(heading(line))


def lead_section(doc: SourceDoc) -> Section | None:
    for s in doc.sections:
        if prose_units(s.text):
            return s
    return None


def cite_field(doc: SourceDoc, value: object) -> Citation:
    """The section that states a structured value (a details list restating the field, else prose
    holding a value distinctive enough to be this one), else the document's first section, whose
    cited text includes the frontmatter."""
    needle = format_value(value).lower()
    sections = [s for s in doc.sections if s.anchor]
    for s in sections:
        for line in s.text.split("\n"):
            item = _LIST.match(line)
            text = plain_inline(item.group(1)) if item else ""
            if needle and needle in text.lower() and restated_field(doc, text) is not None:
                return Citation(doc.path, s.anchor)
    if len(needle) >= 3:
        for s in sections:
            if needle in plain_inline(s.text).lower():
                return Citation(doc.path, s.anchor)
    return Citation(doc.path, sections[0].anchor if sections else "")


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


def comparison_table(
    rows: list[tuple[str, SourceDoc]], fields: tuple[str, ...], units: dict[str, str] | None = None
) -> Block:
    out = []
    for name, doc in rows:
        cells = [Cell(name)]
        for f in fields:
            value = doc.meta.get(f)
            if is_unknown(value):  # 0, '' and null mean the record does not know
                cells.append(Cell("—"))
            else:
                cells.append(Cell(format_value(value), (cite_field(doc, value),)))
        out.append(tuple(cells))
    return Block("table", header=("Name", *(field_label(f, units) for f in fields)), rows=tuple(out))


SEARCH_LABELS = frozenset({"tags", "tag", "labels", "label", "keywords"})


def superseded_notes(older: list[SourceDoc], current: SourceDoc | None = None) -> list[Block]:
    """For each older version (newest first) a note with its date, quoting what it said that a
    newer version does not say any more (its fields too, but for the labels it was found by),
    citing it."""
    if not older:
        return []
    said = (
        {" ".join(s.text.split()) for b in _all_content(current) for s in b.sentences} if current else set()
    )
    notes = []
    for old in older:
        sentences: list[Sentence] = []
        for b in _all_content(old):
            for s in b.sentences:
                key = " ".join(s.text.split())
                if restated_field(old, s.text) is None and key not in said:
                    sentences.append(s)
                    said.add(key)
        now = {f.key: f.text for f in field_facts(current)} if current else {}
        # what it changed, of what it says (not the labels it was found by)
        listed = [f for f in field_facts(old) if now.get(f.key) != f.text and f.key not in SEARCH_LABELS]
        if listed:  # what the older version was filed under, in one line
            first = next((s.anchor for s in old.sections if s.anchor), "")
            text = "; ".join(f.text for f in listed)
            if text not in said:
                sentences.append(Sentence(text, (Citation(old.path, first),)))
        if not sentences:
            continue
        when = old.meta.get("updated_at", "an unknown date")
        notes.append(Block("note", text=f"(earlier version, updated {when}):", sentences=tuple(sentences)))
    return notes


def _all_content(doc: SourceDoc) -> list[Block]:
    return [b for section in doc.sections for b in section_content(doc, section)]


PUBLISHED_FIELDS = ("published_at", "published", "date")


def dated_title(doc: SourceDoc) -> str:
    """A dated source (a post, a release note) is headed with its date, so a reader sees which of
    two posts is newer; undated reference entries keep their plain title."""
    for name in PUBLISHED_FIELDS:
        value = doc.meta.get(name)
        if value:
            return f"{doc.title} ({str(value)[:10]})"
    return doc.title


class Vocabulary:
    """Document frequencies over every layer-1 document of a compile, counted once and shared by
    its pages (so distinctive keywords cost one pass over the corpus, see ``corpus.Corpus``)."""

    def __init__(self, documents: int, df: Counter):
        self.frequencies: tuple[int, Counter] = (max(1, documents), df)


def aliases(doc: SourceDoc) -> list[str]:
    """Other names a source gives its subject (e.g. ``common_names``), which users search by."""
    return field_aliases(doc.meta)


_KEYWORD = re.compile(r"^[a-z][a-z-]*[a-z]$")
_LOWER_WORD = re.compile(r"\b[a-z][a-z-]+\b")
_CAPITALISED_WORD = re.compile(r"(?<![.!?:]\s)(?<!^)\b([A-Z][a-z]+)\b")


def keywords(
    texts: list[str],
    n: int = 8,
    extra: tuple[str, ...] = (),
    vocabulary: Vocabulary | None = None,
    said: int = 1,
) -> tuple[str, ...]:
    """Index keywords: the given names first, then the page's most distinctive words (frequent
    here, rare in the corpus). Only clean words count: letters (and inner hyphens), no numbers or
    fragments, nothing on the deny list, no word the page only ever writes capitalised
    mid-sentence unless its title or headings do too (that is a person's or a place's name), and
    none its texts say fewer than ``said`` times unless its title does ('shame' and 'sulks', said
    once in a post about basil, are nothing anyone searches the page by)."""
    head = " ".join(texts[:1])
    capitalised = {w.lower() for x in texts for w in _CAPITALISED_WORD.findall(x)}
    lowered = {w for x in texts for w in _LOWER_WORD.findall(x)}
    proper = capitalised - lowered - set(words(head))
    found = Counter(chain.from_iterable(map(tokens, texts)))  # each word tested once, not per use
    titled = set(tokens(head))
    # a placeholder ('farmbot-xxxx', 'aaaa') is no word: one letter repeated
    counts = {
        t: c
        for t, c in found.items()
        if len(set(t)) > 1
        and len(t) > 2
        and _KEYWORD.match(t)
        and t not in proper
        and (c >= said or t in titled)
    }
    if vocabulary is not None:
        total, df = vocabulary.frequencies
        score = {t: (1 + math.log(c)) * math.log(1 + total / (1 + df.get(t, 0))) for t, c in counts.items()}
    else:
        score = counts
    given = [e.lower() for e in extra if not denied(e)]
    inside = {w for e in given for w in words(e)}  # 'grove' says nothing 'grove 6' does not
    chosen = list(dict.fromkeys(given))
    for t, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(chosen) >= n:
            break
        if t not in inside and t not in chosen and t not in GENERIC and not denied(t):
            chosen.append(t)
    return tuple(chosen[:n])


# Words of any subject, which nobody searches a support wiki by ('How to keep basil going all year'
# gave 'going', 'down', 'people', 'always'): never mined as keywords, though a name may hold them.
GENERIC = frozenset(
    """going goes gone always never ever often people kind happens happen happened something anything
    everything nothing take takes taking took now later still really lot lots thing things way ways
    good better well new get gets got getting make makes made making want wants year years day
    same different other another every first last next back down out around away done glance
    one two three four five six seven eight nine ten twelve twenty half""".split()
)


# Words never offered as keywords: profanity and slurs, which record fields (a crop's list of
# common names, say) sometimes carry. Kept short on purpose; a KB can hide a field with facts.hide.
DENIED = frozenset(
    "fuck fucking shit crap damn bitch bastard ass arse asshole dick cock penis vagina pussy cunt "
    "slut whore porn sex sexy nazi hillbilly redneck retard retarded".split()
)


_LETTERS = re.compile(r"[a-z]+")

# Words of courtesy that comment threads and letters are full of; nobody searches by them.
COURTESY = frozenset("thank thanks thx please sorry hello hey welcome cheers regards congrats".split())


def denied(keyword: str) -> bool:
    return any(w in DENIED or w in COURTESY for w in _LETTERS.findall(keyword.lower()))


def source_tables(doc: SourceDoc):
    """Yield (section, header cells, data rows) for every Markdown table in a document."""
    for section in doc.sections:
        lines = section.text.split("\n")
        i = 0
        while i < len(lines) - 1:
            if is_table_start(lines[i], lines[i + 1]):
                header = table_cells(lines[i])
                rows = []
                j = i + 2
                while j < len(lines) and "|" in lines[j]:
                    rows.append(table_cells(lines[j]))
                    j += 1
                yield section, header, rows
                i = j
            else:
                i += 1


_CELL_PARTS = re.compile(r"\s+/\s+|\s+and\s+|(?<=\+)\s+")  # 'Genesis v1.2+<br>Genesis XL v1.2+' read as text
_OPEN_VERSION = re.compile(r"\s+v?\d+(?:\.\d+)*\+$")  # 'Genesis v1.2+': this and every later version
_ONE_VERSION = re.compile(r"\s+v?\d+(?:\.\d+)+$")  # 'Genesis v1.2': that version alone


def _names_match(cell: str, names: tuple[str, ...], brand: str = "") -> bool:
    """Whether a table's first cell names the device: the name itself, or one of the models a
    cell lists ('Genesis v1.2+ Genesis XL v1.2+', 'Genesis v1.5+ and Express v1.0+'), where a
    version open to later ones ('v1.2+') includes today's model and one past version ('v1.2') does
    not."""
    wanted = {_bare(n) for n in names}
    wanted |= {f"{brand.lower()} {n}" for n in wanted} if brand else set()
    parts = [cell, *_CELL_PARTS.split(cell)]
    return any(_bare(_OPEN_VERSION.sub("", p)) in wanted for p in parts if not _ONE_VERSION.search(p))


def _bare(name: str) -> str:
    """A name as compared: lower case, brackets and runs of spaces as one space."""
    return " ".join(name.lower().replace("(", " ").replace(")", " ").split())


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
            versioned = _past_versions(rows, names)
            past = [row for row in rows if row and versioned and _one_past_version(row[0], names)]
            for row in rows:
                if not row or not _names_match(row[0], names):
                    continue
                for n, (label_, value) in enumerate(zip(header[1:], row[1:]), start=1):
                    key = label_.strip()
                    if key and value.strip() and key.lower() not in seen:
                        seen.add(key.lower())
                        said = f"{value.strip()} ({row[0].strip()})" if versioned else value.strip()
                        # and what the past versions had: the table's other rows for the device
                        earlier = [
                            f"{r[n].strip()} ({r[0].strip()})" for r in past if len(r) > n and r[n].strip()
                        ]
                        said = "; ".join([said, *earlier])
                        facts.append((key, said, Citation(doc.path, section.anchor)))
    return facts


def _one_past_version(cell: str, names: tuple[str, ...]) -> bool:
    """Whether a table's first cell is one past version of the device ('Genesis v1.3')."""
    wanted = {_bare(n) for n in names}
    return any(
        _ONE_VERSION.search(p) and _bare(_ONE_VERSION.sub("", p)) in wanted
        for p in (cell, *_CELL_PARTS.split(cell))
    )


def _past_versions(rows: list[list[str]], names: tuple[str, ...]) -> bool:
    """Whether a table has a row for a past version of the device ('Genesis v1.3'): its values
    differ from version to version, so the row for today's model holds for the versions it names
    ('Calibration card with red dots (Genesis v1.5+ and Express v1.0+)'), not for every kit."""
    return any(_one_past_version(row[0], names) for row in rows if row)


def in_context(
    facts: list[tuple[str, str, Citation]], docs: dict[str, SourceDoc], names: tuple[str, ...], own: set[str]
) -> list[tuple[str, str, Citation]]:
    """Facts from a table under a heading that does not name the device, labelled with that
    heading ('Cost (Economies of scale)'); none from a table answering a question about something
    else: the row naming the device in 'What is the size and weight of the shipping box?' gives
    the box's dimensions, not the device's. Facts of the device's own pages (``own``) and of
    headings that name it keep their label."""
    out = []
    for key, value, cite in facts:
        doc = docs.get(cite.path) if cite.path not in own else None
        section = doc.section(cite.anchor) if doc and cite.anchor else None
        heading = _context(doc, section) if section else ""
        if heading and not mentions(heading, names) and heading.lower() not in key.lower():
            if heading.rstrip().endswith("?"):
                continue
            key = f"{key} ({heading})"
        out.append((key, value, cite))
    return out


# headings that say where a section stands, not what it is about ('How it works', 'Overview')
_PLACE_WORDS = frozenset(
    "works overview details introduction intro summary notes general background more".split()
)


def _context(doc: SourceDoc, section: Section) -> str:
    """What a table's section is about, as a label's context: its heading without a step's
    number ('Step 1: Place the calibration objects' → 'Place the calibration objects'), or its
    document's title when the heading only says where it stands ('How it works' of 'Axis Setup')."""
    said = unnumbered(" ".join(plain_inline(section.heading).split()))
    if said and all(w in STOPWORDS or w in _PLACE_WORDS for w in words(said)):
        return " ".join(plain_inline(doc.title).split())
    return said


def facts_table(facts: list[tuple[str, str, Citation]]) -> Block | None:
    if not facts:
        return None
    rows = tuple(
        (Cell(field_label(k) if re.fullmatch(r"[a-z0-9_]+", k) else k), Cell(v, (c,))) for k, v, c in facts
    )
    return Block("table", header=("Specification", "Value"), rows=rows)


def mentions(text: str, names: tuple[str, ...]) -> int:
    low = text.lower()
    return sum(len(_name_pattern(n).findall(low)) for n in names if n.lower() in low)


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(name.lower()) + r"(?!\w)")


def compared_facts(
    devices: list[dict], docs: list[SourceDoc], fields: tuple[str, ...] | list[str]
) -> tuple[list[str], list[tuple[str, dict[str, tuple[str, Citation]]]]]:
    """The columns and rows of a comparison of devices: the configured fields, then the other
    columns of the tables that state them (a table of sizes that also gives each model's cost),
    then, for a device none of those describe, the columns of tables that state it and another
    compared device (so every model has a row with what the sources say of it). Every device is
    a row, in the order given, with {column: (value, citation)}."""
    stated = [(d, device_facts(d, docs)) for d in devices]
    columns = list(dict.fromkeys(fields))
    taken = {c.lower() for c in columns}

    def add(keys: list[str]) -> None:
        for key in keys:
            if key.lower() not in taken:
                taken.add(key.lower())
                columns.append(key)

    names = [tuple(d.get("match") or ()) + (d["title"],) for d in devices]
    configured = {f.lower() for f in fields}
    for doc in docs:  # every table with a row for a compared device that states a configured field
        for _, header, rows in source_tables(doc):
            keys = [h.strip() for h in header[1:] if h.strip()]
            named = any(row and any(_names_match(row[0], n) for n in names) for row in rows)
            if named and any(k.lower() in configured for k in keys):
                add(keys)
    said_by: dict[tuple[str, str], set[str]] = {}
    for device, facts in stated:
        for _, _, c in facts:
            said_by.setdefault((c.path, c.anchor), set()).add(device["title"])
    for _, facts in stated:
        if not any(k.lower() in taken for k, _, _ in facts):
            add([k for k, _, c in facts if len(said_by[(c.path, c.anchor)]) > 1])
    rows = [(d["title"], {k: (v, c) for k, v, c in facts if k.lower() in taken}) for d, facts in stated]
    # the models the configured fields describe first, in the order given: a row of dashes
    # between 'Express' and 'Express XL' parted the two a reader compares
    return columns, sorted(rows, key=lambda row: -sum(k.lower() in configured for k in row[1]))


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
    # a field's name ('tank_capacity_l', 'connectivity') is labelled; a table's own header stays
    labels = (field_label(f) if "_" in f or (f.islower() and " " not in f) else f for f in fields)
    return Block("table", header=("Name", *labels), rows=tuple(out))


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

    def find(
        self, names: list[str], exclude: str, limit: int | None = None
    ) -> list[tuple[SourceDoc, Section, str]]:
        """Up to ``limit`` (else all) sentences naming any of ``names`` (as whole words) that read on their
        own (``stands_alone``), outside ``exclude``; sentences whose section heading names it
        come first."""
        hits: dict[int, bool] = {}
        as_names = Names({k: Target("") for n in names if (k := key_of(n))})  # 'Raspberry Pi' is no raspberry
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
                said = any(unit[i : i + len(toks)] == toks for i in range(len(unit) - len(toks) + 1))
                if said and as_names.keys_in(self.units[n][2]) and stands_alone(self.units[n][2], name):
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


# ---------------------------------------------------------------------------------------------
# Leads, summaries and keywords

_PRONOUN_START = re.compile(
    r"^(it|its|this|that|these|those|they|their|there|he|she|we|you|here|also|but|and|or|so|then|"
    r"however|instead|otherwise|alternatively|for example|if|when|as|in addition|once|after|before|"
    r"while|although|because|since|unless|both|each|such|other)\b",
    re.IGNORECASE,
)
LEAD_SENTENCES = 2


_THIS_NOUN = re.compile(r"^(?:this|these)\s+([^\W\d_]+)\b", re.I)


def leans_back(text: str, subject: str = "") -> bool:
    """Whether a sentence opens on what came before it ('It …', 'These …', 'However …'); 'This
    housing …' does not under a ``subject`` that names a housing."""
    this = _THIS_NOUN.match(text)
    named = bool(this and subject) and stem(this.group(1).lower()) in {stem(w) for w in tokens(subject)}
    return not named and bool(_PRONOUN_START.match(text))


_OPENING = re.compile(r"^[^,.;:]{1,40},\s+")


def without_opening(text: str) -> str:
    """A sentence without the short phrase it opens with ('For Genesis kits, this means …' →
    'this means …', 'At the same time, FarmBot is …' → 'FarmBot is …')."""
    return _OPENING.sub("", text, count=1)


def stands_alone(text: str, subject: str) -> bool:
    """Whether a sentence quoted apart from its section reads on its own and states something:
    it leans on no sentence before it ('It …', 'with these sequences', '… offered for it.'), it
    is no fragment ('you may want to …'), and it does not open on the writer ('I cook a lot …')."""
    plain = plain_inline(text).lstrip()
    after_opening = without_opening(plain)  # 'For Genesis kits, this means …'
    return (
        not leans_back(plain, subject)
        and not plain[:1].islower()
        and not FIRST_PERSON.match(plain)
        and not plain.startswith("(")  # '(Only available for Genesis v1.5+ …)': an aside to what came before
        and not (after_opening != plain and _POINTS_BACK.match(after_opening))
        and not _REFERS_BACK.search(plain)
    )


_POINTS_BACK = re.compile(r"(?:this|that|these|those|it|they)\b", re.IGNORECASE)
# 'with these sequences', '… are not offered for it.', '… for this model', 'the example below',
# 'Plus, …', 'Now imagine …': what they refer to is in the sentences (or the picture) around them
_REFERS_BACK = re.compile(
    r"\b(?:these|those)\s+(?!of\b|who\b|which\b|with\b)[a-z]|\b(?:it|them)[.!]?$|^(?:Plus|Now)\b"
    r"|\bthis (?:example|model|one|device|garden|kit|version)\b"
    r"|\b(?:below|above)(?=\s*[,.:;)]|\s+(?:we|you|is|are|shows?)\b)|\b(?:shown|see|as|listed)\s+(?:below|above)\b"
)


# 'In the following sections we'll go over …', 'Try looking through our troubleshooting guides
# below', 'Please see the Software Troubleshooting Guide', 'Still having issues?', 'Please email
# contact@…': a sentence that says only where the rest (or help) is, or asks
_POINTS_AHEAD = re.compile(
    r"\b(?:in|over) the (?:following|next) (?:sections?|steps|pages?|articles?)\b"
    r"|\b(?:we'll|we will|let's) (?:go over|cover|look at|walk (?:you )?through)\b"
    r"|\b(?:look(?:ing)? through|browse(?: through)?|check out)\b[^.!?]*\b(?:below|guides?|articles?)\b"
    r"|\bplease (?:see|refer to|read)\b[^.!?]*\b(?:guides?|articles?|sections?|pages?)\b"
    r"|^please (?:e-?mail|contact|call|write to)\b"
    r"|^in (?:these|this) (?:instructions|guide|article|post|tutorial|page),? (?:we|you)(?:'ll| will)? "
    r"(?:show|learn|explain|walk|cover|look)\b",
    re.IGNORECASE,
)
_POINTING = (
    "following",
    "next",
    "we'll",
    "we will",
    "let's",
    "look",
    "brows",
    "check out",
    "please",
    "in th",
)


def points_ahead(text: str) -> bool:
    """Whether a sentence (as ``prose_units`` gives it: plain text) announces what follows it, or
    where else to look or ask, instead of saying something itself."""
    text = text.strip()
    if text.endswith("?"):
        return True
    lowered = text.lower()  # most sentences hold none of the words: no need to search them
    return any(w in lowered for w in _POINTING) and bool(_POINTS_AHEAD.search(text))


def self_contained(text: str, subject: str = "") -> bool:
    """A sentence that reads on its own at the top of a page: a statement of some length that does
    not lean on what came before it ('It …', 'These …') or introduce a list ('… as follows:').
    'This housing …' reads on its own under a ``subject`` that names a housing."""
    words = text.split()
    return (
        5 <= len(words) <= 45
        and not leans_back(text, subject)
        and not text.rstrip().endswith((":", "?"))
        and text[:1].isupper()
        and "**" not in text
    )


def pick_lead(
    blocks: list[Block], title: str, vocabulary: Vocabulary | None = None, limit: int = LEAD_SENTENCES
) -> list[Sentence]:
    """A page's lead, quoted from its body: up to ``limit`` self-contained sentences that open a
    paragraph, a sentence that defines the title ('The Sprout 3 is …') first, else the most central
    (sharing the most distinctive words with the page title and with the page as a whole). A lead
    quotes: its sentences stay where they are in the body."""
    candidates = []  # (block index, sentence index, sentence): the openings of the page's entries
    opening = True
    for bi, b in enumerate(blocks):
        if b.kind == "heading":
            opening = opening or b.level <= 2
            continue
        if b.kind == "para" and b.sentences and opening:
            opening = False
            for si, s in enumerate(b.sentences[:2]):
                if suspicious(s.text):  # never opens a page; the sentence after it may
                    continue
                if not self_contained(s.text, title):
                    break
                candidates.append((bi, si, s))
    if not candidates:  # no entry opens with a sentence that reads on its own: any such sentence
        candidates = [
            (bi, si, s)
            for bi, b in enumerate(blocks)
            if b.kind == "para"
            for si, s in enumerate(b.sentences)
            if self_contained(s.text, title) and not suspicious(s.text)
        ][:1]
    if not candidates:
        return []
    page_words = Counter(w for b in blocks for s in b.sentences for w in {stem(x) for x in tokens(s.text)})
    title_words = {stem(x) for x in tokens(title)}
    total, df = vocabulary.frequencies if vocabulary is not None else (1, Counter())

    defining = re.compile(
        r"^(?:the\s+|an?\s+)?" + re.escape(title) + r"\b.{0,40}?\b(?:is|are|was|were)\b", re.I
    )

    def score(item: tuple[int, int, Sentence]) -> tuple[bool, float, int, int]:
        bi, si, s = item
        toks = {stem(x) for x in tokens(s.text)}
        rarity = {t: math.log(1 + total / (1 + df.get(t, 0))) for t in toks}
        central = sum(rarity[t] * math.log(1 + page_words[t]) for t in toks) / (1 + len(toks))
        named = sum(rarity[t] for t in toks & title_words)
        return (not defining.match(s.text), -(central + 2 * named), bi, si)

    chosen = sorted(candidates, key=score)[:1]
    first_bi, first_si, _ = chosen[0]
    nxt = next((c for c in candidates if c[0] == first_bi and c[1] == first_si + 1), None)
    if nxt is not None and limit > 1:
        chosen.append(nxt)  # the sentence after it, when it also reads on its own
    return [s for _, _, s in chosen]


def naming_sentences(names: tuple[str, ...], docs: list[SourceDoc]) -> list[Sentence]:
    """The first self-contained sentence, among ``docs``, that says what one of ``names`` is
    ('FarmBot Express is designed …'), else none: a fact of which it is the subject ('FarmBot
    Genesis kits include rotary encoders …') or a sentence that only names it says nothing of what
    it is, so it is no lead."""
    return _first_saying(names, docs, _THE, _DEFINES)


def subject_sentences(names: tuple[str, ...], docs: list[SourceDoc]) -> list[Sentence]:
    """The first self-contained sentence, among ``docs``, of which one of ``names`` is the subject
    and says what it has ('All of our top-of-the-line Genesis kits include rotary encoders …'), else
    none: the lead of a device no source defines; a reader learns what it is from what it has,
    where an 'about' line alone ('What the sources say about …') told nothing."""
    return _first_saying(names, docs, _SUBJECT_BEFORE, _HAS)


def _first_saying(
    names: tuple[str, ...], docs: list[SourceDoc], before: re.Pattern, after: re.Pattern
) -> list[Sentence]:
    """The first self-contained sentence of a paragraph, among ``docs`` in path order, that names
    one of ``names`` (longest first, not a variant's: 'Express XL') with ``before`` matching what
    precedes the name and ``after`` what follows it."""
    exact = re.compile(
        r"\b(?:"
        + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        + r")\b(?!\s*(?:XL|\())",
        re.IGNORECASE,
    )
    for doc in sorted(docs, key=lambda d: d.path):
        for section in doc.sections:
            for b in section_content(doc, section):
                for s in b.sentences if b.kind == "para" else ():
                    m = exact.search(s.text)
                    if (
                        m is not None
                        and self_contained(s.text)
                        and before.match(s.text[: m.start()])
                        and after.match(s.text[m.end() :])
                    ):
                        return [s]
    return []


_THE = re.compile(r"^(?:the\s+|an?\s+)?$", re.IGNORECASE)
_DEFINES = re.compile(r"^(?:\s+\w+){0,3}?\s+(?:is|are|was|were)\b", re.IGNORECASE)
# what may stand before the name of a sentence's subject ('All of our top-of-the-line …')
_SUBJECT_BEFORE = re.compile(
    r"^(?:(?:the|an?)\s+|all\s+(?:of\s+)?(?:our\s+)?(?:[\w-]+\s+)?)?$", re.IGNORECASE
)
_HAS = re.compile(
    r"^(?:\s+(?:kits?|models?|devices?|bots?|units?))?\s+(?:includes?|has|have|features?|comes?\s+with)\b",
    re.IGNORECASE,
)

SUMMARY_CHARS = 160


def summary_of(sentences: list[str], limit: int = SUMMARY_CHARS) -> str:
    """One sentence of at most ``limit`` characters: the first that fits, else the first cut
    between two items of a contents line, else at a clause or word boundary (marked '…'): a
    guide's line ended 'My grow light won't turn on. What…'."""
    plain = [" ".join(plain_inline(s).split()) for s in sentences if s.strip()]
    for s in plain:
        if len(s) <= limit:
            return s
    if not plain:
        return ""
    s = plain[0]
    cut = s[: limit - 1]
    for mark in (" · ", "; ", ", ", " — ", " – ", " "):
        i = cut.rfind(mark)
        if i > limit // 2:
            return cut[:i].rstrip(" ,;—–") + "…"
    return cut.rstrip() + "…"
