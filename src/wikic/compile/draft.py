"""What a librarian produces: a page draft made of cited sentences, tables and notes.

Every backend returns a ``Draft``; the compile stage verifies its citations and renders it to
Markdown. ``parse_citations`` reads them back from a rendered page (for check, trace and eval).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import PurePosixPath
from urllib.parse import unquote

from ..core.markdown import LINK_TEXT, escape_block_start, plain_inline
from ..transform.layer1 import LAYER1
from .links import Names, Target, key_of


@dataclass(frozen=True, order=True)
class Citation:
    """A pointer to a layer-1 section: ``path`` relative to the KB root, GitHub ``anchor``."""

    path: str
    anchor: str = ""

    @property
    def label(self) -> str:
        return _label(self.path)

    def href(self, page_path: str) -> str:
        rel = link_path(_relative_path(self.path, os.path.dirname(page_path) or "."))
        return rel + (f"#{self.anchor}" if self.anchor else "")

    def __str__(self) -> str:
        return self.path + (f"#{self.anchor}" if self.anchor else "")


@lru_cache(maxsize=1 << 16)  # a page cites a few sources many times; paths are plain strings
def _label(path: str) -> str:
    """A citation's text: the source and key, brackets shown as parentheses (a link's text ends
    at its first ']')."""
    return PurePosixPath(path).relative_to(LAYER1).with_suffix("").as_posix().translate(_NO_BRACKETS)


_NO_BRACKETS = str.maketrans("[]", "()")
# What a link target in Markdown cannot hold as it is: spaces and other white space, brackets,
# angle brackets, and the characters URLs give a meaning ('%', '#', '?').
_UNSAFE_IN_LINK = re.compile(r"[\s()\[\]<>%#?\\]")


def link_path(path: str) -> str:
    """A relative path as a Markdown link target: what would end or break the link percent-
    encoded ('my file [v2].md' → 'my%20file%20%5Bv2%5D.md'); ``resolve_href`` decodes it."""
    return _UNSAFE_IN_LINK.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), path)


@lru_cache(maxsize=1 << 16)
def _relative_path(path: str, start: str) -> str:
    return os.path.relpath(path, start)

    def __str__(self) -> str:
        return self.path + (f"#{self.anchor}" if self.anchor else "")


@dataclass(frozen=True)
class Sentence:
    text: str
    cites: tuple[Citation, ...]


@dataclass(frozen=True)
class Cell:
    """A table cell; label cells (row and column names) carry no citation."""

    text: str
    cites: tuple[Citation, ...] = ()


@dataclass(frozen=True)
class Block:
    """``kind`` is heading | para | bullets | steps | table | note | code | links | about.

    heading: ``text``, ``level``; para/bullets/steps: ``sentences`` (steps are numbered); table:
    ``header`` and ``rows``; note: a superseded statement kept with its date, ``text`` is the
    lead-in and ``sentences`` the quoted older statement; code: a source's code block, verbatim
    in ``text`` (not prose, so not cited); links: ``links`` to other pages, after the label
    ``text`` on one line ('Read more: …'), or one per line when there is no label.
    """

    kind: str
    text: str = ""
    level: int = 2
    sentences: tuple[Sentence, ...] = ()
    header: tuple[str, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    links: tuple[tuple[str, str], ...] = ()  # links: (KB-relative href, title) of other pages


@dataclass(frozen=True)
class Draft:
    title: str
    summary: str
    keywords: tuple[str, ...]
    blocks: tuple[Block, ...]
    see_also: tuple[str, ...] = ()  # wiki page paths this page links to
    stats: dict = field(default_factory=dict, compare=False)

    def with_blocks(self, blocks: list[Block]) -> Draft:
        return replace(self, blocks=tuple(blocks))


SUPERSEDED_MARK = "**Superseded**"
SOURCE_LABEL = "From"  # a links block of this label is a trail to a quoted section's home
PROSE_KINDS = ("para", "bullets", "steps", "note")  # blocks made of cited sentences


def _cite_links(cites: tuple[Citation, ...], page_path: str) -> str:
    if len(cites) == 1:  # most sentences cite one section
        return _cite_link(cites[0], page_path)
    return " ".join(_cite_link(c, page_path) for c in sorted(set(cites)))


@lru_cache(maxsize=1 << 16)  # a page quotes several sentences of each section it cites
def _cite_link(cite: Citation, page_path: str) -> str:
    return f"[{cite.label}]({cite.href(page_path)})"


def escape_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class Navigation:
    """A page's links to other pages, decided by the plan (``links``) and part of its fingerprint.

    ``names``: subject name keys and the KB-relative href of their page or entry, linked at their
    first mention under each top heading; ``see_also`` and ``backlinks``: (href, title) pairs listed at
    the end; ``mentions``: per entry (a layer-1 path), the other places that name it.
    """

    names: tuple[tuple[tuple[str, ...], str], ...] = ()
    proper: tuple[tuple[str, ...], ...] = ()  # names that link only where written as a name
    compounds: tuple[tuple[str, tuple[str, ...]], ...] = ()  # longer names one-word names are part of
    words: tuple[tuple[str, ...], ...] = ()  # of those, common words: a table cell never links them
    titled: tuple[tuple[tuple[str, ...], str], ...] = ()  # titles linked where a line is one, whole
    # subjects with a page of their own, and its title: a table cell that lists records by their ids
    # ('grove-6, canopy-12', 'chives, dill') shows their titles ('Grove 6', 'Chives')
    shown: tuple[tuple[tuple[str, ...], str], ...] = ()
    own: tuple[
        tuple[str, ...], ...
    ] = ()  # the page's own names: never linked, but no shorter name inside them is
    see_also: tuple[tuple[str, str], ...] = ()
    backlinks: tuple[tuple[str, str], ...] = ()
    mentions: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    homes: tuple[tuple[str, str, str], ...] = ()  # (layer-1 path[#anchor], href, title) of its sources
    # statements a newer source changed: (sentence, when it was stated, what holds now, href, title)
    outdated: tuple[tuple[str, str, str, str, str], ...] = ()
    # statements another source disagrees with: (sentence, href, what the other source names there,
    # and the href and label to use when that href's heading is not on the page)
    disputes: tuple[tuple[str, str, str, str, str], ...] = ()
    # the sources' own links to other sources: (layer-1 path, anchor, link text, href of the target,
    # the link's sentence up to and with its text)
    refs: tuple[tuple[str, str, str, str, str], ...] = ()

    def home(self, path: str, anchor: str = "") -> tuple[str, str] | None:
        """(href, title) of where a source (or one of its sections) is shown whole."""
        key = f"{path}#{anchor}" if anchor else path
        return next(((h, t) for k, h, t in self.homes if k == key), None)


def relative(href: str, page_path: str) -> str:
    """A KB-relative 'wiki/x.md#a' as seen from ``page_path``."""
    path, _, anchor = href.partition("#")
    rel = _relative_path(path, os.path.dirname(page_path) or ".") if path != page_path or not anchor else ""
    return rel + (f"#{anchor}" if anchor else "")


# what no name is linked inside: links and bracketed text (a link inside would nest brackets),
# code, fact labels, and bare addresses ('https://x.org/docs/connecting-farmbot-to-the-internet'
# holds a page's title, hyphenated)
_PROTECTED = re.compile(
    r"\[(?:[^\[\]]|\[[^\[\]]*\])*\](?:\([^()]*\))?|`[^`]*`|\*\*[^*]+:\*\*"
    r"|\b(?:https?|ftp)://[^\s<>()\[\]]+|\bwww\.[^\s<>()\[\]]+"
)


_RECORD_IDS = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:, [a-z0-9]+(?:-[a-z0-9]+)*)*")  # 'thai-basil, dill'


def record_id(doc) -> str:
    """How fields name a record: its id, or for an id that is a file's name ('tomato.json', a
    folder source's) its key ('tomato'), as another record's companions list it."""
    return doc.id if _RECORD_IDS.fullmatch(doc.id) else doc.key


def as_recorded(cell: str, linked: Mapping[str, str]) -> str:
    """A table cell that lists records by their pages' titles where its source lists their ids
    ('Grove 6, Chives, shiso' for 'grove-6, chives, shiso'; see ``_Linker``), as the source writes
    it. ``linked``: the text of each link of the cell to a device's or an entry's page → the id of
    the record that page stands for ('Fennel, finocchio' links no title, and stays as it is)."""
    items = cell.split(", ")
    written = [linked.get(item, item) for item in items]
    if written == items or not all(_RECORD_IDS.fullmatch(w) for w in written):
        return cell
    return ", ".join(written)


def record_links(cell: str, page_path: str, ids: Mapping[str, str]) -> dict[str, str]:
    """The text of each link of a rendered table ``cell`` (on ``page_path``) to a page of ``ids``
    (a device's or an entry's page → the id of its record) → that id."""
    out = {}
    for m in ANY_LINK.finditer(cell):
        rid = ids.get(resolve_href(page_path, m.group(2)))
        if rid:
            out[" ".join(plain_inline(m.group(1)).split())] = rid
    return out


class _Linker:
    """Links the first mention of each subject under each top heading of a page. In a table cell (a field's
    value), capitals are the field's style rather than a name's ('Direct Seed, thin to 3cm'), so a
    page whose one-word title is a common word ('Seeds') is not linked there."""

    def __init__(self, nav: Navigation, page_path: str):
        own = {k: Target(page_path) for k in nav.own}  # 'Express (XL)' on the XL's page is no Express
        self.names = Names(
            {**own, **{k: Target(href) for k, href in nav.names}},
            frozenset(nav.proper),
            {k: frozenset(v) for k, v in nav.compounds},
        )
        self.shown = dict(nav.shown)
        self.own = frozenset(own)
        self.words = frozenset(nav.words)
        self.titled = dict(nav.titled)
        self.page = page_path
        self.done: set[tuple[str, ...]] = set()
        self.refs: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        for path, anchor, text, href, lead in nav.refs:
            self.refs.setdefault((path, anchor), []).append((text, href, lead))

    def section(self) -> None:
        self.done = set()

    def __call__(self, text: str, cell: bool = False, cites: tuple = ()) -> str:
        if self.titled and not cell and "[" not in text and (href := self.titled.get(key_of(text))):
            return f"[{text}]({relative(href, self.page)})"  # an item of a list of articles
        for c in cites:
            text = self.source_links(text, self.refs.get((c.path, c.anchor), ()))
        if not self.names.targets:
            return text
        shut = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
        ids = cell and _RECORD_IDS.fullmatch(text) is not None
        out, pos = [], 0
        for start, end, key in self.names.spans(text):
            if (
                (key in self.done and not ids)  # a cell listing records by id links each, by its title
                or key in self.own
                or any(a < end and start < b for a, b in shut)
                or (cell and key in self.words)
            ):
                continue
            self.done.add(key)
            shown = self.shown.get(key, text[start:end]) if ids else text[start:end]
            out += [text[pos:start], f"[{shown}]({relative(self.names.targets[key].path, self.page)})"]
            pos = end
        return "".join(out) + text[pos:]

    def source_links(self, text: str, refs) -> str:
        """``text`` with the words its source linked ('see [here](…)') linked again, to where the
        source they lead to is shown in the wiki, outside a link: in the sentence that held the link
        (its words up to the link, ``lead``), not in every sentence of its section that uses the
        words ('seeds' was linked five times in one answer)."""
        if not refs:  # most sentences: their section links nothing
            return text
        plain = " ".join(plain_inline(text).split())
        for words, href, lead in refs:
            if lead and lead not in plain:
                continue
            shut = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
            whole = rf"(?<!\w){re.escape(words)}(?!\w)"  # 'here', never the end of 'there'
            at = next((m.start() for m in re.finditer(whole, text) if not _inside(m.start(), shut)), -1)
            if at >= 0:
                end = at + len(words)
                text = f"{text[:at]}[{words}]({relative(href, self.page)}){text[end:]}"
        return text


def _inside(at: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= at < b for a, b in spans)


def _line(prefix: str, s: Sentence, page_path: str, link=None) -> str:
    """One sentence on its own line, after its list marker, followed by its citations; text that
    would read as Markdown block syntax at the start of a line ('2) Grace period') is escaped."""
    text = s.text if prefix.startswith(">") and prefix != "> " else escape_block_start(s.text)
    if link is not None:
        text = link(text, cites=s.cites)
    return f"{prefix}{text} {_cite_links(s.cites, page_path)}"


LINKED_FROM = 8  # pages listed under 'Linked from', the closest first


def linked_from(n: int, close: int = LINKED_FROM) -> tuple[str, int]:
    """The heading of a page's 'Linked from' when ``n`` pages link to it, and how many it lists:
    all of them when they are few, else the closest ``LINKED_FROM`` (or the ``close`` fewer),
    and the heading says so ('Linked from (the closest 8 of 53 pages)')."""
    if n <= LINKED_FROM + 2:
        return "Linked from", n
    shown = min(LINKED_FROM, close)
    return f"Linked from (the closest {shown} of {n} pages)", shown


def closest(backlinks: tuple[tuple[str, str], ...], title: str) -> tuple[tuple[str, str], ...]:
    """Of a long 'Linked from', the pages closer than the rest: all but the entries whose title
    shares no word with the page's. 'Arugula', 'Baby Bok Choy' and 'Broccoli Microgreens' took
    the Grove 6's last three places by the alphabet alone, no closer than the 44 other plants
    suited to it. When nothing is closer, the first are listed as before."""
    own = set(key_of(title))
    close = tuple(x for x in backlinks if not x[0].startswith("wiki/entries/") or own & set(key_of(x[1])))
    return close or backlinks


def _nav_list(title: str, items: tuple[tuple[str, str], ...], page_path: str) -> list[str]:
    if not items:
        return []
    return [f"## {title}", "", *(f"- [{t}]({relative(h, page_path)})" for h, t in items), ""]


def render_body(draft: Draft, page_path: str, nav: Navigation | None = None) -> str:
    """Markdown for a draft, citations as relative links; one sentence per line for clean diffs.

    With ``nav``, the first mention of another page's subject in each section links to it, each
    entry is followed by the other places that name it, and the page ends with 'See also' and
    'Linked from'."""
    nav = nav or Navigation()
    link = _Linker(nav, page_path)
    mentions = dict(nav.mentions)
    entry = ""  # the layer-1 path of the entry being rendered (its facts cite it)
    in_lead = True  # the lead belongs to no entry, though it quotes one
    lines: list[str] = [f"# {draft.title}", ""]

    def close_entry() -> None:
        if entry and mentions.get(entry):
            refs = ", ".join(f"[{t}]({relative(h, page_path)})" for h, t in mentions[entry])
            lines.extend([f"Mentioned in: {refs}", ""])

    for b in draft.blocks:
        if b.kind == "heading":
            in_lead = False
            if b.level <= 2:  # a name links at its first mention under each top heading, not under
                close_entry()  # every sub-heading ('FarmBot OS' was linked 12 times on one guide)
                entry = ""
                link.section()
            lines += ["#" * b.level + " " + b.text, ""]
            continue
        if not entry and not in_lead:
            entry = next((c.path for s in b.sentences for c in s.cites), "") or next(
                (c.cites[0].path for r in b.rows for c in r if c.cites), ""
            )
        if b.kind == "para":
            lines += [_line("", s, page_path, link) for s in b.sentences] + [""]
        elif b.kind == "bullets":
            lines += [_line("- ", s, page_path, link) for s in b.sentences] + [""]
        elif b.kind == "steps":
            lines += [_line(f"{n}. ", s, page_path, link) for n, s in enumerate(b.sentences, 1)] + [""]
        elif b.kind == "about":
            lines += [f"*{escape_block_start(b.text.replace('*', ''))}*", ""]
        elif b.kind == "code":
            fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", b.text)), default=0))
            lines += [fence, b.text, fence, ""]
        elif b.kind == "note":
            # The lead-in shares the first quoted sentence's line, so every line carries a citation;
            # '{link}' in it stands for the link to what holds now.
            text = b.text
            for href, title in b.links:
                text = text.replace("{link}", f"[{title}]({relative(href, page_path)})")
            for n, s in enumerate(b.sentences):
                lead = f"{SUPERSEDED_MARK} {text} " if n == 0 else ""
                lines.append(_line(f"> {lead}", s, page_path))
            lines += [""]
        elif b.kind == "links":
            refs = [f"[{title}]({relative(href, page_path)})" for href, title in b.links]
            joined = (" › " if b.text == SOURCE_LABEL else ", ").join(refs)  # a trail: page › entry
            lines += ([f"{b.text}: {joined}"] if b.text else [f"- {r}" for r in refs]) + [""]
        elif b.kind == "table":
            lines.append("| " + " | ".join(escape_cell(h) for h in b.header) + " |")
            lines.append("|" + "---|" * len(b.header))
            for row in b.rows:
                cells = [
                    escape_cell(link(c.text, cell=True))
                    + (" " + _cite_links(c.cites, page_path) if c.cites else "")
                    for c in row
                ]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    close_entry()
    see_also = nav.see_also or tuple((p, PurePosixPath(p).stem.replace("-", " ")) for p in draft.see_also)
    # 'See also' offers what the page does not link already, and 'Linked from' what it does not
    # link at all: a page that links here and is linked back is shown once
    shown = _pages_linked(lines, page_path)
    see_also = tuple(x for x in see_also if x[0].partition("#")[0] not in shown)
    lines += _nav_list("See also", see_also, page_path)
    shown |= {p.partition("#")[0] for p, _ in see_also}
    backlinks = tuple(x for x in nav.backlinks if x[0] not in shown)
    close = closest(backlinks, draft.title) if len(backlinks) > LINKED_FROM + 2 else backlinks
    heading, listed = linked_from(len(backlinks), len(close))
    lines += _nav_list(heading, close[:listed], page_path)
    return "\n".join(lines).rstrip() + "\n"


def _pages_linked(lines: list[str], page_path: str) -> set[str]:
    """The wiki pages (KB-relative paths, no anchor) that ``lines`` link to: the plan's link graph
    ranks 'See also' without the pages a page links, but a table cell's links are found here."""
    return {
        resolve_href(page_path, m.group(2)).partition("#")[0]
        for line in lines
        if "](" in line
        for m in ANY_LINK.finditer(line)
        if LAYER1 not in m.group(2) and "://" not in m.group(2)
    }


CITE_LINK = re.compile(
    LINK_TEXT + r"\(((?:\.\./)*(?:[\w.-]+/)*?" + LAYER1 + r"/[^()#\s]+\.md)(?:#([^()\s]*))?\)"
)
ANY_LINK = re.compile(r"(?<!!)" + LINK_TEXT + r"\(([^()\s]+)\)")


def resolve_href(page_path: str, href: str) -> str:
    """A page-relative link target (percent-encoded where it must be) as a KB-root-relative path."""
    return _resolve(os.path.dirname(page_path), unquote(href) if "%" in href else href)


@lru_cache(maxsize=1 << 16)
def _resolve(folder: str, href: str) -> str:
    return PurePosixPath(os.path.normpath(os.path.join(folder, href))).as_posix()


def parse_citations(line: str, page_path: str) -> list[Citation]:
    if LAYER1 not in line:  # every citation links into layer 1: most lines hold none
        return []
    out = []
    for m in CITE_LINK.finditer(line):
        out.append(Citation(resolve_href(page_path, m.group(2)), m.group(3) or ""))
    return out


def strip_citations(line: str) -> str:
    return _SPACES.sub(" ", CITE_LINK.sub("", line) if LAYER1 in line else line).strip()


def cited_and_stripped(line: str, folder: str) -> tuple[list[str], str]:
    """The citations of a line of a page in ``folder`` (each as ``str`` of its ``Citation``, in
    order) and the line as ``strip_citations`` leaves it: one pass over the line where those two
    take two (the search index reads every line of every page this way)."""
    if LAYER1 not in line:
        return [], _SPACES.sub(" ", line).strip()
    refs: list[str] = []
    kept: list[str] = []
    at = 0
    for m in CITE_LINK.finditer(line):
        href, anchor = m.group(2), m.group(3)
        path = _resolve(folder, unquote(href) if "%" in href else href)
        refs.append(f"{path}#{anchor}" if anchor else path)
        kept.append(line[at : m.start()])
        at = m.end()
    kept.append(line[at:])
    return refs, _SPACES.sub(" ", "".join(kept)).strip()


_SPACES = re.compile(r"\s+")
