"""Strict loading of ``schema/wiki.yaml`` (page types, entities, guides, comparisons, backend)
and ``schema/librarian.md`` (the librarian's rules)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.config import Fields, load_yaml, parse_yaml
from ..core.errors import ConfigError
from ..core.fsutil import canonical_json, read_regular, sha256_tag
from .citations import DEFAULT_MIN_OVERLAP

PAGE_TYPES = ("topic", "device", "guide", "comparison", "hub", "glossary", "changes", "entity", "directory")
DEFAULT_FOLDERS = {
    "topic": "topics",
    "device": "devices",
    "guide": "guides",
    "comparison": "comparisons",
    "hub": "hubs",
    "glossary": "",  # wiki/glossary.md
    "changes": "",  # wiki/changes.md
    "entity": "entries",  # one page per reference entry (a crop, a plant)
    "directory": "directories",  # the list of a group's entries
}
SINGLE_PAGE_TYPES = ("glossary", "changes")  # one page each, named for the type
BACKENDS = ("offline", "anthropic", "openai")
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
FOLDER = re.compile(r"^[A-Za-z0-9][\w-]{0,60}(?:/[A-Za-z0-9][\w-]{0,60}){0,4}$")


@dataclass(frozen=True)
class PageType:
    name: str
    folder: str
    sections: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Device:
    id: str
    title: str
    sources: tuple[str, ...] = ()  # "source:id" of spec pages
    match: tuple[str, ...] = ()  # names that mark a source as being about this device
    exclude: tuple[str, ...] = ()  # names that mark a source as being about another device
    fields: tuple[str, ...] = ()  # frontmatter fields shown in the spec table (default: all numeric/short)


@dataclass(frozen=True)
class Guide:
    id: str
    title: str
    purpose: str
    query: str
    sources: tuple[str, ...] = ()  # restrict to these source names
    limit: int = 8


@dataclass(frozen=True)
class Comparison:
    id: str
    title: str
    of: str  # "devices" or a source name
    fields: tuple[str, ...]
    where: dict[str, Any] = field(default_factory=dict)
    rows: tuple[str, ...] = ()  # explicit record ids (default: all that match)
    purpose: str = ""


@dataclass(frozen=True)
class TopicRule:
    source: str
    group_by: str = ""  # frontmatter field; '' = cluster by content
    titles: dict[str, str] = field(default_factory=dict)
    max_sources: int = 12
    mentions: int = 0  # per source: up to this many sentences of other sources that name it
    entity_pages: bool | None = None  # a page per record (None: when the records read as reference entries)
    purposes: dict[str, str] = field(default_factory=dict)  # per group value, what its page covers


@dataclass(frozen=True)
class VersionChain:
    """Whole documents of one source that replace each other, oldest first (see ``versions.py``)."""

    source: str
    chain: tuple[str, ...]  # record ids, keys or file names


@dataclass(frozen=True)
class Librarian:
    backend: str = "offline"
    model: str = ""
    base_url: str = ""
    concurrency: int = 4
    max_tokens: int = 2048  # reply budget per request
    timeout: float = 600.0  # seconds to wait for one reply (a small local model needs minutes)
    context_tokens: int = 0  # the model's context window; 0 = the backend's default
    page_chars: int = (
        8000  # source text per request (about max_tokens × 4): a page with more is written in parts
    )
    price_in_per_mtok: float = 3.0
    price_out_per_mtok: float = 15.0


# A librarian setting that changes how long a compile waits, not what it writes: raising it
# after a timeout recompiles nothing. (concurrency and prices have always been hashed; leaving
# them out would mark every compiled page stale.)
RUNTIME_KEYS = ("timeout",)


@dataclass(frozen=True)
class WikiSchema:
    path: Path
    page_types: dict[str, PageType]
    devices: tuple[Device, ...]
    guides: tuple[Guide, ...]
    comparisons: tuple[Comparison, ...]
    topics: tuple[TopicRule, ...]
    librarian: Librarian
    index_budget: int
    min_overlap: float
    rules: str  # schema/librarian.md
    hash: str  # of everything above: a change recompiles every page
    facts_show: tuple[str, ...] = ()  # only these frontmatter fields are shown as facts (all when empty)
    facts_hide: tuple[str, ...] = ()  # frontmatter fields never shown as facts
    facts_units: dict[str, str] = field(default_factory=dict)  # unit of a field its name does not say
    versions: tuple[VersionChain, ...] = ()
    semantic: bool = True  # search.semantic: match by meaning too (the bundled embedding), not only words


def _str_list(f: Fields, key: str) -> tuple[str, ...]:
    value = f.get(key, list, [])
    for v in value:
        if not isinstance(v, str):
            raise ConfigError(f"{f.where}.{key}: expected a list of strings, got {v!r}")
    return tuple(value)


def _slug(f: Fields, where: str) -> str:
    value = f.get("id", str, required=True)
    if not SLUG.match(value):
        raise ConfigError(f"{where}.id: {value!r} must be lower-case letters, digits and '-'")
    return value


def _items(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list")
    return value


def load_wiki_schema(root: Path, text: str | None = None) -> WikiSchema:
    """Load ``schema/wiki.yaml``, or validate ``text`` as if it were that file."""
    path = root / "schema" / "wiki.yaml"
    data = load_yaml(path) if text is None else parse_yaml(text, path)
    top = Fields(data, str(path))
    page_types = _page_types(top, path)
    devices = _each(top, path, "devices", _device)
    guides = _each(top, path, "guides", _guide)
    comparisons = _each(top, path, "comparisons", _comparison)
    topics = _each(top, path, "topics", _topic_rule)
    versions = _each(top, path, "versions", _version_chain)
    librarian = _librarian(top, path)
    idx = Fields(top.get("index", dict, {}), f"{path}: index")
    budget = idx.positive("token_budget", 3000)
    idx.done()
    ver = Fields(top.get("verify", dict, {}), f"{path}: verify")
    min_overlap = ver.get("min_overlap", float, DEFAULT_MIN_OVERLAP)
    if not 0 < min_overlap <= 1:
        raise ConfigError(f"{path}: verify.min_overlap must be in (0, 1], got {min_overlap}")
    ver.done()
    ff = Fields(top.get("facts", dict, {}), f"{path}: facts")
    facts_show, facts_hide = _str_list(ff, "show"), _str_list(ff, "hide")
    facts_units = ff.get("units", dict, {})
    for name, unit in facts_units.items():
        if not isinstance(unit, str) or not unit.strip():
            raise ConfigError(f"{path}: facts.units.{name}: give the unit as text, e.g. cm")
    ff.done()
    sf = Fields(top.get("search", dict, {}), f"{path}: search")
    semantic = sf.get("semantic", bool, True)
    sf.done()
    top.done()
    rules = _librarian_rules(root)
    ids = [("device", d.id) for d in devices] + [("guide", g.id) for g in guides]
    ids += [("comparison", c.id) for c in comparisons]
    _unique_ids(path, ids)
    _no_reserved_ids(path, page_types, ids)
    # Page specs carry their own entity, guide or comparison config; this hash covers what every
    # page depends on, so changing it recompiles everything.
    shared = {k: v for k, v in data.items() if k in ("page_types", "librarian", "verify")}
    if isinstance(shared.get("librarian"), dict):
        shared["librarian"] = {k: v for k, v in shared["librarian"].items() if k not in RUNTIME_KEYS}
    digest = sha256_tag(canonical_json([shared, rules]))
    return WikiSchema(
        path,
        page_types,
        tuple(devices),
        tuple(guides),
        tuple(comparisons),
        tuple(topics),
        librarian,
        budget,
        min_overlap,
        rules,
        digest,
        facts_show,
        facts_hide,
        facts_units={str(k): str(v).strip() for k, v in facts_units.items()},
        versions=tuple(versions),
        semantic=semantic,
    )


def _page_types(top: Fields, path: Path) -> dict[str, PageType]:
    page_types = {}
    pt = Fields(top.get("page_types", dict, {}), f"{path}: page_types")
    for name in PAGE_TYPES:
        f = Fields(pt.get(name, dict, {}), f"{path}: page_types.{name}")
        folder = f.get("folder", str, DEFAULT_FOLDERS[name])
        if folder and (not FOLDER.match(folder) or folder.split("/")[0] == "index"):  # '': wiki/ itself
            raise ConfigError(
                f"{path}: page_types.{name}.folder: {folder!r} must be a folder inside wiki/: names of "
                f"letters, digits, '-' and '_' joined by '/', not 'index', or '' for wiki/ itself "
                f"(e.g. {DEFAULT_FOLDERS[name]})"
            )
        page_types[name] = PageType(name, folder, _str_list(f, "sections"), f.get("description", str, ""))
        f.done()
    pt.done()
    _distinct_folders(path, page_types)
    return page_types


def _distinct_folders(path: Path, page_types: dict[str, PageType]) -> None:
    """No two page types with a page per id share a folder, where one's id could name the
    other's page (the glossary and the change list are one page each, named for the type; the
    planner refuses any page planned over another)."""
    owner: dict[str, str] = {}
    for t in page_types.values():
        if t.name in SINGLE_PAGE_TYPES:
            continue
        other = owner.setdefault(t.folder, t.name)
        if other != t.name:
            raise ConfigError(
                f"{path}: page_types.{t.name}.folder is '{t.folder}', the folder of page_types.{other}; "
                "a page of one could overwrite a page of the other: give each page type its own folder"
            )


RESERVED_IDS = ("index", "log", "changes", "glossary")  # the files wikic keeps in wiki/ itself


def _no_reserved_ids(path: Path, page_types: dict[str, PageType], ids: list[tuple[str, str]]) -> None:
    """A page id of a type kept in ``wiki/`` itself never names index.md, log.md, changes.md or
    glossary.md."""
    for kind, ident in ids:
        if not page_types[kind].folder and ident in RESERVED_IDS:
            raise ConfigError(
                f"{path}: {kind} id '{ident}' would be written to wiki/{ident}.md, a file wikic keeps; "
                f"rename it, or give page_types.{kind} a folder"
            )


def _each(top: Fields, path: Path, key: str, read: Callable[[Fields, str], Any]) -> list:
    """Each item of the list under ``key``, read by ``read`` and checked for leftover keys."""
    out = []
    for i, item in enumerate(_items(top.get(key, list), f"{path}: {key}")):
        where = f"{path}: {key}[{i}]"
        f = Fields(item, where)
        out.append(read(f, where))
        f.done()
    return out


def _device(f: Fields, where: str) -> Device:
    return Device(
        _slug(f, where),
        f.get("title", str, required=True),
        _str_list(f, "sources"),
        _str_list(f, "match"),
        _str_list(f, "exclude"),
        _str_list(f, "fields"),
    )


def _guide(f: Fields, where: str) -> Guide:
    return Guide(
        _slug(f, where),
        f.get("title", str, required=True),
        f.get("purpose", str, required=True),
        f.get("query", str, required=True),
        _str_list(f, "sources"),
        f.positive("limit", 8),
    )


def _comparison(f: Fields, where: str) -> Comparison:
    comparison = Comparison(
        _slug(f, where),
        f.get("title", str, required=True),
        f.get("of", str, required=True),
        _str_list(f, "fields"),
        f.get("where", dict, {}),
        _str_list(f, "rows"),
        f.get("purpose", str, ""),
    )
    if not comparison.fields:
        raise ConfigError(f"{where}.fields: list the fields to compare")
    return comparison


def _topic_rule(f: Fields, where: str) -> TopicRule:
    titles = f.get("titles", dict, {})
    purposes = f.get("purposes", dict, {})
    return TopicRule(
        f.get("source", str, required=True),
        f.get("group_by", str, ""),
        {str(k): str(v) for k, v in titles.items()},
        f.positive("max_sources", 12),
        f.get("mentions", int, 0),
        f.get("entity_pages", bool, None),
        {str(k): " ".join(str(v).split()) for k, v in purposes.items()},
    )


def _version_chain(f: Fields, where: str) -> VersionChain:
    chain = VersionChain(f.get("source", str, required=True), _str_list(f, "chain"))
    if len(chain.chain) < 2:
        raise ConfigError(f"{where}.chain: list at least two documents, oldest first")
    return chain


def _librarian(top: Fields, path: Path) -> Librarian:
    lf = Fields(top.get("librarian", dict, {}), f"{path}: librarian")
    librarian = Librarian(
        backend=lf.choice("backend", BACKENDS, "offline"),
        model=lf.get("model", str, ""),
        base_url=lf.get("base_url", str, ""),
        concurrency=lf.positive("concurrency", 4),
        max_tokens=lf.positive("max_tokens", 2048),
        timeout=lf.positive("timeout", 600.0),
        context_tokens=lf.get("context_tokens", int, 0),
        page_chars=lf.positive("page_chars", 8000),
        price_in_per_mtok=lf.get("price_in_per_mtok", float, 3.0),
        price_out_per_mtok=lf.get("price_out_per_mtok", float, 15.0),
    )
    lf.done()
    if librarian.context_tokens < 0 or 0 < librarian.context_tokens <= librarian.max_tokens:
        raise ConfigError(
            f"{path}: librarian.context_tokens ({librarian.context_tokens}) must be above "
            f"librarian.max_tokens ({librarian.max_tokens}): the prompt and the reply share the context"
        )
    return librarian


def _librarian_rules(root: Path) -> str:
    rules_path = root / "schema" / "librarian.md"
    try:
        return read_regular(rules_path).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{rules_path}: missing; it holds the librarian's rules (see 'wikic init')"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        why = (
            "a symbolic link, which wikic never follows" if rules_path.is_symlink() else f"unreadable ({exc})"
        )
        raise ConfigError(f"{rules_path}: {why}; replace it with a UTF-8 text file") from None


def _unique_ids(path: Path, ids: list[tuple[str, str]]) -> None:
    seen = set()
    for kind, ident in ids:
        if (kind, ident) in seen:
            raise ConfigError(f"{path}: two {kind}s have id '{ident}'; ids must be unique")
        seen.add((kind, ident))
