"""A ``files`` source: a local folder of .md or .json files, each a record whose id is its path
relative to the folder. Links out of the folder are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from ..core.config import SourceConfig
from ..core.errors import ConfigError, SourceError
from ..core.models import Record
from .http import MAX_DEPTH, nesting
from .layer0 import SourceStore
from .report import FetchReport, Progress, now_iso


def read_file_record(path: Path) -> dict[str, Any]:
    """A local file as a record: JSON objects as they are, Markdown as frontmatter plus ``body``."""
    if path.suffix.lower() == ".json":
        data = json.loads(path.read_text("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("a .json file must hold one JSON object")
        return data
    post = frontmatter.loads(path.read_text("utf-8"))
    return {**{str(k): v for k, v in post.metadata.items()}, "body": post.content}


def fetch_files(
    cfg: SourceConfig, store: SourceStore, root: Path, report: FetchReport, progress: Progress | None = None
) -> set[str] | None:
    base = (root / cfg.path).resolve()
    if not base.is_dir():
        raise ConfigError(
            f"source '{cfg.name}': folder {base} does not exist; fix 'path' in schema/sources.yaml"
        )
    files = sorted(p for p in base.glob(cfg.glob) if p.is_file() and p.suffix.lower() in (".md", ".json"))
    fetched_at = now_iso()
    seen: set[str] = set()
    complete = True
    for n, path in enumerate(files, 1):
        rid = path.relative_to(base).as_posix()
        target = path.resolve()
        if base not in target.parents:  # a symlink out of the folder
            report.errors.append(
                str(SourceError(cfg.name, f"links to {target}, outside {base}; not read", record=rid))
            )
            complete = False
            continue
        try:
            data = json.loads(json.dumps(read_file_record(path), default=str))  # dates → strings
            if nesting(data) > MAX_DEPTH:
                raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
        except (ValueError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
            reason = "nested too deeply to parse" if isinstance(exc, RecursionError) else exc
            report.errors.append(
                str(SourceError(cfg.name, f"unreadable file ({reason}); skipped", record=rid))
            )
            complete = False
            continue
        seen.add(rid)
        try:  # a file inside the KB is recorded by its KB-relative path, so checkouts agree
            where = "file:" + path.relative_to(root.resolve()).as_posix()
        except ValueError:
            where = path.as_uri()
        result = store.put(Record(cfg.name, rid, data, where), fetched_at, nested=True)
        setattr(report, result.status, getattr(report, result.status) + 1)
        if progress and (n % 50 == 0 or n == len(files)):
            progress(cfg.name, n, len(files))
    return seen if complete else None
