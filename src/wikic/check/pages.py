"""Wiki pages as lint reads them: frontmatter, links, and the statements that need a citation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from ..compile.draft import ANY_LINK, CITE_LINK, SUPERSEDED_MARK, Citation, parse_citations, resolve_href
from ..core.config import MAX_YAML_VALUES, too_large
from ..core.errors import KBError
from ..core.fsutil import read_regular, sha256_tag, walk_files
from ..core.markdown import anchors, code_lines, github_slug, heading, plain_inline

WIKI = "wiki"


@dataclass(frozen=True)
class Statement:
    """Text that must carry a citation: a sentence (or the text before a citation run) or a fact cell.

    ``line`` is 1-based within the page file. ``in_note`` marks the quoted statement of a
    ``> **Superseded**`` note, the legitimate place to cite an older version.
    """

    line: int
    text: str
    cites: tuple[Citation, ...]
    kind: str = "sentence"  # sentence | cell | about (a page's description under its title)
    in_note: bool = False
    label: str = ""  # cell: "<row label> / <column>"
    raw: str = ""  # cell: as written, links and all


@dataclass(frozen=True)
class Link:
    line: int
    href: str
    target: str  # KB-root-relative path ('' for a same-page anchor)
    anchor: str
    is_citation: bool


class _Kind:
    """What a page is, from its path and frontmatter."""

    path: str
    meta: dict[str, Any]

    @property
    def managed(self) -> bool:
        return isinstance(self.meta.get("wikic"), dict)

    @property
    def is_index(self) -> bool:
        return self.path == f"{WIKI}/index.md" or self.path.startswith(f"{WIKI}/index/")

    @property
    def is_special(self) -> bool:
        return self.is_index or self.path == f"{WIKI}/log.md"


@dataclass(frozen=True)
class PageHead(_Kind):
    """A page as the rules over the whole wiki keep it: path, frontmatter, hash and heading
    anchors, not its text (a wiki of thousands of pages is read one page at a time)."""

    path: str
    meta: dict[str, Any]
    sha256: str
    anchors: frozenset[str]


@dataclass
class WikiPage(_Kind):
    path: str
    meta: dict[str, Any]
    lines: list[str]  # the whole file, split on '\n'
    body_start: int  # 0-based index of the first body line
    sha256: str = ""  # of the file's bytes

    @property
    def body(self) -> str:
        return "\n".join(self.lines[self.body_start :])

    @cached_property
    def anchors(self) -> set[str]:
        return anchors(self.body)

    @cached_property
    def links(self) -> list[Link]:
        return list(_links(self))

    @cached_property
    def statements(self) -> list[Statement]:
        return [] if self.is_special else list(_statements(self))

    @property
    def outbound(self) -> set[str]:
        """The other wiki pages this page links to (citations aside)."""
        return {
            link.target
            for link in self.links
            if link.target
            and link.target != self.path
            and link.target.startswith(WIKI + "/")
            and not link.is_citation
        }

    def head(self) -> PageHead:
        return PageHead(self.path, self.meta, self.sha256, frozenset(self.anchors))


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_page(root: Path, path: Path, known: PageHead | None = None) -> WikiPage:
    """The page at ``path``; with ``known``, the head read of it before, whose frontmatter and
    anchors are taken as they are while the page's bytes are still the ones it was read from."""
    rel = path.relative_to(root).as_posix()
    try:
        data = read_regular(path)
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    except (OSError, UnicodeDecodeError) as exc:
        raise KBError(f"{rel}: cannot be read ({exc}); restore it with 'wikic compile' or from git") from None
    digest = sha256_tag(data)
    same = known is not None and known.sha256 == digest
    lines = text.split("\n")
    meta: dict[str, Any] = {}
    start = 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                meta = known.meta if same else _frontmatter(rel, lines[1:i])  # type: ignore[union-attr]
                start = i + 1
                break
    page = WikiPage(rel, meta, lines, start, digest)
    if same:
        page.anchors = set(known.anchors)  # type: ignore[union-attr]
    return page


def _frontmatter(rel: str, lines: list[str]) -> dict[str, Any]:
    try:
        loaded = yaml.load("\n".join(lines), Loader=_LOADER)  # noqa: S506 - safe loader
    except yaml.YAMLError as exc:
        raise KBError(f"{rel}: cannot read frontmatter ({exc}); fix the YAML") from None
    except RecursionError:
        raise KBError(f"{rel}: frontmatter nested too deeply to read; fix the YAML") from None
    if too_large(loaded):
        raise KBError(f"{rel}: frontmatter aliases expand past {MAX_YAML_VALUES} values; fix the YAML")
    return loaded if isinstance(loaded, dict) else {}


def wiki_pages(root: Path) -> list[WikiPage]:
    """Every page under ``wiki/``, hidden files and symbolic links aside (``symlink`` reports those)."""
    return [read_page(root, root / rel) for rel in walk_files(root, WIKI)[0]]


def page_heads(root: Path) -> list[PageHead]:
    """``wiki_pages`` without their text: each page is read, and let go before the next."""
    return [read_page(root, root / rel).head() for rel in walk_files(root, WIKI)[0]]


_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CODE_SPAN = re.compile(r"`[^`]*`")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_NOTE_LEAD = "> " + SUPERSEDED_MARK


def note_statement(after_mark: str) -> str:
    """The quoted statement of a Superseded note line, after its lead-in ('(earlier version,
    updated …): ', '(stated …; now 21 days, see [App](…)): '): the text after the first ': '
    outside a link."""
    i = 0
    while i < len(after_mark):
        m = ANY_LINK.match(after_mark, i)
        if m:
            i = m.end()
            continue
        if after_mark.startswith(": ", i):
            return after_mark[i + 2 :]
        i += 1
    return after_mark


def _body_lines(page: WikiPage) -> Iterator[tuple[int, str]]:
    """(1-based file line, text) of body lines outside code fences."""
    body = page.lines[page.body_start :]
    for i, line, code in code_lines(body):
        if not code:
            yield page.body_start + i + 1, line


def _links(page: WikiPage) -> Iterator[Link]:
    for n, line in _body_lines(page):
        for m in ANY_LINK.finditer(_CODE_SPAN.sub("", line)):
            href = m.group(2)
            if _EXTERNAL.match(href):
                continue
            target, _, anchor = href.partition("#")
            path = resolve_href(page.path, target) if target else ""
            is_cite = bool(CITE_LINK.fullmatch(m.group(0)))
            yield Link(n, href, path, unquote(anchor), is_cite)


def split_cells(row: str) -> list[str]:
    """Cells of a Markdown table row; '\\|' is a literal bar inside a cell."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def chunks(text: str, page_path: str) -> list[tuple[str, tuple[Citation, ...]]]:
    """Split a line into (text, citations) runs: each citation run covers the text before it.

    Text after the last citation that is more than punctuation comes back with no citations.
    """
    out: list[tuple[str, list[Citation]]] = []
    pos = 0
    for m in CITE_LINK.finditer(text):
        segment = text[pos : m.start()]
        cite = parse_citations(m.group(0), page_path)
        if segment.strip(" \t,;") or not out:
            out.append((segment, cite))
        else:
            out[-1][1].extend(cite)
        pos = m.end()
    tail = text[pos:]
    if re.search(r"[^\W_]", plain_inline(tail)):
        out.append((tail, []))
    return [(" ".join(plain_inline(t).split()), tuple(c)) for t, c in out if t.strip() or c]


NAV_SECTIONS = ("see-also", "linked-from")  # sections of links between pages, not statements
_NAV_LABEL = re.compile(r"^[A-Z][a-z]+(?: [a-z]+){0,2}:\s")  # 'Mentioned in: ', before a list of links


def _is_nav(text: str) -> bool:
    """A line that is nothing but links to wiki pages (a 'See also' item, or 'Mentioned in: ' and
    links)."""
    links = ANY_LINK.findall(text)
    if not links or CITE_LINK.search(text):
        return False
    rest = ANY_LINK.sub("", _NAV_LABEL.sub("", _LIST_MARK.sub("", text), count=1))
    return not re.search(r"[^\W_]", rest)


_ABOUT = re.compile(r"^\*[^*\s](?:.*[^*\s])?\*$")  # '*What to do before a trip …*', alone on its line


def _statements(page: WikiPage) -> Iterator[Statement]:
    see_also_level = 0  # inside a 'See also' section of this heading level
    in_note = False
    header: list[str] = []
    prev_table = False
    in_lead = False  # under the page's title, before its first heading: where its about line is
    lines = list(_body_lines(page))
    for idx, (n, line) in enumerate(lines):
        stripped = line.strip()
        if in_lead and _ABOUT.match(stripped) and not CITE_LINK.search(stripped):
            in_lead = False  # one about line: after the title, or after the overview that opens a topic
            yield Statement(n, " ".join(plain_inline(stripped).split()), (), "about")
            continue
        h = heading(line)
        in_lead = bool(h and h[0] == 1) or (in_lead and not h)
        if h:
            level = h[0]
            if see_also_level and level <= see_also_level:
                see_also_level = 0
            slug = github_slug(h[1])  # 'linked-from-the-closest-8-of-53-pages' is one too
            if slug in NAV_SECTIONS or slug.startswith(tuple(f"{s}-" for s in NAV_SECTIONS)):
                see_also_level = level
            in_note = prev_table = False
            continue
        if not stripped:
            in_note = prev_table = False
            continue
        if see_also_level and _is_nav(stripped):
            continue  # a 'See also' or 'Linked from' entry; anything else there is a statement
        if stripped.startswith(_NOTE_LEAD):
            in_note = True  # the lead-in ("(earlier version, updated …):") needs no citation
            stripped = "> " + note_statement(stripped[len(_NOTE_LEAD) :])
        quoted = stripped.startswith(">")
        if quoted:
            stripped = stripped.lstrip(">").strip()
            if not stripped:
                continue
        if stripped.startswith("|"):
            nxt = lines[idx + 1][1] if idx + 1 < len(lines) else ""
            if _TABLE_SEP.match(stripped):
                continue
            if not prev_table and _TABLE_SEP.match(nxt.strip()):
                header, prev_table = split_cells(stripped), True
                continue
            prev_table = True
            cells = split_cells(stripped)
            row_label = plain_inline(cells[0]) if cells else ""
            for ci, cell in enumerate(cells[1:], 1):
                parts = chunks(cell, page.path)
                text = " ".join(t for t, _ in parts)
                cites = tuple(c for _, cs in parts for c in cs)
                if not text or text in ("—", "-", "–", "n/a"):
                    continue
                column = header[ci] if ci < len(header) else f"column {ci + 1}"
                label = f"{row_label} / {column}"
                yield Statement(n, text, cites, "cell", in_note and quoted, label, cell)
            continue
        prev_table = False
        if stripped.startswith(("<!--", "<")) or _is_nav(stripped):
            continue
        body = _LIST_MARK.sub("", stripped)
        for text, cites in chunks(body, page.path):
            if text or cites:
                yield Statement(n, text, cites, "sentence", in_note and quoted)


# ---------------------------------------------------------------------------------------------
# The gathered state every rule reads
