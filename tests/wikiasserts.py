"""Assertions over a compiled wiki shared by the compile tests (example KB and FarmBot)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from wikic.compile.draft import parse_citations
from wikic.core.markdown import anchors, code_lines
from wikic.transform.layer1 import load_layer1

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def pages(root: Path) -> dict[str, str]:
    """Every wiki Markdown file but the log, as {path: text}."""
    return {
        p.relative_to(root).as_posix(): p.read_text("utf-8")
        for p in sorted((root / "wiki").rglob("*.md"))
        if p.name != "log.md"
    }


def front_matter(text: str) -> dict:
    """A page's frontmatter, read with libyaml as the product reads it (the tests read thousands)."""
    return yaml.load(text.split("---\n")[1], Loader=LOADER)  # noqa: S506 - a safe loader


def body_lines(text: str) -> list[str]:
    return text.split("\n---\n", 1)[1].split("\n")


def page_types(root: Path) -> set[str]:
    return {front_matter(t)["type"] for p, t in pages(root).items() if not p.startswith("wiki/index")}


_PAGE_LINK = re.compile(r"\[[^\]]*\]\((?![^)]*layer1_sources)[^)]*\)")


def _is_navigation(line: str) -> bool:
    """A line of links to other wiki pages, perhaps after a short label ('Read it whole: …')."""
    if "layer1_sources" in line or not _PAGE_LINK.search(line):
        return False
    rest = re.sub(r"^(?:- )?(?:[A-Z][a-z]+(?: [a-z]+){0,2}:)?", "", _PAGE_LINK.sub("", line))
    return not re.search(r"[^\W_]", rest)


def assert_every_fact_cited(root: Path) -> int:
    """Every prose line and every fact cell cites an existing layer-1 file and anchor; returns the
    number of citations checked."""
    docs = {d.path: d for d in load_layer1(root)}
    doc_anchors = {p: anchors(d.body) for p, d in docs.items()}
    about = {s.path: s.about for s in planned(root)}
    checked = 0
    for path, text in pages(root).items():
        if path.startswith("wiki/index"):
            continue
        header = True
        for _, line, code in code_lines(body_lines(text)):
            if code:
                continue  # a source's code block, shown verbatim: not prose
            stripped = line.strip()
            if not stripped or stripped.startswith("#") or re.match(r"^\|?-{3}", stripped):
                header = not stripped.startswith("|") if not stripped else header
                continue
            if _is_navigation(stripped):
                continue  # links between pages: "See also", "Linked from", "Mentioned in: …"
            if about.get(path) and stripped == f"*{about[path]}*":
                continue  # what the page is, in the plan's words (a guide's purpose, a contents line)
            if stripped.startswith("|"):
                cells = stripped.strip("|").split(" | ")
                if header:  # the first row of a table is its header
                    header = False
                    continue
                cells = cells[1:]  # row label
            else:
                cells = [stripped]
            for cell in cells:
                if cell.strip() in ("—", "-", "–", "n/a", ""):
                    continue
                cites = parse_citations(cell, path)
                assert cites, f"{path}: uncited: {cell!r}"
                for c in cites:
                    assert c.path in docs, f"{path}: cites missing file {c.path}"
                    assert c.anchor in doc_anchors[c.path], f"{path}: cites missing anchor {c}"
                    checked += 1
    return checked


def assert_reachable_from_index(root: Path) -> None:
    found = pages(root)
    reachable: set[str] = set()
    todo = ["wiki/index.md"]
    while todo:
        current = todo.pop()
        if current in reachable:
            continue
        reachable.add(current)
        if current.startswith("wiki/index"):
            for m in re.findall(r"\]\(([^)#]+\.md)\)", found[current]):
                todo.append(os.path.normpath(os.path.join(os.path.dirname(current), m)))
    for path in found:
        assert path in reachable, f"{path} is not reachable from index.md"


def planned(root: Path) -> list:
    """The page specs the planner makes for a KB (what a full compile writes)."""
    from wikic.compile.pageplan import plan
    from wikic.compile.schema import load_wiki_schema

    return plan(load_layer1(root), load_wiki_schema(root)).pages
