"""``wikic init``: scaffold a knowledge base from the packaged template, and edit the top-level
blocks of a commented YAML schema file without touching the rest of it."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ..core.errors import ConfigError
from ..core.fsutil import atomic_write

LAYER_FOLDERS = ("layer0_raw", "layer1_sources", "wiki")
RENAMES = {"gitignore": ".gitignore"}
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")


def _template_files(node, prefix: str = ""):
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name.startswith("__"):
            continue
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _template_files(child, rel + "/")
        else:
            yield rel, child.read_bytes()


def template_text(rel: str) -> str:
    """A file of the packaged KB template, e.g. ``schema/wiki.yaml``."""
    return (resources.files("wikic.onboard") / "kb_template" / rel).read_text("utf-8")


def require_folder(path: Path) -> None:
    """A ConfigError unless ``path`` is a folder or does not exist yet (nor does a file in its way)."""
    for p in (path, *path.parents):
        if p.exists() and not p.is_dir():
            raise ConfigError(f"{p}: exists and is not a folder; choose another path for the knowledge base")
        if p.exists():
            return


def init_kb(path: Path, overrides: dict[str, str] | None = None) -> list[str]:
    """Create a KB at ``path`` (``overrides`` replace template files by their KB-relative path);
    refuses to overwrite an existing schema."""
    require_folder(path)
    if (path / "schema" / "sources.yaml").exists():
        raise ConfigError(f"{path / 'schema' / 'sources.yaml'} already exists; not overwriting a KB")
    overrides = overrides or {}
    created = []
    for rel, data in _template_files(resources.files("wikic.onboard") / "kb_template"):
        name = "/".join(RENAMES.get(p, p) for p in rel.split("/"))
        atomic_write(path / name, overrides.get(name, data))
        created.append(name)
    for folder in LAYER_FOLDERS:
        (path / folder).mkdir(parents=True, exist_ok=True)
        keep = path / folder / ".gitkeep"
        if not any((path / folder).iterdir()):
            keep.touch()
            created.append(f"{folder}/.gitkeep")
    return created


def top_level_blocks(text: str) -> list[tuple[str, str]]:
    """A YAML file as (top-level key, text) blocks in order; '' keys hold text before the first key.
    Comment lines right above a key belong to its block."""
    blocks: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines(keepends=True):
        m = _TOP_KEY.match(line)
        if not m:
            blocks[-1][1].append(line)
            continue
        previous = blocks[-1][1]
        cut = len(previous)
        while cut > 0 and previous[cut - 1].startswith("#"):
            cut -= 1
        comments = previous[cut:]
        del previous[cut:]
        blocks.append((m.group(1), [*comments, line]))
    return [(key, "".join(lines)) for key, lines in blocks if key or lines]


def replace_block(text: str, key: str, block: str) -> str:
    """``text`` with the top-level ``key`` block replaced by ``block`` (appended when absent)."""
    blocks = top_level_blocks(text)
    if not block.endswith("\n"):
        block += "\n"
    if any(k == key for k, _ in blocks):
        # the blank lines that ended the old block still separate it from the next one
        return "".join(
            block + "\n" * (len(b) - len(b.rstrip("\n")) - 1) if k == key else b for k, b in blocks
        )
    joined = "".join(b for _, b in blocks)
    return joined + ("" if joined.endswith("\n") or not joined else "\n") + block
