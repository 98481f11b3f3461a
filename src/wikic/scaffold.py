"""``wikic init``: scaffold a knowledge base from the packaged template."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import ConfigError
from .fsutil import atomic_write

LAYER_FOLDERS = ("layer0_raw", "layer1_sources", "wiki")
RENAMES = {"gitignore": ".gitignore"}


def _template_files(node, prefix: str = ""):
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name.startswith("__"):
            continue
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _template_files(child, rel + "/")
        else:
            yield rel, child.read_bytes()


def init_kb(path: Path) -> list[str]:
    """Create a KB at ``path``; refuses to overwrite an existing schema."""
    if (path / "schema" / "sources.yaml").exists():
        raise ConfigError(f"{path / 'schema' / 'sources.yaml'} already exists; not overwriting a KB")
    created = []
    for rel, data in _template_files(resources.files("wikic") / "kb_template"):
        name = "/".join(RENAMES.get(p, p) for p in rel.split("/"))
        atomic_write(path / name, data)
        created.append(name)
    for folder in LAYER_FOLDERS:
        (path / folder).mkdir(parents=True, exist_ok=True)
        keep = path / folder / ".gitkeep"
        if not any((path / folder).iterdir()):
            keep.touch()
            created.append(f"{folder}/.gitkeep")
    return created
