"""Reading layer 1: Markdown files with YAML frontmatter, split into citable sections."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..core.errors import KBError
from ..core.fsutil import read_regular, sha256_tag, walk_files

TYPE_CHECKING = False  # not typing's: a search imports this module
if TYPE_CHECKING:
    from ..core.models import SourceDoc

LAYER1 = "layer1_sources"


@lru_cache(maxsize=1)
def frontmatter_handler():
    """python-frontmatter's YAML handler on libyaml's safe loader where PyYAML has it (several
    times faster on a large layer 1; the same safe subset of YAML). Built on first use: lookups
    that only read the search index never import either library."""
    import frontmatter
    import yaml

    class LibYAML(frontmatter.YAMLHandler):
        def load(self, fm: str, **kwargs: object):
            kwargs.setdefault("Loader", getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            return super().load(fm, **kwargs)

    return LibYAML()


def parse_doc(root: Path, path: Path, data: bytes | None = None) -> SourceDoc:
    """Parse one layer-1 file. ``source`` and ``id`` default to its folder and file stem. A file
    outside a source folder, a symbolic link, text that is not UTF-8 and frontmatter that cannot
    be read (nested too deeply, aliases that expand past ``MAX_YAML_VALUES``) are ``KBError``s."""
    rel = path.relative_to(root).as_posix()
    parts = Path(rel).parts
    if len(parts) < 3:
        raise KBError(
            f"{rel}: a layer-1 file belongs in a source's folder ({LAYER1}/<source>/...); move it into one"
        )
    if data is None:
        try:
            data = read_regular(path)
        except OSError as exc:
            why = (
                "is a symbolic link, which wikic never follows"
                if path.is_symlink()
                else f"cannot be read ({exc})"
            )
            raise KBError(f"{rel}: {why}; replace it with the file itself") from None
    digest = sha256_tag(data)
    with _RECENT_LOCK:
        known = _RECENT.get(rel)
    if known is not None and known.sha256 == digest:
        return known
    doc = _parsed(rel, data, digest)
    with _RECENT_LOCK:
        _RECENT[rel] = doc
        _RECENT.move_to_end(rel)
        while len(_RECENT) > RECENT_DOCS:
            _RECENT.popitem(last=False)
    return doc


# The documents parsed lately, by path: a process that reads the same layer-1 files again (a
# compile then its check, a server, a test suite) parses each once while its bytes (their hash)
# stay the same. Documents are frozen and nothing changes their frontmatter; the bytes are not kept.
RECENT_DOCS = 1024
_RECENT: OrderedDict[str, SourceDoc] = OrderedDict()
_RECENT_LOCK = threading.Lock()


def _parsed(rel: str, data: bytes, digest: str) -> SourceDoc:
    """``rel``'s document from its bytes, whose hash is ``digest``."""
    import frontmatter
    import yaml

    from ..core.config import MAX_YAML_VALUES, too_large

    parts = Path(rel).parts
    try:
        post = frontmatter.loads(data.decode("utf-8"), handler=frontmatter_handler())
    except (UnicodeDecodeError, yaml.YAMLError, ValueError) as exc:
        raise KBError(
            f"{rel}: cannot read frontmatter ({exc}); fix the YAML between the '---' lines"
        ) from None
    except RecursionError:
        raise KBError(f"{rel}: frontmatter nested too deeply to read; flatten it") from None
    if too_large(post.metadata):
        raise KBError(
            f"{rel}: frontmatter aliases expand to more than {MAX_YAML_VALUES} values; write it out plainly"
        )
    from ..core.markdown import split_sections, without_controls  # here: a search imports this
    from ..core.models import SourceDoc  # module for require_sources and parses no document

    meta = {str(k): v for k, v in post.metadata.items()}
    source = str(meta.get("source") or parts[1])
    key = Path(*parts[2:]).with_suffix("").as_posix()
    return SourceDoc(
        source=source,
        id=str(meta.get("id") or key),
        key=key,
        path=rel,
        title=without_controls(str(meta.get("title") or key)),
        meta=meta,
        body=without_controls(post.content),
        sha256=digest,
        sections=tuple(split_sections(without_controls(post.content))),
    )


def layer1_paths(root: Path) -> list[str]:
    """KB-relative paths of every layer-1 Markdown file, in path order; hidden files and folders
    below ``layer1_sources/`` are skipped (a KB may itself live under a hidden folder), and so
    are symbolic links, which are never followed (``wikic check`` reports them)."""
    return walk_files(root, LAYER1)[0]


def layer1_files(root: Path) -> list[Path]:
    return [root / rel for rel in layer1_paths(root)]


def has_sources(root: Path) -> bool:
    """Whether layer 1 holds any Markdown file: stops at the first (a search asks on every call)."""
    for _, dirnames, filenames in os.walk(os.path.join(root, LAYER1)):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if any(f.endswith(".md") and not f.startswith(".") for f in filenames):
            return True
    return False


def require_sources(root: Path, action: str) -> None:
    """Refuse to ``action`` when layer 1 is empty but the wiki has pages: acting would empty the
    wiki, or answer from nothing, and a wrong folder or a failed transform is the likelier cause."""
    if has_sources(root):
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
    out = {}
    for rel in layer1_paths(root):
        with contextlib.suppress(OSError):  # replaced by a link since it was listed: not read
            out[rel] = read_regular(os.path.join(root, rel))
    return out


PARSED_IN_PROCESSES = 2000  # from this many files, ``load_layer1`` with processes parses them there


def load_layer1(
    root: Path,
    files: dict[str, bytes] | None = None,
    unreadable: dict[str, str] | None = None,
    jobs: int = 1,
    meanwhile: Callable[[], object] | None = None,
) -> list[SourceDoc]:
    """Every layer-1 document, in path order (from ``files`` when already read); ``jobs``
    processes parse them when there are many, while this one calls ``meanwhile`` (which is
    called first when they are parsed here).

    With ``unreadable``, a file that cannot be parsed (broken frontmatter, not UTF-8) is skipped
    and its problem recorded there by path, so one bad hand-maintained file blocks nothing;
    without it, the first such file is an error."""
    if files is None:
        files = read_layer1(root)
    items = list(files.items())
    if jobs > 1 and len(items) >= PARSED_IN_PROCESSES:
        from ..core.pool import each  # here: a search parses no document

        parsed = each(lambda item: _parsed_or_why(root, item), items, jobs, meanwhile=meanwhile)
    else:
        if meanwhile is not None:
            meanwhile()
        parsed = [_parsed_or_why(root, item) for item in items]
    docs = []
    for (rel, _), (doc, why) in zip(items, parsed):
        if doc is not None:
            docs.append(doc)
        elif unreadable is None:
            raise KBError(why)
        else:
            unreadable[rel] = why
    return docs


def _parsed_or_why(root: Path, item: tuple[str, bytes]) -> tuple[SourceDoc | None, str]:
    """(the document, '') or (None, why it cannot be parsed)."""
    rel, data = item
    try:
        return parse_doc(root, root / rel, data), ""
    except KBError as exc:
        return None, str(exc)
