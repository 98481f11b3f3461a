"""``wiki/index.md`` (the agents' entry point) and the append-only ``wiki/log.md``.

One line per page: link, one-sentence summary, keywords. Lines are grouped by page type in a
fixed order and sorted by title. Past the token budget, ``index.md`` becomes a two-level index
that links per-type sub-indexes under ``wiki/index/``.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..core.config import Fields, load_yaml
from ..core.errors import ConfigError
from ..core.fsutil import atomic_write, write_if_changed
from ..core.markdown import github_slug
from ..core.words import listing
from .librarian.extract import denied

TYPE_ORDER = ("hub", "device", "comparison", "guide", "topic", "directory", "entity", "glossary", "changes")
TYPE_HEADINGS = {
    "hub": "Overviews",
    "device": "Devices",
    "comparison": "Comparisons",
    "guide": "Guides",
    "topic": "Topics",
    "directory": "Directories",
    "entity": "Entries",
    "glossary": "Glossary",
    "changes": "What changed",
}
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
    return tokens_in(len(text))


def tokens_in(characters: int) -> int:
    """``estimate_tokens`` of a text of this many characters."""
    return (characters + 3) // 4


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
    "# Wiki index\n\n{covers}"
    "Start here. Each line links one page, says what it covers and lists the words people search for. "
    "Every sentence in a page cites the source section that says it.\n"
)


SUMMARY_CHARS = 160
KEYWORDS = 8
_CLEAN_KEYWORD = re.compile(r"^[a-z][a-z0-9.+-]*(?: [a-z0-9][a-z0-9.+-]*){0,3}$")


def clean_entry(e: Entry) -> Entry:
    """An index line within its limits whatever wrote it: a one-sentence summary of at most 160
    characters that does not repeat the title it follows ('Algae — Algae: Green water? …' reads
    'Algae — Green water? …'), and at most 8 keywords of letters and digits (no punctuation
    fragments, nothing on the deny list)."""
    summary = " ".join(e.summary.split())
    if summary.casefold().startswith(e.title.casefold() + ": ") and len(summary) > len(e.title) + 2:
        summary = summary[len(e.title) + 2 :]
    if len(summary) > SUMMARY_CHARS:
        cut = summary[: SUMMARY_CHARS - 1]
        summary = cut[: cut.rfind(" ")].rstrip(" ,;:") + "…" if " " in cut else cut + "…"
    kws = []
    for k in e.keywords:
        k = " ".join(str(k).lower().split())
        if _CLEAN_KEYWORD.match(k) and not denied(k) and k not in kws:
            kws.append(k)
    return Entry(e.path, e.type, e.title, summary, tuple(kws[:KEYWORDS]))


def _section(t: str, items: list[Entry], from_dir: str) -> str:
    return f"\n## {TYPE_HEADINGS.get(t, t.title())}\n\n" + "\n".join(_line(e, from_dir) for e in items) + "\n"


def render_index(entries: list[Entry], budget: int, sources: dict[str, int] | None = None) -> dict[str, str]:
    """{wiki-relative path: text} for index.md and, past the budget, its sub-indexes; ``sources``
    (documents per layer-1 source) says what the wiki is compiled from.

    Past the budget, the largest groups move to sub-indexes under ``wiki/index/`` (split into
    parts that each fit the budget) until index.md fits: the small groups (overviews, devices,
    guides) stay on the first page an agent reads."""
    entries = _ordered([clean_entry(e) for e in entries])
    by_type: dict[str, list[Entry]] = {}
    for e in entries:
        by_type.setdefault(e.type, []).append(e)
    header = HEADER.format(covers=covers(entries)) + compiled_from(sources or {})
    text = header + "".join(_section(t, items, "wiki") for t, items in by_type.items())
    if estimate_tokens(text) <= budget:
        return {"wiki/index.md": text}
    files: dict[str, str] = {}
    split: dict[str, list[str]] = {}  # type → lines linking its sub-index parts
    parts: dict[str, list[list[Entry]]] = {}
    for t in sorted(by_type, key=lambda t: -estimate_tokens(_section(t, by_type[t], "wiki"))):
        if estimate_tokens(_top(header, by_type, split)) <= budget:
            break
        parts[t] = _parts(by_type[t], budget)
        files.update(_sub_index_files(t, parts[t]))
        split[t] = _sub_index_lines(t, parts[t])
    # then, smallest group first, each page of a split group by name and link, as the budget allows
    for t in sorted(split, key=lambda t: len(by_type[t])):
        linked = _sub_index_lines(t, parts[t], linked=True)
        if estimate_tokens(_top(header, by_type, {**split, t: linked})) <= budget:
            split[t] = linked
    files["wiki/index.md"] = _top(header, by_type, split)
    return files


def source_counts(paths: list[str]) -> dict[str, int]:
    """Documents per layer-1 source folder ('layer1_sources/faq/…' counts for faq), by name."""
    return dict(sorted(Counter(p.split("/")[1] for p in paths if p.count("/") >= 2).items()))


# what the wiki holds besides its devices, and what one page of each kind is called
KINDS = {
    "guide": ("guide", "guides"),
    "comparison": ("comparison", "comparisons"),
    "topic": ("topic page", "topic pages"),
    "directory": ("directory", "directories"),
    "entity": ("entry", "entries"),
}
DEVICES_NAMED = 8


def covers(entries: list[Entry]) -> str:
    """What the wiki is about, first: its devices by name and how many pages of each kind it holds
    ('This wiki covers the Sprout 3, Grove 6 and Canopy 12: a page for each, 4 guides, …'). The
    index opened with how to read it, and three readers asked what the wiki is about."""
    counts = Counter(e.type for e in entries)
    held = [f"{n} {KINDS[t][n != 1]}" for t in KINDS if (n := counts.get(t))]
    devices = [e.title for e in entries if e.type == "device"]
    if devices:
        each = "a page for each" if len(devices) > 1 else "a page of its own"
        return f"This wiki covers the {listing(devices, DEVICES_NAMED)}: " + listing([each, *held]) + ".\n\n"
    return f"This wiki holds {listing(held)}.\n\n" if held else ""


def compiled_from(sources: dict[str, int]) -> str:
    """What the wiki is compiled from: 'Compiled from 126 source documents: faq (47), plants (53) …'."""
    if not sources:
        return ""
    listed = ", ".join(f"{name} ({n})" for name, n in sources.items())
    total = sum(sources.values())
    return f"\nCompiled from {total} source document{'s' * (total != 1)}: {listed}.\n"


def _top(header: str, by_type: dict[str, list[Entry]], split: dict[str, list[str]]) -> str:
    sections = ("".join(split[x]) if x in split else _section(x, by_type[x], "wiki") for x in by_type)
    return header + SPLIT_NOTE + "".join(sections)


SPLIT_NOTE = "\nThe larger groups have index pages of their own: their lines below say what each lists.\n"


def _parts(items: list[Entry], budget: int) -> list[list[Entry]]:
    """A group's entries cut into sub-index parts that each fit the budget."""
    chunks: list[list[Entry]] = [[]]
    length = 0  # of the last part's lines joined by line breaks, as ``estimate_tokens`` reads them
    for e in items:
        line = len(_line(e, "wiki/index"))
        grown = length + line + (1 if chunks[-1] else 0)
        if chunks[-1] and tokens_in(grown) > budget - 200:
            chunks.append([e])
            length = line
        else:
            chunks[-1].append(e)
            length = grown
    return chunks


def _part_names(t: str, parts: list[list[Entry]]) -> list[tuple[str, str]]:
    """(label, file stem) of each part: 'Topics', 'topics'; 'Entries 2', 'entries-2'."""
    heading = TYPE_HEADINGS.get(t, t.title())
    many = len(parts) > 1
    return [
        (heading + (f" {n}" if many else ""), github_slug(heading) + (f"-{n}" if many else ""))
        for n in range(1, len(parts) + 1)
    ]


def _sub_index_files(t: str, parts: list[list[Entry]]) -> dict[str, str]:
    """One group's lines in ``wiki/index/<group>[-n].md`` parts ('topics', 'entries-2')."""
    heading = TYPE_HEADINGS.get(t, t.title())
    files = {}
    for n, (chunk, (_, name)) in enumerate(zip(parts, _part_names(t, parts)), 1):
        files[f"wiki/index/{name}.md"] = (
            f"# {heading}" + (f" (part {n} of {len(parts)})" if len(parts) > 1 else "") + "\n\n"
            "[Back to the index](../index.md)\n\n" + "\n".join(_line(e, "wiki/index") for e in chunk) + "\n"
        )
    return files


def _sub_index_lines(t: str, parts: list[list[Entry]], linked: bool = False) -> list[str]:
    """The lines on index.md for a group listed on sub-indexes: each part's link and what it
    lists, by series, or (``linked``) every page by its title and link."""
    out = [f"\n## {TYPE_HEADINGS.get(t, t.title())}\n\n"]
    for chunk, (label, name) in zip(parts, _part_names(t, parts)):
        listed = (
            " · ".join(f"[{e.title}]({os.path.relpath(e.path, 'wiki')})" for e in chunk)
            if linked
            else series_list(chunk)
        )
        out.append(f"- [{label}](index/{name}.md) — {len(chunk)} pages: {listed}\n")
    return out


SERIES_CHARS = 600  # of a sub-index's line on index.md
_NUMBERED_PART = re.compile(r"(.+?)\s+\d+(?::\s|$)")  # 'Herbs 2: Basil to Mint', 'Account: commands 3'


def series_list(entries: list[Entry], limit: int = SERIES_CHARS) -> str:
    """What a sub-index lists, by series: 'App (2), Assembly, Full-sun crops (8), Account:
    commands (29), …' (a series is a numbered part's title before its number, 'Account: commands'
    of 'Account: commands 3: Advanced … to …', else a title's part before ':'), cut at about
    ``limit`` characters."""
    counts: dict[str, int] = {}
    for e in entries:
        numbered = _NUMBERED_PART.match(e.title)
        name = (numbered.group(1) if numbered else e.title.split(":", 1)[0]).strip() or e.title
        counts[name] = counts.get(name, 0) + 1
    out = ""
    for name, n in counts.items():
        item = name + (f" ({n})" if n > 1 else "")
        if out and len(out) + len(item) > limit:
            return out + ", …"
        out += (", " if out else "") + item
    return out


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
