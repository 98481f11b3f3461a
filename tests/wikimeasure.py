"""Measures of how much of layer 1 a compiled wiki keeps (shared by tests and bench/local_llm.py).

- ``cited_lines``: per page, the lines that carry a citation (sentences, list items, fact rows).
- ``sentence_coverage``: the layer-1 sentences that reach a page line citing their source, counted
  by ``wikic.coverage`` (what ``compile`` and ``check`` report).
"""

from __future__ import annotations

from pathlib import Path

from wikic.compile.coverage import cited_texts, lines_of, measure
from wikic.transform.layer1 import load_layer1


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


def sentence_coverage(root: Path) -> tuple[int, int]:
    """(sentences that reach a page citing their source, all such sentences), as ``wikic.coverage``
    counts them from the pages on disk."""
    pairs = [pair for rel, body in _pages(root).items() for pair in lines_of(rel, body)]
    total = measure(load_layer1(root), cited_texts(pairs), {}).total()
    return total.sentences_placed, total.sentences
