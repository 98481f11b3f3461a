"""Measures of how much of layer 1 a compiled wiki keeps (shared by tests and bench/local_llm.py).

- ``cited_lines``: per page, the lines that carry a citation (sentences, list items, fact rows).
- ``sentence_coverage``: the share of layer-1 prose sentences of at least five words that reach a
  page line citing their source (the measure of the coverage issue).
"""

from __future__ import annotations

import re
from pathlib import Path

from wikic.draft import parse_citations, strip_citations
from wikic.layer1 import load_layer1
from wikic.librarian.extract import prose_units


def _pages(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted((root / "wiki").rglob("*.md")):
        rel = p.relative_to(root).as_posix()
        if p.name != "log.md" and not rel.startswith("wiki/index"):
            out[rel] = p.read_text("utf-8").split("\n---\n", 1)[-1]
    return out


def cited_lines(root: Path) -> dict[str, int]:
    return {
        path: sum(1 for line in text.split("\n") if "layer1_sources/" in line)
        for path, text in _pages(root).items()
    }


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w%.-]+", " ", text.lower()).split()).strip(" .")


def sentence_coverage(root: Path) -> tuple[int, int]:
    """(sentences that reach a page citing their source, all such sentences)."""
    said: dict[str, list[str]] = {}  # source path → normalised text of the lines citing it
    for path, text in _pages(root).items():
        for line in text.split("\n"):
            cites = parse_citations(line, path)
            if cites:
                plain = _norm(strip_citations(line))
                for c in {c.path for c in cites}:
                    said.setdefault(c, []).append(plain)
    reached = total = 0
    for doc in load_layer1(root):
        lines = said.get(doc.path, [])
        for section in doc.sections:
            for _, sentence in prose_units(section.text):
                if len(sentence.split()) < 5:
                    continue
                total += 1
                needle = _norm(sentence)
                reached += any(needle in line for line in lines)
    return reached, total
