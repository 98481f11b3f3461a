"""``wikic init PATH --from URL_OR_FOLDER``: write ``schema/sources.yaml`` from a sample of the data.

For an HTTP (or ``file:``) JSON API the first page and the next one or two are read, and the
records list, id, title, body, public URL, date field and pagination style are inferred from them.
For a folder, a ``files`` source is written. Every guess is written with a comment saying what was
seen; a guess a person should confirm is marked ``TODO`` and reported. Secrets in the URL or in
headers are replaced by ``${ENV}`` placeholders. Nothing is written unless every source could be
inspected: bad input raises ``ConfigError`` (exit 2).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

import httpx
import yaml

from ..core.config import SOURCE_NAME, SourceConfig, load_sources
from ..core.errors import ConfigError, SourceError
from ..fetch.files import read_file_record
from ..fetch.http import HttpGetter, dotted, join_url, link_next, with_query
from ..fetch.http import client as http_client
from .scaffold import init_kb, replace_block, require_folder, template_text

FOLLOW = 2  # pages followed past the first, to confirm pagination and catch loops
SECRET = re.compile(r"key|token|secret|passw|pwd|auth|signature|^sig$|session|credential|cookie", re.I)
PAGE_PARAMS = ("page", "p", "page_number", "pagenumber", "pagenum")
OFFSET_PARAMS = ("offset", "skip", "start", "from")
SIZE_PARAMS = ("limit", "per_page", "perpage", "page_size", "pagesize", "size", "count", "take")
CURSOR_PARAMS = (
    "cursor",
    "after",
    "page_token",
    "pagetoken",
    "next_cursor",
    "starting_after",
    "continuation",
)
ID_NAMES = ("id", "uuid", "guid", "key", "_id")
TITLE_NAMES = ("title", "name", "question", "subject", "headline", "label", "heading")
URL_NAMES = ("html_url", "url", "link", "permalink", "web_url", "public_url", "href")
UPDATED_NAMES = (
    "updated_at",
    "updated",
    "updatedat",
    "modified",
    "modified_at",
    "last_modified",
    "date_modified",
)
IMAGE = re.compile(r"\.(png|jpe?g|gif|svg|webp|avif|ico)(\?|$)", re.I)
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
MARKUP = re.compile(r"(^|\n)\s*(#{1,6} |[-*+] |\d+[.)] |\|)|\[[^\]]+\]\([^)]+\)|\*\*|</?[a-z][^>]*>", re.I)
PAGE_LIKE = re.compile(r"^(page[-_]?\d*|\d+|index|api|v\d+|json|data|items|records|list|all)$", re.I)


@dataclass
class Guess:
    """One key of a source's configuration, with what was seen; ``todo`` when a person should check."""

    key: str
    value: Any
    seen: str = ""
    todo: str = ""


@dataclass
class SourceDraft:
    name: str
    kind: str
    origin: str = ""  # what --from named, secrets replaced by ${VARS}
    guesses: list[Guess] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # variable → what it must hold
    records: int = 0  # records in the sample
    notes: list[str] = field(default_factory=list)  # comments above the source

    def add(self, key: str, value: Any, seen: str = "", todo: str = "") -> None:
        self.guesses.append(Guess(key, value, seen, todo))

    @property
    def todos(self) -> list[str]:
        return [f"{self.name}.{g.key}: {g.todo}" for g in self.guesses if g.todo]

    def config(self) -> dict[str, Any]:
        return {g.key: g.value for g in self.guesses}


@dataclass
class OnboardReport:
    path: Path
    sources: list[SourceDraft]
    created: list[str]

    @property
    def todos(self) -> list[str]:
        return [t for s in self.sources for t in s.todos]

    @property
    def env(self) -> dict[str, str]:
        return {k: v for s in self.sources for k, v in s.env.items()}


# -- names and secrets -----------------------------------------------------------------------------


def source_name(origin: str) -> str:
    """A source name from a URL's last meaningful path segment (``/api/crops?page=1`` → ``crops``,
    ``export/faq/page-1.json`` → ``faq``) or a folder's name."""
    path = urlsplit(origin).path if re.match(r"^[a-z][a-z0-9+.-]*:", origin, re.I) else origin
    segments = [re.sub(r"\.[A-Za-z0-9]+$", "", unquote(s)) for s in path.replace("\\", "/").split("/")]
    segments = [s for s in segments if s and s not in (".", "..")]
    meaningful = [s for s in segments if not PAGE_LIKE.match(s)] or segments or ["source"]
    name = re.sub(r"[^a-z0-9_-]+", "-", meaningful[-1].lower()).strip("-_")[:64]
    return name if SOURCE_NAME.match(name) else "source"


def env_name(source: str, what: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", f"{source}_{what}".upper()).strip("_")


def redact_url(url: str, source: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """(URL with secrets as ``${VAR}``, {VAR: value}, {VAR: what it holds})."""
    parts = urlsplit(url)
    values: dict[str, str] = {}
    about: dict[str, str] = {}
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        host = netloc.rsplit("@", 1)[1]
        creds = []
        for what, value in (("user", parts.username), ("password", parts.password)):
            if value:
                var = env_name(source, what)
                values[var], about[var] = unquote(value), f"the {what} in the URL"
                creds.append("${" + var + "}")
        netloc = ":".join(creds) + "@" + host
    query = []
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if SECRET.search(k) and v:
            var = env_name(source, k)
            values[var], about[var] = v, f"the URL's '{k}' parameter"
            query.append(f"{k}=${{{var}}}")
        else:
            query.append(f"{quote(k, safe='')}={quote(v, safe='/:,')}")
    if not values:
        return url, {}, {}  # nothing secret: the URL as given
    return urlunsplit(parts._replace(netloc=netloc, query="&".join(query))), values, about


def redact_headers(headers: dict[str, str], source: str) -> tuple[dict[str, str], dict[str, str]]:
    """(headers with secret values as ``${VAR}``, {VAR: what it holds}); ``Authorization: Bearer x``
    keeps its scheme."""
    out, about = {}, {}
    for name, value in headers.items():
        if not (SECRET.search(name) or name.lower() in ("authorization", "proxy-authorization")):
            out[name] = value
            continue
        scheme, _, rest = value.partition(" ")
        keep_scheme = bool(rest) and scheme.lower() in ("bearer", "token", "basic", "apikey")
        var = env_name(source, "api_token" if name.lower() == "authorization" else name)
        about[var] = f"the '{name}' header" + (f" ({scheme} credentials)" if keep_scheme else "")
        out[name] = (scheme + " " if keep_scheme else "") + "${" + var + "}"
    return out, about


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise ConfigError(f"--header {text!r}: expected 'Name: value'")
    return name.strip(), value.strip()


# -- JSON pages ------------------------------------------------------------------------------------


def record_lists(doc: Any, path: str = "", depth: int = 0) -> list[tuple[str, list]]:
    """Every list of objects in a JSON page, by dotted path (the page itself is path '')."""
    out = []
    if isinstance(doc, list):
        objects = [x for x in doc if isinstance(x, dict)]
        if objects and len(objects) * 2 >= len(doc):
            out.append((path, doc))
    elif isinstance(doc, dict) and depth < 4:
        for k, v in doc.items():
            if isinstance(k, str) and "." not in k:
                out += record_lists(v, f"{path}.{k}" if path else k, depth + 1)
    return out


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class Sample:
    """The records read from the first pages, with per-field statistics."""

    def __init__(self, records: list[dict]):
        self.records = records
        self.fields: dict[str, list[Any]] = {}
        for r in records:
            for k, v in r.items():
                self.fields.setdefault(str(k), []).append(v)

    def strings(self, name: str) -> list[str]:
        return [v for v in self.fields.get(name, []) if isinstance(v, str)]

    def everywhere(self, name: str) -> bool:
        return len(self.fields.get(name, [])) == len(self.records)


def _rank(name: str, preferred: tuple[str, ...]) -> int:
    low = name.lower()
    return preferred.index(low) if low in preferred else len(preferred)


def guess_id(sample: Sample, draft: SourceDraft) -> None:
    n = len(sample.records)
    candidates = []
    for name, values in sample.fields.items():
        ok = all(isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip() for v in values)
        if ok and sample.everywhere(name) and len({str(v) for v in values}) == n:
            spaces = sum(" " in str(v) for v in values)
            idlike = _rank(name, ID_NAMES) < len(ID_NAMES) or name.lower().endswith(("_id", "id", "slug"))
            candidates.append((not idlike, _rank(name, ID_NAMES), spaces > 0, name))
    if not candidates:
        keys = ", ".join(sample.fields)
        raise ConfigError(
            f"source '{draft.name}': no field identifies the records (present and unique in all {n} "
            f"sampled); fields seen: {keys}. Write schema/sources.yaml by hand with the id field"
        )
    candidates.sort()
    best = candidates[0][-1]
    others = [c[-1] for c in candidates[1:]]
    todo = ""
    if candidates[0][0] and others:  # nothing is named like an id: the choice is a guess
        todo = f"no field is named like an id; '{best}' was chosen over {', '.join(others[:4])}"
    draft.add("id", best, f"unique in all {n} records sampled", todo)


def guess_title(sample: Sample, draft: SourceDraft, skip: set[str]) -> str:
    n = len(sample.records)
    scored = []
    for name in sample.fields:
        values = sample.strings(name)
        if name in skip or len(values) * 10 < n * 9 or not values:
            continue
        if any("\n" in v for v in values) or any(v.startswith(("http://", "https://", "/")) for v in values):
            continue
        mean = sum(len(v) for v in values) / len(values)
        if not 3 <= mean <= 150:
            continue
        unique = len(set(values)) / len(values)
        scored.append((_rank(name, TITLE_NAMES), -unique, name, mean))
    if not scored:
        draft.add("title", "title", todo="no short text field looks like a title; name the field to use")
        return ""
    scored.sort()
    rank, unique, name, mean = scored[0]
    todo = ""
    if rank == len(TITLE_NAMES):
        todo = f"no field is named like a title; '{name}' is the most distinct short text field"
    draft.add(
        "title",
        name,
        f"short text in every record, {-unique:.0%} distinct, {mean:.0f} chars on average",
        todo,
    )
    return name


def guess_body(sample: Sample, draft: SourceDraft, skip: set[str]) -> str:
    """The longest Markdown or HTML text field; a plain text field is left to the default rendering."""
    best = None
    plain = None
    for name in sample.fields:
        values = [v for v in sample.strings(name) if v.strip()]
        if name in skip or not values:
            continue
        mean = sum(len(v) for v in values) / len(values)
        marked = sum(1 for v in values if MARKUP.search(v) or "\n" in v.strip()) / len(values)
        if mean >= 80 and marked >= 0.5:
            if best is None or mean > best[1]:
                best = (name, mean, marked)
        elif mean >= 80 and (plain is None or mean > plain[1]):
            plain = (name, mean)
    if best:
        name, mean, marked = best
        kind = (
            "HTML"
            if sum("<" in v for v in sample.strings(name)) * 2 > len(sample.strings(name))
            else "Markdown"
        )
        draft.add(
            "body", name, f"the longest {kind} text: {mean:.0f} chars on average, markup in {marked:.0%}"
        )
        return name
    if plain:
        draft.notes.append(
            f"'{plain[0]}' is plain text ({plain[1]:.0f} chars on average), not Markdown: left to the "
            "default rendering, which lists the short fields and gives long text its own section"
        )
    return ""


def guess_url_field(sample: Sample, draft: SourceDraft, api_url: str) -> None:
    api_path = urlsplit(api_url).path
    scored = []
    for name in sample.fields:
        values = sample.strings(name)
        if not values or len(values) * 10 < len(sample.records) * 9:
            continue
        if not all(v.startswith(("http://", "https://")) and not IMAGE.search(v) for v in values):
            continue
        if len(set(values)) < len(values) or all(urlsplit(v).path.startswith(api_path) for v in values):
            continue
        scored.append((_rank(name, URL_NAMES), name))
    if scored:
        name = sorted(scored)[0][1]
        draft.add(
            "url_field",
            name,
            f"a distinct web address in every record, e.g. {_describe(sample.strings(name)[0])}",
        )


def guess_updated(sample: Sample, draft: SourceDraft) -> None:
    for name in sorted(sample.fields, key=lambda f: _rank(f, UPDATED_NAMES)):
        if _rank(name, UPDATED_NAMES) == len(UPDATED_NAMES):
            return
        values = sample.strings(name)
        if values and all(DATE.match(v) for v in values):
            draft.add("updated_at", name, f"dates such as {values[0]}")
            return


def guess_cleanups(sample: Sample, draft: SourceDraft, body: str) -> None:
    values = sample.strings(body) if body else []
    found = []
    liquid = sum(1 for v in values if "{%" in v or "{{" in v)
    comments = sum(1 for v in values if "<!--" in v)
    if liquid:
        found.append(("liquid", f"template tags ({{% ... %}}) in {liquid} of {len(values)} bodies"))
    if comments:
        found.append(("html_comments", f"HTML comments in {comments} of {len(values)} bodies"))
    if found:
        draft.add("cleanups", [n for n, _ in found], "; ".join(s for _, s in found))


# -- pagination ------------------------------------------------------------------------------------


@dataclass
class Fetched:
    url: str
    doc: Any
    headers: httpx.Headers
    records: list[dict]


class Prober:
    """Reads pages of one API for inspection: JSON only, with clear errors for anything else."""

    def __init__(self, getter: HttpGetter, items: str | None = None):
        self.getter = getter
        self.items = items

    def get(self, url: str) -> Fetched:
        try:
            status, body, headers = self.getter.get(url)
        except SourceError as exc:
            hint = ""
            if re.search(r"HTTP 40[13]\b", str(exc)):
                hint = "; the API wants credentials: pass them with --header 'Authorization: Bearer …'"
            raise ConfigError(f"--from {self.getter.redact(url)}: {exc}{hint}") from None
        kind = headers.get("content-type", "")
        if "html" in kind or body.lstrip().startswith(b"<"):
            raise ConfigError(
                f"--from {self.getter.redact(url)}: the server returned HTML ({kind or 'a web page'}), "
                "not JSON; pass the API endpoint that returns the records as JSON"
            )
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"--from {self.getter.redact(url)}: not valid JSON ({exc})") from None
        if self.items is None:
            return Fetched(url, doc, headers, [])
        found = dotted(doc, self.items)
        records = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
        return Fetched(url, doc, headers, records)

    def try_get(self, url: str) -> Fetched | None:
        try:
            return self.get(url)
        except ConfigError:
            return None


def _signature(records: list[dict]) -> list[str]:
    """What two pages are compared by: their records, canonically."""
    return [json.dumps(r, sort_keys=True, default=str) for r in records]


def pager_fields(doc: Any, items: str) -> list[tuple[str, Any]]:
    """(dotted path, value) of the fields outside the records list whose name says 'next' or
    'cursor', most likely first: names with 'next', then shallow ones."""
    out = []

    def walk(node: Any, path: str, depth: int) -> None:
        if not isinstance(node, dict) or depth > 3:
            return
        for k, v in node.items():
            p = f"{path}.{k}" if path else str(k)
            low = str(k).lower()
            if p == items:
                continue
            if isinstance(v, dict):
                walk(v, p, depth + 1)
            elif ("next" in low or "cursor" in low or low in ("after", "continuation")) and (
                v is None or (isinstance(v, (str, int)) and not isinstance(v, bool))
            ):
                out.append((p, v))

    walk(doc, "", 0)
    return sorted(
        out, key=lambda pv: ("next" not in pv[0].rsplit(".", 1)[-1].lower(), pv[0].count("."), pv[0])
    )


NextOf = Callable[[Fetched, int], "str | None"]  # (page just read, pages read so far) → next URL


def follow(prober: Prober, first: Fetched, next_of: NextOf) -> list[Fetched]:
    """Follow up to ``FOLLOW`` next pages; a page that comes back, or repeats earlier records, is a loop."""
    pages: list[Fetched] = []
    seen_urls = {prober.getter.redact(first.url)}
    seen_records = [_signature(first.records)]
    page = first
    while len(pages) < FOLLOW:
        target = next_of(page, len(pages) + 1)
        if not target:
            break
        shown = prober.getter.redact(target)
        page = prober.get(target)
        if not page.records:
            break
        if shown in seen_urls or _signature(page.records) in seen_records:
            raise ConfigError(
                f"--from {prober.getter.redact(first.url)}: the API's pagination loops: {shown} returns "
                f"records already read; fix the API's paging, or write sources.yaml by hand"
            )
        seen_urls.add(shown)
        seen_records.append(_signature(page.records))
        pages.append(page)
    return pages


def moved(first: Fetched, probe: Fetched | None) -> bool:
    """Whether a probed next page holds records other than the first page's."""
    return (
        probe is not None and bool(probe.records) and _signature(probe.records) != _signature(first.records)
    )


def detect_pagination(prober: Prober, first: Fetched, draft: SourceDraft) -> list[Fetched]:
    """Add the pagination guess to ``draft``, confirmed by following it; returns the further pages read."""
    if link_next(first.headers.get("link") or ""):

        def by_link(page: Fetched, n: int) -> str | None:
            target = link_next(page.headers.get("link") or "")
            return join_url(page.url, target) if target else None

        pages = follow(prober, first, by_link)
        draft.add(
            "pagination", {"style": "link_header"}, f'a Link header with rel="next"; {_followed(pages)}'
        )
        return pages
    fields = pager_fields(first.doc, prober.items or "")
    for path, value in fields:
        if value in (None, ""):
            continue
        if isinstance(value, str):

            def by_field(page: Fetched, n: int, path: str = path) -> str | None:
                target = dotted(page.doc, path)
                return join_url(page.url, target) if isinstance(target, str) and target else None

            if moved(first, prober.try_get(by_field(first, 1) or "")):
                pages = follow(prober, first, by_field)
                seen = f"'{path}' holds the next page's address ({_describe(value)}); {_followed(pages)}"
                draft.add("pagination", {"style": "next_field", "field": path}, seen)
                return pages
        pages = _cursor(prober, first, path, value, draft)
        if pages is not None:
            return pages
    empty = [p for p, v in fields if v in (None, "")]
    if empty:
        path = empty[0]
        style = "cursor" if "cursor" in path.lower() else "next_field"
        config = {"style": style, "field": path} | ({"param": "cursor"} if style == "cursor" else {})
        todo = (
            "a cursor field with nothing to follow yet: check the query parameter"
            if style == "cursor"
            else ""
        )
        draft.add("pagination", config, f"'{path}' is empty on the first page: a single page for now", todo)
        return []
    return _numbered(prober, first, draft)


def _followed(pages: list[Fetched]) -> str:
    return f"followed {len(pages)} more page(s), {sum(len(p.records) for p in pages)} more records"


def _cursor(
    prober: Prober, first: Fetched, path: str, value: Any, draft: SourceDraft
) -> list[Fetched] | None:
    """Send the cursor back as a query parameter, trying the usual names; None when none works."""
    query = {k.lower(): k for k, _ in parse_qsl(urlsplit(first.url).query)}
    leaf = path.rsplit(".", 1)[-1]
    params = [query[p] for p in CURSOR_PARAMS if p in query] + [*CURSOR_PARAMS, leaf]
    for param in dict.fromkeys(params):

        def by_cursor(page: Fetched, n: int, param: str = param) -> str | None:
            cursor = dotted(page.doc, path)
            if cursor in (None, "") or not page.records:
                return None
            return with_query(first.url, **{param: cursor})

        probe = prober.try_get(by_cursor(first, 1) or "")
        if moved(first, probe):
            pages = follow(prober, first, by_cursor)
            seen = f"'{path}' holds a cursor ({_describe(value)}), sent back as ?{param}=; {_followed(pages)}"
            draft.add("pagination", {"style": "cursor", "field": path, "param": param}, seen)
            return pages
    return None


def _numbered(prober: Prober, first: Fetched, draft: SourceDraft) -> list[Fetched]:
    """page or offset pagination: from the URL's parameters, else by trying ?page=2 and ?offset=N."""
    query = {k.lower(): (k, v) for k, v in parse_qsl(urlsplit(first.url).query)}
    size_key = next((query[p] for p in SIZE_PARAMS if p in query and query[p][1].isdigit()), None)
    n = len(first.records)
    size = int(size_key[1]) if size_key else n
    found = [("page", *query[p]) for p in PAGE_PARAMS if p in query and query[p][1].isdigit()]
    found += [("offset", *query[p]) for p in OFFSET_PARAMS if p in query and query[p][1].isdigit()]
    tries = [(style, name, int(v), True) for style, name, v in found[:1]]
    tries = tries or [("page", "page", 1, False), ("offset", "offset", 0, False)]
    for style, param, start, in_url in tries:
        step = 1 if style == "page" else max(1, size)

        def by_number(page: Fetched, k: int, param: str = param, start: int = start, step: int = step) -> str:
            return with_query(first.url, **{param: start + k * step})

        probe = prober.try_get(by_number(first, 1))
        if not moved(first, probe):
            if not in_url:
                continue
            config = _numbered_config(style, param, start, size_key, size)
            if probe is not None and not probe.records:
                draft.add(
                    "pagination",
                    config,
                    f"'{param}={start}' in the URL; the next {style} is empty: one page for now",
                )
            else:
                todo = f"the next {style} returned the same records: check that '{param}' pages this API"
                draft.add("pagination", config, f"'{param}={start}' in the URL", todo)
            return []
        pages = follow(prober, first, by_number)
        how = f"'{param}={start}' in the URL" if in_url else f"?{param}= returned the next records"
        draft.add(
            "pagination", _numbered_config(style, param, start, size_key, size), f"{how}; {_followed(pages)}"
        )
        return pages
    todo = ""
    if n in (10, 20, 25, 30, 40, 50, 100, 200, 250, 500, 1000):
        todo = (
            f"the page holds exactly {n} records, which looks like a page size, yet nothing gave more; "
            "check how the API pages"
        )
    seen = "no Link header, next or cursor field; ?page=2 and ?offset= gave nothing new: one page"
    draft.add("pagination", None, seen, todo)
    return []


def _numbered_config(style: str, param: str, start: int, size_key: tuple[str, str] | None, size: int) -> dict:
    config: dict[str, Any] = {"style": style, "param": param}
    if style == "page" and start != 1:
        config["start"] = start
    if size_key:
        config |= {"size_param": size_key[0], "size": size}
    elif style == "offset":
        config["size"] = size
    return config


# -- sources ---------------------------------------------------------------------------------------


def inspect_http(
    origin: str,
    name: str,
    headers: dict[str, str],
    client: httpx.Client,
    cwd: Path,
    kb: Path,
) -> SourceDraft:
    """Inspect a JSON API (http(s): or file:) from its first page and the next one or two."""
    draft = SourceDraft(name, "http", redact_url(origin, name)[0] if "://" in origin else origin)
    url = origin
    if url.startswith("file:") and not url.startswith("file://"):
        url = "file:" + str((cwd / url[len("file:") :]).resolve())
    template, secrets, about = redact_url(url, name)
    shown_headers, header_about = redact_headers(headers, name)
    draft.env = {**about, **header_about}
    cfg = SourceConfig(name=name, kind="http", url=url, retries=1, timeout=20.0)
    getter = HttpGetter(cfg, client, cwd, headers, lambda s: None, secrets)
    first = Prober(getter).get(url)
    lists = record_lists(first.doc)
    if not lists:
        keys = ", ".join(map(str, first.doc)) if isinstance(first.doc, dict) else type(first.doc).__name__
        raise ConfigError(
            f"--from {template}: the JSON page holds no list of records (top-level: {keys}); pass the "
            "endpoint that lists the records"
        )
    lists.sort(key=lambda pl: (-len(pl[1]), pl[0].count("."), pl[0]))
    items, records = lists[0]
    prober = Prober(getter, items)
    first = Fetched(first.url, first.doc, first.headers, [r for r in records if isinstance(r, dict)])
    draft.add("kind", "http")
    shown = template
    if shown.startswith("file:"):
        shown = "file:" + kb_relative(Path(shown[len("file:") :]), kb)
    draft.add("url", shown, "the first page" + (" (secrets replaced by ${VARS})" if secrets else ""))
    others = [f"'{p or '(the page)'}' ({len(v)})" for p, v in lists[1:] if len(v) > 1]
    where = f"'{items}'" if items else "the page itself"
    keys = ", ".join(list(dict.fromkeys(k for r in first.records[:5] for k in r))[:8])
    todo = f"other lists of objects: {', '.join(others)}; check this is the records list" if others else ""
    if items:
        draft.add("items", items, f"the list at {where}: {len(first.records)} objects with {keys}", todo)
    else:
        draft.notes.append(f"records: the page itself is a list of {len(first.records)} objects with {keys}")
    more = detect_pagination(prober, first, draft)
    sample = Sample(first.records + [r for p in more for r in p.records])
    draft.records = len(sample.records)
    if shown_headers:
        draft.add(
            "headers",
            shown_headers,
            "given with --header" + (" (secrets replaced by ${VARS})" if header_about else ""),
        )
    guess_id(sample, draft)
    skip = {draft.config()["id"]}
    title = guess_title(sample, draft, skip)
    body = guess_body(sample, draft, skip | {title})
    guess_url_field(sample, draft, url)
    guess_updated(sample, draft)
    guess_cleanups(sample, draft, body)
    for key in ("total", "count", "total_count", "totalcount", "total_results"):
        value = first.doc.get(key) if isinstance(first.doc, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            draft.notes.append(f"the API reports {value} records in all")
    return draft


def inspect_folder(folder: Path, name: str, kb: Path) -> SourceDraft:
    """A ``files`` source: titles from frontmatter, else the first H1, else the file name."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in (".md", ".json"))
    files = [p for p in files if not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    if not files:
        raise ConfigError(
            f"--from {folder}: no .md or .json files in the folder (or its sub-folders); nothing to read"
        )
    draft = SourceDraft(name, "files", str(folder))
    draft.records = len(files)
    draft.add("kind", "files")
    draft.add(
        "path", os.path.relpath(folder.resolve(), kb.resolve()), f"{len(files)} files, relative to the KB"
    )
    suffixes = {p.suffix.lower() for p in files}
    glob = "**/*.md" if suffixes == {".md"} else "**/*.json" if suffixes == {".json"} else "**/*"
    draft.add(
        "glob", glob, ", ".join(f"{sum(p.suffix.lower() == s for p in files)} {s}" for s in sorted(suffixes))
    )
    records = []
    unreadable = []
    for p in files:
        try:
            records.append(json.loads(json.dumps(read_file_record(p), default=str)))  # dates → text
        except (ValueError, UnicodeDecodeError, yaml.YAMLError):
            unreadable.append(p.relative_to(folder).as_posix())
    if unreadable:
        draft.notes.append(
            f"{len(unreadable)} file(s) could not be read and will be reported by fetch: {', '.join(unreadable[:5])}"
        )
    sample = Sample(records)
    titled = len(sample.strings("title"))
    if titled:
        h1 = sum(1 for r in records if not r.get("title") and re.search(r"(?m)^# \S", str(r.get("body", ""))))
        rest = len(records) - titled - h1
        draft.add(
            "title",
            "title",
            f"{titled} of {len(records)} files have a frontmatter title; {h1} take their first '# ' heading"
            + (f" and {rest} their file name" if rest else ""),
        )
    else:
        title = guess_title(sample, draft, {"body"}) if suffixes == {".json"} else ""
        if not title:
            draft.notes.append(
                "no frontmatter titles: each file takes its first '# ' heading, else its file name"
            )
            draft.guesses = [g for g in draft.guesses if g.key != "title"]
    if suffixes == {".json"} and not sample.strings("body"):  # a files source reads 'body' by default
        title_field = draft.config().get("title") or ""
        if not guess_body(sample, draft, {title_field}):
            draft.add("body", "", "no record has a text body: each record's fields are rendered")
    guess_updated(sample, draft)
    linked = sum(1 for r in records if r.get("supersedes"))
    if linked:
        draft.notes.append(
            f"{linked} file(s) name what they supersede; 'wikic plan' proposes version chains for the others"
        )
    return draft


def inspect(
    origin: str, name: str, headers: dict[str, str], client: httpx.Client, cwd: Path, kb: Path
) -> SourceDraft:
    if re.match(r"^https?://", origin, re.I) or origin.startswith("file:"):
        return inspect_http(origin, name, headers, client, cwd, kb)
    local = (cwd / origin).resolve()
    if local.is_dir():
        return inspect_folder(local, name, kb)
    if local.is_file() and local.suffix.lower() == ".json":  # one page of an exported API
        return inspect_http("file:" + str(local), name, headers, client, cwd, kb)
    shown = redact_url(origin, name)[0]
    raise ConfigError(f"--from {shown}: not an http(s):// or file: URL, a folder, or a JSON page file")


# -- writing ---------------------------------------------------------------------------------------


def _yaml_value(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000, sort_keys=False)
    return text.strip().removesuffix("...").strip()


ORDER = ("kind", "url", "path", "glob", "items", "id", "pagination", "headers", "title", "body", "url_field")


def kb_relative(target: Path, kb: Path) -> str:
    """``target`` relative to the KB when it is inside it or near it (at most two levels up), so the
    KB can move with its data; else absolute."""
    rel = os.path.relpath(target.resolve(), kb.resolve())
    return rel if rel.split(os.sep)[:3].count("..") <= 2 else str(target.resolve())


def render_sources(drafts: list[SourceDraft]) -> str:
    lines = [
        "# Where this knowledge base's content comes from, as inferred by 'wikic init --from' from a sample",
        "# of each source. Every guess says what was seen; check the lines marked TODO before fetching.",
        "# `wikic fetch` snapshots each source into layer0_raw/<name>/, `wikic transform` renders",
        "# layer1_sources/<name>/, and `wikic plan` proposes schema/wiki.yaml. Unknown keys are errors.",
        "sources:",
    ]
    for draft in drafts:
        lines.append(f"  # from {draft.origin}: {draft.records} records sampled")
        lines += [f"  # {note}" for note in draft.notes]
        lines.append(f"  {draft.name}:")
        for g in sorted(draft.guesses, key=lambda g: ORDER.index(g.key) if g.key in ORDER else len(ORDER)):
            if g.value is None:
                lines.append(f"    # {g.key}: none ({g.seen})" + (f"  # TODO: {g.todo}" if g.todo else ""))
                continue
            comment = g.seen + (f"; TODO: {g.todo}" if g.todo else "")
            lines.append(f"    {g.key}: {_yaml_value(g.value)}" + (f"  # {comment}" if comment else ""))
    return "\n".join(lines) + "\n"


def onboard(
    path: Path,
    origins: list[str],
    names: list[str] | None = None,
    headers: list[str] | None = None,
    *,
    client: httpx.Client | None = None,
    cwd: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> OnboardReport:
    """Scaffold a KB at ``path`` whose sources.yaml is inferred from ``origins``; nothing is written
    unless every origin could be inspected."""
    cwd = cwd or Path.cwd()
    kb = path if path.is_absolute() else cwd / path
    require_folder(kb)
    if (kb / "schema" / "sources.yaml").exists():
        raise ConfigError(f"{kb / 'schema' / 'sources.yaml'} already exists; not overwriting a KB")
    names = list(names or [])
    if len(names) > len(origins):
        raise ConfigError("--name was given more times than --from; give one --name per --from, in order")
    parsed_headers = dict(parse_header(h) for h in headers or [])
    own = client is None
    client = client or http_client()
    drafts: list[SourceDraft] = []
    try:
        for i, origin in enumerate(origins):
            name = names[i] if i < len(names) else source_name(origin)
            if not SOURCE_NAME.match(name):
                raise ConfigError(f"--name {name!r}: lower-case letters, digits, '-' or '_', at most 64")
            if any(d.name == name for d in drafts):
                raise ConfigError(f"two sources would be named '{name}'; give each --from a --name")
            if progress:  # the origin as sources.yaml will hold it: a secret in the URL as ${VAR}
                progress(f"inspecting {name} ({redact_url(origin, name)[0]})")
            drafts.append(inspect(origin, name, parsed_headers, client, cwd, kb))
    finally:
        if own:
            client.close()
    text = render_sources(drafts)
    load_sources(kb, text)  # the file must load as written
    topics = (
        "topics:                     # one topic page per group of each source; 'wikic plan' proposes more\n"
    )
    topics += "".join(f"  - source: {d.name}\n" for d in drafts)
    wiki = replace_block(template_text("schema/wiki.yaml"), "topics", topics)
    created = init_kb(kb, {"schema/sources.yaml": text, "schema/wiki.yaml": wiki})
    return OnboardReport(kb, drafts, created)
