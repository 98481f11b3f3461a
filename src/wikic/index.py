"""``wiki/index.md`` (the agents' entry point) and the append-only ``wiki/log.md``.

One line per page: link, one-sentence summary, keywords. Lines are grouped by page type in a
fixed order and sorted by title. Past the token budget, ``index.md`` becomes a two-level index
that links per-type sub-indexes under ``wiki/index/``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .config import Fields, load_yaml
from .errors import ConfigError
from .fsutil import atomic_write, write_if_changed

TYPE_ORDER = ("device", "comparison", "guide", "topic")
TYPE_HEADINGS = {"device": "Devices", "comparison": "Comparisons", "guide": "Guides", "topic": "Topics"}
OVERRIDES = "schema/index-overrides.yaml"


@dataclass(frozen=True)
class Entry:
    path: str  # wiki/devices/x.md
    type: str
    title: str
    summary: str
    keywords: tuple[str, ...]


def estimate_tokens(text: str) -> int:
    """A conservative token estimate (about four characters per token)."""
    return (len(text) + 3) // 4


def load_overrides(root: Path) -> dict[str, dict]:
    """Reviewed index enhancements written by ``wikic tune-index``: {page path: {summary, keywords}}."""
    path = root / OVERRIDES
    if not path.exists():
        return {}
    data = load_yaml(path) or {}
    top = Fields(data, str(path))
    pages = top.get("pages", dict, {})
    top.done()
    out = {}
    for page, value in pages.items():
        f = Fields(value, f"{path}: pages.{page}")
        summary = f.get("summary", str, "")
        kws = f.get("keywords", list, [])
        f.get("questions", list, [])  # provenance only: the eval questions that motivated it
        f.done()
        if not all(isinstance(k, str) for k in kws):
            raise ConfigError(f"{path}: pages.{page}.keywords must be a list of strings")
        out[str(page)] = {"summary": summary, "keywords": kws}
    return out


def apply_overrides(entries: list[Entry], overrides: dict[str, dict]) -> list[Entry]:
    out = []
    for e in entries:
        o = overrides.get(e.path)
        if o:
            kws = tuple(dict.fromkeys([*e.keywords, *o["keywords"]]))
            e = Entry(e.path, e.type, e.title, o["summary"] or e.summary, kws)
        out.append(e)
    return out


def _line(e: Entry, from_dir: str) -> str:
    rel = os.path.relpath(e.path, from_dir)
    summary = " ".join(e.summary.split())
    kws = ", ".join(e.keywords)
    return f"- [{e.title}]({rel}) — {summary}" + (f" *Keywords:* {kws}" if kws else "")


def _ordered(entries: list[Entry]) -> list[Entry]:
    return sorted(
        entries,
        key=lambda e: (TYPE_ORDER.index(e.type) if e.type in TYPE_ORDER else 99, e.title.lower(), e.path),
    )


HEADER = (
    "# Wiki index\n\n"
    "Start here. Each line links one page, says what it covers and lists the words people search for. "
    "Every sentence in a page cites the source section that says it.\n"
)


def render_index(entries: list[Entry], budget: int) -> dict[str, str]:
    """{wiki-relative path: text} for index.md and, past the budget, its sub-indexes."""
    entries = _ordered(entries)
    by_type: dict[str, list[Entry]] = {}
    for e in entries:
        by_type.setdefault(e.type, []).append(e)
    flat = [HEADER]
    for t, items in by_type.items():
        flat.append(
            f"\n## {TYPE_HEADINGS.get(t, t.title())}\n\n" + "\n".join(_line(e, "wiki") for e in items) + "\n"
        )
    text = "".join(flat)
    if estimate_tokens(text) <= budget:
        return {"wiki/index.md": text}
    files: dict[str, str] = {}
    top = [
        HEADER,
        "\nThe index is split by page type to stay within its token budget; open the part you need.\n\n",
    ]
    for t, items in by_type.items():
        heading = TYPE_HEADINGS.get(t, t.title())
        chunks: list[list[Entry]] = [[]]
        for e in items:
            candidate = chunks[-1] + [e]
            body = "\n".join(_line(x, "wiki/index") for x in candidate)
            if chunks[-1] and estimate_tokens(body) > budget - 200:
                chunks.append([e])
            else:
                chunks[-1] = candidate
        for n, chunk in enumerate(chunks, 1):
            name = f"{t}s" + (f"-{n}" if len(chunks) > 1 else "")
            path = f"wiki/index/{name}.md"
            first, last = chunk[0].title, chunk[-1].title
            files[path] = (
                f"# {heading}" + (f" (part {n} of {len(chunks)})" if len(chunks) > 1 else "") + "\n\n"
                "[Back to the index](../index.md)\n\n"
                + "\n".join(_line(e, "wiki/index") for e in chunk)
                + "\n"
            )
            span = f"{first} … {last}" if len(chunk) > 1 else first
            top.append(
                f"- [{heading}" + (f" {n}" if len(chunks) > 1 else "") + f"](index/{name}.md) — "
                f"{len(chunk)} pages: {span}\n"
            )
    files["wiki/index.md"] = "".join(top)
    return files


def write_index(root: Path, files: dict[str, str]) -> list[str]:
    """Write index files that changed and delete sub-indexes no longer needed; returns changed paths."""
    changed = [p for p, text in sorted(files.items()) if write_if_changed(root / p, text)]
    sub = root / "wiki" / "index"
    if sub.is_dir():
        for p in sorted(sub.glob("*.md")):
            rel = p.relative_to(root).as_posix()
            if rel not in files:
                p.unlink()
                changed.append(rel)
    return changed


def build_date() -> str:
    """Today's date, or SOURCE_DATE_EPOCH's for reproducible builds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    ts = float(epoch) if epoch and epoch.isdigit() else time.time()
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d")


def log_entry(added: int, changed: int, removed: int, sources: list[str], extra: str = "") -> str:
    """One greppable entry: ``## [YYYY-MM-DD] compile | +a ~b -c pages | sources: …``."""
    names = ", ".join(sources) if sources else "none"
    entry = f"\n## [{build_date()}] compile | +{added} ~{changed} -{removed} pages | sources: {names}\n"
    if extra:
        entry += f"\n{extra.rstrip()}\n"
    return entry


def append_log(root: Path, entry: str) -> bool:
    """Append ``entry`` to ``wiki/log.md`` unless the log already ends with it (a run that died
    after logging); returns whether it was appended."""
    path = root / "wiki" / "log.md"
    try:
        old = path.read_text("utf-8")
    except FileNotFoundError:
        old = "# Compile log\n\nOne entry per compile that changed the wiki. Append-only.\n"
    if old.rstrip("\n").endswith(entry.rstrip("\n")):
        return False
    atomic_write(path, old.rstrip("\n") + "\n" + entry)
    return True
