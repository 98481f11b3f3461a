"""Strict loading of ``schema/sources.yaml``: unknown keys and bad values are errors naming file and key."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .fsutil import canonical_json, read_regular, sha256_tag

DEFAULT_MAX_SHRINK = 0.1  # a fetch that loses more than this share of a source's records is refused
SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
PAGINATION_STYLES = ("next_field", "link_header", "page", "offset", "cursor")


def load_yaml(path: Path) -> Any:
    """``yaml.safe_load`` with errors that name the file; tags such as ``!!python`` are refused,
    and so are a symbolic link, nesting past Python's limits and aliases that expand past
    ``MAX_YAML_VALUES`` values."""
    try:
        text = read_regular(path).decode("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(
            f"{path}: file not found; run 'wikic init' or pass --root to the KB folder"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: {_unreadable(path, exc)}; replace it with the file itself") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r}); "
            "save it as UTF-8"
        ) from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: Path) -> Any:
    import yaml  # here, not at the top: search and ask never read YAML

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own limit
            raise ConfigError(f"{path}: YAML nested too deeply to read; flatten it") from None
        raise ConfigError(f"{path}: invalid YAML ({exc}); plain YAML only, no tags") from exc
    except RecursionError:
        raise ConfigError(f"{path}: YAML nested too deeply to read; flatten it") from None
    if too_large(data):
        raise ConfigError(
            f"{path}: YAML aliases expand to more than {MAX_YAML_VALUES} values; write it out plainly"
        )
    return data


MAX_YAML_VALUES = 100_000  # a schema file or a frontmatter block never needs more


def too_large(value: Any, limit: int = MAX_YAML_VALUES) -> bool:
    """Whether ``value`` (parsed YAML) holds more than ``limit`` values once its aliases are
    expanded, or refers to itself (an alias bomb): counted over the shared structure, without
    expanding it."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (list, dict)) or (id(node) in size and not done):
            continue
        children = [
            c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, (list, dict))
        ]
        if done:
            size[id(node)] = len(node) + 1 + sum(size[id(c)] for c in children)
            if size[id(node)] > limit:
                return True
            open_.discard(id(node))
        elif id(node) in open_:
            return True  # it contains itself
        else:
            open_.add(id(node))
            stack.append((node, True))
            stack += [(c, False) for c in children]
    return False


def _unreadable(path: Path, exc: OSError) -> str:
    return (
        "a symbolic link, which wikic never follows"
        if path.is_symlink()
        else f"cannot be read ({exc.strerror or exc})"
    )


class Fields:
    """Pops typed keys from a mapping and rejects whatever is left over."""

    def __init__(self, data: Any, where: str):
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        self.data = dict(data)
        self.where = where

    def get(
        self, key: str, types: type | tuple[type, ...], default: Any = None, required: bool = False
    ) -> Any:
        if key not in self.data:
            if required:
                raise ConfigError(f"{self.where}: missing required key '{key}'")
            return default
        value = self.data.pop(key)
        if isinstance(types, type):
            types = (types,)
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            names = " or ".join(t.__name__ for t in types)
            raise ConfigError(f"{self.where}.{key}: expected {names}, got {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.get(key, str, default, required=default is None)
        if value not in choices:
            raise ConfigError(f"{self.where}.{key}: {value!r} is not one of {', '.join(choices)}")
        return value

    def positive(self, key: str, default: int | float) -> Any:
        value = self.get(key, (int, float) if isinstance(default, float) else int, default)
        if value <= 0:
            raise ConfigError(f"{self.where}.{key}: must be > 0, got {value!r}")
        return value

    def done(self) -> None:
        if self.data:
            keys = ", ".join(sorted(map(str, self.data)))
            raise ConfigError(f"{self.where}: unknown key(s): {keys}; check the spelling against the docs")


@dataclass(frozen=True)
class Pagination:
    style: str = "none"
    field: str = "next"  # next_field: dotted path to next URL; cursor: dotted path to next cursor
    param: str = ""  # page/offset/cursor: query parameter carrying the position
    size_param: str = ""  # page/offset: query parameter carrying the page size
    size: int = 100
    start: int = 1  # page: first page number (offset always starts at 0)


@dataclass(frozen=True)
class Cleanup:
    pattern: re.Pattern
    replace: str | Callable[[re.Match], str]


# One attribute of a Liquid tag: name="double", name='single' (backslash escapes allowed) or name=bare.
_LIQUID_ATTR = r"""([\w-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)'|([^\s%}'"]+))"""
_LIQUID_ATTR_RE = re.compile(_LIQUID_ATTR)
_LIQUID_ATTR_NC = r"""[\w-]+\s*=\s*(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^\s%}'"]+)"""
LIQUID_INCLUDE = r"\{%-?\s*include\s+[\w./-]+((?:\s+" + _LIQUID_ATTR_NC + r")*)\s*-?%\}"


class IncludeText:
    """Replacement for a Liquid ``{% include %}`` tag: its ``title`` (bold) and ``content`` text.

    Attributes may come in any order, in either quote style, and may contain '%' or escaped quotes;
    an include with neither (a video, a gallery) vanishes. The repr is stable because it is part of
    the transform fingerprint.
    """

    def __call__(self, m: re.Match) -> str:
        attrs = {}
        for a in _LIQUID_ATTR_RE.finditer(m.group(1) or ""):
            value = next(v for v in a.group(2, 3, 4) if v is not None)
            attrs[a.group(1)] = re.sub(r"\\([\"'\\])", r"\1", value)
        title, content = attrs.get("title", "").strip(), attrs.get("content", "").strip()
        return " ".join(([f"**{title}**"] if title else []) + ([content] if content else []))

    def __repr__(self) -> str:
        return "IncludeText()"


# Built-in clean-ups, selectable by name in ``cleanups:``.
NAMED_CLEANUPS: dict[str, list[tuple[str, str | Callable[[re.Match], str]]]] = {
    # {% include callout.html title="T" content="C" %} keeps its text; other tags vanish.
    "liquid": [
        (LIQUID_INCLUDE, IncludeText()),
        (r"\{%-?[\s\S]*?-?%\}", ""),
        (r"\{\{-?\s*([^}]*?)\s*-?\}\}", r"\1"),
    ],
    "html_comments": [(r"<!--[\s\S]*?-->", "")],
    # <style> and <script> blocks hold code for a browser, not text for a reader.
    "html_scripts": [(r"<(style|script)\b[^>]*>[\s\S]*?</\1\s*>", "")],
}
# Applied when a source sets no ``cleanups`` (``cleanups: []`` turns them off).
DEFAULT_CLEANUPS = ["liquid", "html_comments", "html_scripts"]


@dataclass(frozen=True)
class SourceConfig:
    name: str
    kind: str
    url: str = ""
    items: str = ""
    id: str = "id"
    pagination: Pagination = field(default_factory=Pagination)
    headers: dict[str, str] = field(default_factory=dict)
    title: str = "title"
    body: str = ""
    template: str = ""
    url_field: str = ""
    updated_field: str = "updated_at"
    path: str = ""
    glob: str = "**/*"
    cleanups: tuple[Cleanup, ...] = ()
    max_shrink: float = DEFAULT_MAX_SHRINK
    concurrency: int = 4
    timeout: float = 30.0
    retries: int = 4
    max_bytes: int = 20_000_000
    max_pages: int = 10_000


@dataclass(frozen=True)
class SourcesConfig:
    path: Path
    sources: dict[str, SourceConfig]
    raw_hash: str  # hash of the file's parsed content, part of downstream fingerprints


def _cleanups(value: Any, where: str) -> tuple[Cleanup, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of clean-up names or {{pattern, replace}} mappings")
    out: list[Cleanup] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            if item not in NAMED_CLEANUPS:
                raise ConfigError(
                    f"{where}[{i}]: unknown clean-up {item!r}; known: {', '.join(NAMED_CLEANUPS)}"
                )
            out.extend(Cleanup(re.compile(p), r) for p, r in NAMED_CLEANUPS[item])
            continue
        f = Fields(item, f"{where}[{i}]")
        pattern = f.get("pattern", str, required=True)
        replace = f.get("replace", str, "")
        f.done()
        try:
            out.append(Cleanup(re.compile(pattern), replace))
        except re.error as exc:
            raise ConfigError(f"{where}[{i}].pattern: invalid regular expression ({exc})") from exc
    return tuple(out)


def _pagination(value: Any, where: str) -> Pagination:
    if value is None:
        return Pagination()
    f = Fields(value, where)
    style = f.choice("style", PAGINATION_STYLES)
    defaults = {
        "next_field": dict(field="next"),
        "link_header": {},
        "page": dict(param="page"),
        "offset": dict(param="offset", size_param="limit"),
        "cursor": dict(param="cursor", field="next_cursor"),
    }[style]
    p = Pagination(
        style=style,
        field=f.get("field", str, defaults.get("field", "next")),
        param=f.get("param", str, defaults.get("param", "")),
        size_param=f.get("size_param", str, defaults.get("size_param", "")),
        size=f.positive("size", 100),
        start=f.get("start", int, 1),
    )
    f.done()
    return p


def _source(name: str, value: Any, where: str) -> SourceConfig:
    if not SOURCE_NAME.match(str(name)):
        raise ConfigError(f"{where}: source name {name!r} must be lower-case letters, digits, '-' or '_'")
    f = Fields(value, where)
    kind = f.choice("kind", ("http", "files"))
    common = dict(
        name=name,
        kind=kind,
        title=f.get("title", str, "title"),
        body=f.get("body", str, "body" if kind == "files" else ""),  # files: Markdown body
        template=f.get("template", str, ""),
        updated_field=f.get("updated_at", str, "updated_at"),
        cleanups=_cleanups(f.get("cleanups", list, DEFAULT_CLEANUPS), f"{where}.cleanups"),
        max_shrink=f.get("max_shrink", float, DEFAULT_MAX_SHRINK),
    )
    if not 0 < common["max_shrink"] <= 1:
        raise ConfigError(f"{where}.max_shrink: a share in (0, 1], such as 0.1; got {common['max_shrink']}")
    if kind == "http":
        url = f.get("url", str, required=True)
        if not re.match(r"^(https?|file):", url):
            raise ConfigError(f"{where}.url: {url!r} must start with http://, https:// or file:")
        headers = f.get("headers", dict, {})
        for k, v in headers.items():
            if not isinstance(v, str):
                raise ConfigError(f"{where}.headers.{k}: header values must be strings")
        cfg = SourceConfig(
            **common,
            url=url,
            items=f.get("items", str, ""),
            id=f.get("id", str, "id"),
            pagination=_pagination(f.get("pagination", dict), f"{where}.pagination"),
            headers=headers,
            url_field=f.get("url_field", str, ""),
            concurrency=f.positive("concurrency", 4),
            timeout=f.positive("timeout", 30.0),
            retries=f.get("retries", int, 4),
            max_bytes=f.positive("max_bytes", 20_000_000),
            max_pages=f.positive("max_pages", 10_000),
        )
    else:
        glob = f.get("glob", str, "**/*")
        if not glob or glob.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", glob) or ":" in glob:
            raise ConfigError(
                f"{where}.glob: {glob!r} must be a pattern inside the source's folder, such as **/*.md "
                "(not absolute, no '..'); put the folder in 'path'"
            )
        cfg = SourceConfig(**common, path=f.get("path", str, required=True), glob=glob)
    f.done()
    return cfg


def load_sources(root: Path, text: str | None = None) -> SourcesConfig:
    """Load ``schema/sources.yaml``, or validate ``text`` as if it were that file."""
    path = root / "schema" / "sources.yaml"
    data = load_yaml(path) if text is None else parse_yaml(text, path)
    top = Fields(data, str(path))
    sources = top.get("sources", dict, {})
    top.done()
    parsed = {str(n): _source(str(n), v, f"{path}: sources.{n}") for n, v in sources.items()}
    return SourcesConfig(path=path, sources=parsed, raw_hash=sha256_tag(canonical_json(data)))
