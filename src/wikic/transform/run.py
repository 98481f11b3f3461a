"""Transform stage: current layer-0 snapshots → ``layer1_sources/<source>/<key>.md``.

Output is deterministic and idempotent: a file is written only when its bytes change.
Generated files carry ``generated_by: wikic``; files without it (hand-maintained pages) are
never written or deleted.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import yaml
from jinja2.sandbox import SandboxedEnvironment

from .. import __version__
from ..core.config import SourceConfig, SourcesConfig
from ..core.errors import SourceError
from ..core.facts import format_value, label
from ..core.fsutil import (
    atomic_write,
    canonical_json,
    kb_lock,
    linked_part,
    read_json_artifact,
    read_regular,
    refuse_folder_links,
    remove_stale_temps,
    sha256_tag,
    walk_files,
    write_json_artifact,
)
from ..core.markdown import github_slug, iter_headings, plain_inline, without_controls
from ..core.models import Snapshot
from ..fetch.http import dotted
from ..fetch.layer0 import SourceStore, layer0_sources
from .layer1 import LAYER1

SCHEMA_VERSION = 1
RENDERING = 2  # raised when the default rendering changes, so each record is rendered again
STATE = ".wikic/transform.json"
GENERATED_MARK = "generated_by: wikic"
RESERVED = ("title", "source", "id", "url", "updated_at", "generated_by", "layer0")
Progress = Callable[[str, int, int | None], None]


@dataclass
class TransformReport:
    source: str
    written: int = 0
    unchanged: int = 0
    deleted: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def is_short(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, (str, int, float, bool)) and len(str(v)) <= 80 for v in value)
    return isinstance(value, (int, float, bool)) or (
        isinstance(value, str) and "\n" not in value and len(value) <= 120
    )


_BLOCK = re.compile(r"^\s*(?:[-*+>#|]|\d+[.)]\s)")
_ENDED = re.compile(r"[.!?:;,)\]\"'»”’]$")


def paragraphs(text: str) -> str:
    """A record's text with a line break that ends no sentence kept as a paragraph break where
    the next line starts one: a sub-title line ('Green Griller Zucchini') or a sentence missing
    its full stop would otherwise run into the sentence below it in one paragraph. Text wrapped
    at a fixed width (three lines or more, each but the last 50-100 characters) is left as it is."""
    lines = text.split("\n")
    if len(lines) >= 3 and all(50 <= len(x) <= 100 for x in lines[:-1]):
        return text
    out = lines[:1]
    for before, line in zip(lines, lines[1:]):
        a, b = before.strip(), line.strip()
        if (
            a
            and b[:1].isupper()
            and not _ENDED.search(a)
            and not _BLOCK.match(before)
            and not _BLOCK.match(line)
        ):
            out.append("")
        out.append(line)
    return "\n".join(out)


def default_body(data: dict[str, Any], skip: set[str]) -> str:
    """A readable rendering of a record: short fields as a details list, long text as sections."""
    short, long = [], []
    for name in sorted(data):
        value = data[name]
        if name in skip or value in (None, "", []) or isinstance(value, dict):
            continue
        if is_short(value):
            short.append(f"- **{label(name)}:** {format_value(value)}")
        elif isinstance(value, str):
            long.append(f"## {label(name)}\n\n{paragraphs(value.strip())}")
    parts = [*long]
    if short:
        parts.insert(0, "## Details\n\n" + "\n".join(short))
    return "\n\n".join(parts)


def frontmatter_fields(data: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    """The record's scalar and flat-list fields, for frontmatter; reserved names get a ``record_`` prefix."""
    out = {}
    for name in sorted(data):
        value = data[name]
        if name in skip or isinstance(value, dict):
            continue
        if isinstance(value, list) and not all(isinstance(v, (str, int, float, bool)) for v in value):
            continue
        out[f"record_{name}" if name in RESERVED else name] = value
    return out


def fallback_title(record_id: str, body: object) -> str:
    """A file without a title field is titled by its first level-1 heading, else by its file name
    ('return-policy.md' → 'Return policy')."""
    if isinstance(body, str):
        for _, level, text in iter_headings(body):
            if level == 1:
                return plain_inline(text)
    stem = PurePosixPath(record_id).stem
    words = stem.replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize() if words else stem


class _NoLinkLoader(jinja2.FileSystemLoader):
    """Templates from ``schema/templates/``, never through a symbolic link (``check`` reports it)."""

    def get_source(self, environment: jinja2.Environment, template: str):  # type: ignore[override]
        for base in self.searchpath:
            if linked_part(Path(base), template):
                raise jinja2.TemplateNotFound(f"{template} (a symbolic link, which wikic never follows)")
        return super().get_source(environment, template)


class Renderer:
    """Renders snapshots of one source into layer-1 Markdown."""

    def __init__(self, root: Path, cfg: SourceConfig):
        self.cfg = cfg
        self.template = None
        if cfg.template:
            # sandboxed: a template can format a record, never reach Python (os, subprocess, files)
            env = SandboxedEnvironment(
                loader=_NoLinkLoader(root / "schema" / "templates"),
                undefined=jinja2.StrictUndefined,
                keep_trailing_newline=True,
                autoescape=False,
            )
            try:
                self.template = env.get_template(cfg.template)
            except jinja2.TemplateNotFound as exc:
                raise SourceError(cfg.name, f"template schema/templates/{exc.name} not found") from None
            except jinja2.TemplateSyntaxError as exc:
                raise SourceError(
                    cfg.name, f"template {cfg.template} line {exc.lineno}: {exc.message}; fix the template"
                ) from None

    def render(self, snap: Snapshot) -> str:
        cfg, data = self.cfg, snap.data
        title = dotted(data, cfg.title)
        if title in (None, "") and cfg.kind == "files":
            title = fallback_title(snap.id, dotted(data, cfg.body) if cfg.body else None)
        if title in (None, ""):
            raise SourceError(
                cfg.name, f"missing title field '{cfg.title}'; set 'title' in sources.yaml", record=snap.id
            )
        title = " ".join(without_controls(str(title)).split())
        skip = {cfg.title.split(".")[0]}
        if self.template is not None:
            try:
                # record fields first, so that a field named "id", "title" or "record" cannot clash
                body = self.template.render({**data, "record": data, "id": snap.id, "title": title})
            except jinja2.UndefinedError as exc:
                raise SourceError(
                    cfg.name, f"template {cfg.template}: {exc.message}", record=snap.id
                ) from None
            except Exception as exc:  # template code can raise anything; name the record and move on
                raise SourceError(
                    cfg.name, f"template {cfg.template} failed: {exc}", record=snap.id
                ) from None
        elif cfg.body:
            body = dotted(data, cfg.body)
            if not isinstance(body, str):
                raise SourceError(
                    cfg.name,
                    f"body field '{cfg.body}' is missing or not text; fix the record or 'body'",
                    record=snap.id,
                )
            skip.add(cfg.body.split(".")[0])
        else:
            body = default_body(data, skip | {cfg.id, cfg.updated_field, cfg.url_field})
        for cleanup in cfg.cleanups:
            body = cleanup.pattern.sub(cleanup.replace, body)
        body = _tidy(body)
        slugs = {github_slug(text) for _, _, text in iter_headings(body)}
        if github_slug(title) not in slugs:
            body = f"# {title}\n\n{body}" if body else f"# {title}\n"
        url = dotted(data, cfg.url_field) if cfg.url_field else None
        meta: dict[str, Any] = {
            "title": title,
            "source": cfg.name,
            "id": snap.id,
            "url": str(url) if url else snap.url,
        }
        updated = dotted(data, cfg.updated_field)
        if updated is not None:
            meta["updated_at"] = str(updated)
        meta.update(frontmatter_fields(data, skip | {cfg.updated_field}))
        meta["generated_by"] = "wikic"
        meta["layer0"] = {"path": snap.path, "sha256": snap.sha256}
        head = dump_frontmatter(meta)
        return f"---\n{head}---\n\n{body}\n"


# libyaml's emitter is ~6x faster than PyYAML's pure-Python one and emits the same bytes for the
# plain data frontmatter holds (tests/test_transform.py checks both on awkward values).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_frontmatter(meta: dict[str, Any], dumper: type = _DUMPER) -> str:
    return yaml.dump(meta, Dumper=dumper, sort_keys=False, allow_unicode=True, width=1000)


def _tidy(body: str) -> str:
    lines = [line.rstrip() for line in without_controls(body).replace("\r\n", "\n").split("\n")]
    out: list[str] = []
    for line in lines:
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return "\n".join(out).strip()


def _fingerprint(root: Path, cfg: SourceConfig) -> str:
    parts: list[Any] = [__version__, RENDERING, repr(cfg)]
    if cfg.template:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            parts.append(read_regular(root / "schema" / "templates" / cfg.template).decode("utf-8"))
    return sha256_tag(canonical_json([str(p) for p in parts]))


def is_generated(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.startswith("---") and GENERATED_MARK in head.split("\n---", 1)[0]


def transform(
    root: Path, config: SourcesConfig, *, progress: Progress | None = None
) -> list[TransformReport]:
    """Render every source's current snapshots; delete generated files of removed records."""
    reports = []
    with kb_lock(root):
        refuse_folder_links(root, LAYER1)
        state_path = root / STATE
        state = read_json_artifact(state_path, SCHEMA_VERSION) or {"sources": {}}
        names = [n for n in config.sources if n in set(layer0_sources(root))]
        for name in names:
            report = TransformReport(name)
            reports.append(report)
            started = time.perf_counter()
            try:
                state["sources"][name] = _transform_source(
                    root, config.sources[name], state["sources"].get(name), report, progress
                )
            except SourceError as exc:
                report.errors.append(str(exc))
            report.seconds = time.perf_counter() - started
        write_json_artifact(state_path, state, SCHEMA_VERSION)
    return reports


def _transform_source(
    root: Path, cfg: SourceConfig, old: dict | None, report: TransformReport, progress: Progress | None
) -> dict:
    fingerprint = _fingerprint(root, cfg)
    old_files: dict[str, dict] = (
        (old or {}).get("files", {}) if (old or {}).get("fingerprint") == fingerprint else {}
    )
    store = SourceStore(root, cfg.name)
    folder = root / LAYER1 / cfg.name
    remove_stale_temps(folder)
    renderer: Renderer | None = None
    snapshots = store.current()
    files: dict[str, dict] = {}
    for n, snap in enumerate(snapshots, 1):
        rel = f"{LAYER1}/{cfg.name}/{snap.key}.md"
        path = root / rel
        prev = old_files.get(rel)
        if prev and prev["snapshot"] == snap.sha256 and _file_hash(path) == prev["sha256"]:
            files[rel] = prev
            report.unchanged += 1
        else:
            if path.exists() and not is_generated(path):
                report.errors.append(
                    str(
                        SourceError(
                            cfg.name,
                            f"{rel} is hand-maintained (no 'generated_by: wikic'); not overwritten",
                            record=snap.id,
                        )
                    )
                )
                continue
            try:
                renderer = renderer or Renderer(root, cfg)
                text = renderer.render(store.load(snap)).encode("utf-8")
            except SourceError as exc:
                report.errors.append(str(exc))
                if prev or path.exists():  # keep the last good rendering
                    files[rel] = prev or {"id": snap.id, "snapshot": None, "sha256": _file_hash(path)}
                continue
            try:
                current = path.read_bytes()
            except FileNotFoundError:
                current = None
            if current != text:
                atomic_write(path, text)
                report.written += 1
            else:
                report.unchanged += 1
            files[rel] = {"id": snap.id, "snapshot": snap.sha256, "sha256": sha256_tag(text)}
        if progress and (n % 200 == 0 or n == len(snapshots)):
            progress(cfg.name, n, len(snapshots))
    # Generated files no current record maps to: removed records (or renamed keys).
    if folder.is_dir():
        for rel in walk_files(root, folder.relative_to(root).as_posix())[0]:
            path = root / rel
            if rel not in files and is_generated(path):
                path.unlink()
                report.deleted += 1
    return {"fingerprint": fingerprint, "files": files}


def _file_hash(path: Path) -> str | None:
    try:
        return sha256_tag(path.read_bytes())
    except FileNotFoundError:
        return None
