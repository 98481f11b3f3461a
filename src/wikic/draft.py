"""What a librarian produces: a page draft made of cited sentences, tables and notes.

Every backend returns a ``Draft``; the compile stage verifies its citations and renders it to
Markdown. ``parse_citations`` reads them back from a rendered page (for check, trace and eval).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from .layer1 import LAYER1
from .markdown import escape_block_start


@dataclass(frozen=True, order=True)
class Citation:
    """A pointer to a layer-1 section: ``path`` relative to the KB root, GitHub ``anchor``."""

    path: str
    anchor: str = ""

    @property
    def label(self) -> str:
        key = PurePosixPath(self.path).relative_to(LAYER1).with_suffix("")
        return key.as_posix()

    def href(self, page_path: str) -> str:
        rel = os.path.relpath(self.path, os.path.dirname(page_path) or ".")
        return rel + (f"#{self.anchor}" if self.anchor else "")

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
    """``kind`` is heading | para | bullets | steps | table | note | code.

    heading: ``text``, ``level``; para/bullets/steps: ``sentences`` (steps are numbered); table:
    ``header`` and ``rows``; note: a superseded statement kept with its date, ``text`` is the
    lead-in and ``sentences`` the quoted older statement; code: a source's code block, verbatim
    in ``text`` (not prose, so not cited).
    """

    kind: str
    text: str = ""
    level: int = 2
    sentences: tuple[Sentence, ...] = ()
    header: tuple[str, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()


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
PROSE_KINDS = ("para", "bullets", "steps", "note")  # blocks made of cited sentences


def _cite_links(cites: tuple[Citation, ...], page_path: str) -> str:
    return " ".join(f"[{c.label}]({c.href(page_path)})" for c in sorted(set(cites)))


def escape_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _line(prefix: str, s: Sentence, page_path: str) -> str:
    """One sentence on its own line, after its list marker, followed by its citations; text that
    would read as Markdown block syntax at the start of a line ('2) Grace period') is escaped."""
    text = s.text if prefix.startswith(">") and prefix != "> " else escape_block_start(s.text)
    return f"{prefix}{text} {_cite_links(s.cites, page_path)}"


def render_body(draft: Draft, page_path: str) -> str:
    """Markdown for a draft, citations as relative links; one sentence per line for clean diffs."""
    lines: list[str] = [f"# {draft.title}", ""]
    for b in draft.blocks:
        if b.kind == "heading":
            lines += ["#" * b.level + " " + b.text, ""]
        elif b.kind == "para":
            lines += [_line("", s, page_path) for s in b.sentences] + [""]
        elif b.kind == "bullets":
            lines += [_line("- ", s, page_path) for s in b.sentences] + [""]
        elif b.kind == "steps":
            lines += [_line(f"{n}. ", s, page_path) for n, s in enumerate(b.sentences, 1)] + [""]
        elif b.kind == "code":
            fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", b.text)), default=0))
            lines += [fence, b.text, fence, ""]
        elif b.kind == "note":
            # The lead-in shares the first quoted sentence's line, so every line carries a citation.
            for n, s in enumerate(b.sentences):
                lead = f"{SUPERSEDED_MARK} {b.text} " if n == 0 else ""
                lines.append(_line(f"> {lead}", s, page_path))
            lines += [""]
        elif b.kind == "table":
            lines.append("| " + " | ".join(escape_cell(h) for h in b.header) + " |")
            lines.append("|" + "---|" * len(b.header))
            for row in b.rows:
                cells = [
                    escape_cell(c.text) + (" " + _cite_links(c.cites, page_path) if c.cites else "")
                    for c in row
                ]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    if draft.see_also:
        lines += ["## See also", ""]
        for target in draft.see_also:
            rel = os.path.relpath(target, os.path.dirname(page_path) or ".")
            lines.append(f"- [{PurePosixPath(target).stem.replace('-', ' ')}]({rel})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


CITE_LINK = re.compile(
    r"\[([^\]]*)\]\(((?:\.\./)*(?:[\w.-]+/)*?" + LAYER1 + r"/[^)#\s]+\.md)(?:#([^)\s]*))?\)"
)
ANY_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")


def resolve_href(page_path: str, href: str) -> str:
    """A page-relative link target as a KB-root-relative path."""
    joined = os.path.normpath(os.path.join(os.path.dirname(page_path), href))
    return PurePosixPath(joined).as_posix()


def parse_citations(line: str, page_path: str) -> list[Citation]:
    out = []
    for m in CITE_LINK.finditer(line):
        out.append(Citation(resolve_href(page_path, m.group(2)), m.group(3) or ""))
    return out


def strip_citations(line: str) -> str:
    return re.sub(r"\s+", " ", CITE_LINK.sub("", line)).strip()
