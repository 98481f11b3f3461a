"""Reading layer 1: Markdown files with YAML frontmatter, split into citable sections."""

from __future__ import annotations

from pathlib import Path

import frontmatter
import yaml

from .errors import KBError
from .fsutil import sha256_tag
from .markdown import split_sections
from .models import SourceDoc

LAYER1 = "layer1_sources"


def parse_doc(root: Path, path: Path, data: bytes | None = None) -> SourceDoc:
    """Parse one layer-1 file. ``source`` and ``id`` default to its folder and file stem."""
    rel = path.relative_to(root).as_posix()
    if data is None:
        data = path.read_bytes()
    try:
        post = frontmatter.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, ValueError) as exc:
        raise KBError(
            f"{rel}: cannot read frontmatter ({exc}); fix the YAML between the '---' lines"
        ) from None
    meta = {str(k): v for k, v in post.metadata.items()}
    parts = Path(rel).parts
    source = str(meta.get("source") or parts[1])
    key = Path(*parts[2:]).with_suffix("").as_posix()
    return SourceDoc(
        source=source,
        id=str(meta.get("id") or key),
        key=key,
        path=rel,
        title=str(meta.get("title") or key),
        meta=meta,
        body=post.content,
        sha256=sha256_tag(data),
        sections=tuple(split_sections(post.content)),
    )


def layer1_files(root: Path) -> list[Path]:
    """Every Markdown file under ``layer1_sources/``, skipping hidden files and folders inside it
    (the KB itself may well live under a hidden folder such as ``~/.kb/``)."""
    folder = root / LAYER1
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def require_sources(root: Path, action: str) -> None:
    """Refuse to ``action`` when layer 1 is empty but the wiki has pages: acting would empty the
    wiki, or answer from nothing, and a wrong folder or a failed transform is the likelier cause."""
    if layer1_files(root):
        return
    wiki = root / "wiki"
    pages = [p for p in wiki.rglob("*.md") if p.name not in ("index.md", "log.md")] if wiki.is_dir() else []
    if pages:
        raise KBError(
            f"{root / LAYER1}: no layer-1 sources, but wiki/ has {len(pages)} pages; not going to {action}. "
            "Run 'wikic transform' (or restore layer1_sources/), and check that --root is the KB folder"
        )


def read_layer1(root: Path) -> dict[str, bytes]:
    """The bytes of every layer-1 file by KB-relative path, in path order."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in layer1_files(root)}


def load_layer1(
    root: Path, files: dict[str, bytes] | None = None, unreadable: dict[str, str] | None = None
) -> list[SourceDoc]:
    """Every layer-1 document, in path order (from ``files`` when already read).

    With ``unreadable``, a file that cannot be parsed (broken frontmatter, not UTF-8) is skipped
    and its problem recorded there by path, so one bad hand-maintained file blocks nothing;
    without it, the first such file is an error."""
    if files is None:
        files = read_layer1(root)
    docs = []
    for rel, data in files.items():
        try:
            docs.append(parse_doc(root, root / rel, data))
        except KBError as exc:
            if unreadable is None:
                raise
            unreadable[rel] = str(exc)
    return docs
