"""Which files of a knowledge base the search index covers, and its kinds of chunk (``chunks.py``
makes the chunks): apart from the chunks, because a search lists the files on every call and never
makes a chunk of a settled index."""

from __future__ import annotations

from pathlib import Path

from ...core.fsutil import walk_files
from ...transform.layer1 import LAYER1

TABLES = ("page", "source", "index", "doc")  # the kinds of chunk, one FTS5 table each
WIKI_KINDS = ("page", "index")  # the kinds of file ``kb_files`` finds in the wiki (layer 1's: "source")


def is_index_file(rel: str) -> bool:
    return rel == "wiki/index.md" or rel.startswith("wiki/index/")


def kb_files(root: Path) -> dict[str, str]:
    """{path: kind} of every file the search index covers."""
    out = dict.fromkeys(markdown_files(root, LAYER1), "source")
    for rel in markdown_files(root, "wiki"):
        if rel != "wiki/log.md":
            out[rel] = "index" if is_index_file(rel) else "page"
    return out


def markdown_files(root: Path, folder: str) -> list[str]:
    """The ``.md`` files under ``root/folder`` as sorted root-relative paths, hidden files and
    folders and symbolic links aside (one ``scandir`` per folder: a search runs this on every call)."""
    return walk_files(root, folder)[0]
