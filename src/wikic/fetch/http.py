"""HTTP sources: page through an API (five pagination styles) with retries, conditional requests,
a size cap and bounded concurrency, and store each record of each page in layer 0. Secrets in
headers and URLs come from the environment and are redacted from every message."""

from __future__ import annotations

import email.utils
import json
import os
import posixpath
import random
import re
import ssl
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timezone
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urljoin, urlsplit, urlunsplit

import httpx

from ..core.config import SourceConfig
from ..core.errors import ConfigError, SourceError
from ..core.models import Record
from .layer0 import SourceStore
from .report import FetchReport, Progress, now_iso

USER_AGENT = "wikic-fetch"
RETRY_STATUS = {429, 500, 502, 503, 504, 529}
MAX_REDIRECTS = 5
MAX_RETRY_AFTER = 120.0  # seconds; a server asking for longer is reported


@cache
def _tls() -> ssl.SSLContext:
    """The TLS settings every client of this process shares: building them reads the certificate
    bundle, about 20 ms, which a client of its own would pay each time."""
    return httpx.create_ssl_context()


def client(**options: Any) -> httpx.Client:
    """An HTTP client that follows no redirect by itself (each hop is checked here)."""
    return httpx.Client(follow_redirects=False, verify=_tls(), **options)


@dataclass
class Page:
    url: str
    items: list[Any]
    next_url: str | None = None
    not_modified_ids: list[str] | None = None  # set on HTTP 304: ids the page held last time
    validators: dict[str, Any] | None = None  # ETag/Last-Modified to keep once the page is stored


def dotted(data: Any, path: str) -> Any:
    """Follow ``a.b.c`` through nested mappings; None when any step is missing."""
    if not path:
        return data
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_headers(cfg: SourceConfig, environ: dict[str, str] | os._Environ = os.environ) -> dict[str, str]:
    """Substitute ``${VAR}`` from the environment; a missing variable, or a value with a line
    break or another control character (a token pasted with its newline), is a configuration
    error whose message never shows the value."""
    out = {}
    for name, value in cfg.headers.items():

        def sub(m: re.Match, header: str = name) -> str:
            var = m.group(1)
            if var not in environ:
                raise ConfigError(
                    f"source '{cfg.name}': header '{header}' needs environment variable {var}; set it and rerun"
                )
            return environ[var]

        out[name] = _ENV.sub(sub, value)
        if _CONTROL.search(out[name]):
            names = ", ".join(f"${{{v}}}" for v in _ENV.findall(value)) or "its value in schema/sources.yaml"
            raise ConfigError(
                f"source '{cfg.name}': header '{name}' contains a line break or control character "
                f"(from {names}); remove it and rerun"
            )
    return out


# ``${VAR}`` in a source URL, also after percent-encoding (``with_query`` re-encodes the query).
_URL_ENV = re.compile(r"(?:\$|%24)(?:\{|%7B)([A-Za-z_][A-Za-z0-9_]*)(?:\}|%7D)", re.IGNORECASE)


def url_secrets(cfg: SourceConfig, environ: dict[str, str] | os._Environ = os.environ) -> dict[str, str]:
    """The ``${VAR}`` placeholders of the source URL and their values from the environment."""
    out = {}
    for var in dict.fromkeys(m.group(1) for m in _URL_ENV.finditer(cfg.url)):
        if var not in environ:
            raise ConfigError(f"source '{cfg.name}': url needs environment variable {var}; set it and rerun")
        out[var] = environ[var]
    return out


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def secret_values(cfg: SourceConfig, environ: dict[str, str] | os._Environ = os.environ) -> list[str]:
    """What a message about this source must never show: its header values, whole and as the
    environment variables they are made of, and the variables its URL is made of."""
    found = [environ.get(var, "") for var in _URL_ENV.findall(cfg.url)]
    for value in cfg.headers.values():
        parts = [environ.get(v, "") for v in _ENV.findall(value)]
        found += [*parts, _ENV.sub(lambda m: environ.get(m.group(1), ""), value)]
    return sorted({s for s in found if len(s.strip()) >= 4}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret replaced by ``***``, as written and as escaped in a repr or JSON
    (``b'Bearer x\\r\\n'``), and each of its words of 6 characters or more (the token in
    'Bearer <token>')."""
    for secret in secrets:
        forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8"))[2:-1], json.dumps(secret)[1:-1]}
        forms |= {w for w in re.split(r"[\s\x00-\x1f]+", secret) if len(w) >= 6}
        for form in sorted(forms, key=len, reverse=True):
            if form:
                text = text.replace(form, "***")
    return text


def with_query(url: str, **params: Any) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update({k: str(v) for k, v in params.items() if k})
    return urlunsplit(parts._replace(query=urlencode(query)))


def join_url(base: str, ref: str) -> str:
    """``urljoin`` that also resolves relative references against ``file:relative/path`` URLs."""
    if base.startswith("file:") and not base.startswith("file://") and not urlsplit(ref).scheme:
        rest = base[len("file:") :].split("?", 1)[0]
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(rest), ref)) if ref else rest
        return "file:" + joined
    return urljoin(base, ref)


def resolve_file_url(url: str, root: Path) -> Path:
    """``file:///abs/path`` or ``file:relative/path`` (relative to the KB root)."""
    rest = url[len("file:") :]
    if rest.startswith("//"):
        rest = urlsplit(url).path
    path = Path(unquote(rest.split("?", 1)[0]))
    return path if path.is_absolute() else root / path


class HttpGetter:
    """GETs one URL with retries, a size cap, manual redirects and conditional headers."""

    def __init__(
        self,
        cfg: SourceConfig,
        client: httpx.Client,
        root: Path,
        headers: dict[str, str],
        sleep: Callable[[float], None] = time.sleep,
        secrets: dict[str, str] | None = None,
    ):
        self.cfg = cfg
        self.client = client
        self.root = root
        self.headers = headers
        self.sleep = sleep
        self.secrets = secrets or {}  # ${VAR} in the URL → value; URLs are kept with the placeholder
        self.origin = urlsplit(self.expand(cfg.url))[:2]
        self.scheme = urlsplit(cfg.url).scheme.lower()
        # a file: export may only page through its own folder
        self.export = (
            resolve_file_url(self.expand(cfg.url), root).resolve().parent if self.scheme == "file" else None
        )

    def expand(self, url: str) -> str:
        """The URL to request: placeholders replaced by their (percent-encoded) values."""
        return _URL_ENV.sub(lambda m: quote(self.secrets.get(m.group(1), m.group(0)), safe=""), url)

    def redact(self, url: str) -> str:
        """The URL to keep (in layer 0, reports, errors): secret values back to ``${VAR}``."""
        for var, value in self.secrets.items():
            if value:
                url = url.replace(quote(value, safe=""), "${" + var + "}").replace(value, "${" + var + "}")
        return _URL_ENV.sub(lambda m: "${" + m.group(1) + "}", url)

    def get(self, url: str, validators: dict[str, str] | None = None) -> tuple[int, bytes, httpx.Headers]:
        url = self.expand(url)
        scheme = urlsplit(url).scheme.lower()
        if scheme != self.scheme:
            raise SourceError(
                self.cfg.name,
                f"a next link leaves the first URL's scheme ({self.scheme}:) for {scheme or 'no scheme'}:; "
                "not followed",
                page=self.redact(url),
            )
        if scheme == "file":
            return self._file(url)
        attempt = 0
        while True:
            try:
                status, body, headers = self._once(url, validators)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                if attempt >= self.cfg.retries:
                    raise SourceError(
                        self.cfg.name,
                        f"{type(exc).__name__}: {exc or 'no response'}; gave up after {attempt + 1} attempts",
                        page=self.redact(url),
                    ) from None
                self.sleep(self._backoff(attempt, None))
                attempt += 1
                continue
            if status in RETRY_STATUS and attempt < self.cfg.retries:
                self.sleep(self._backoff(attempt, headers.get("retry-after"), url))
                attempt += 1
                continue
            if status >= 400:
                raise SourceError(
                    self.cfg.name,
                    f"HTTP {status}" + (f" after {attempt + 1} attempts" if status in RETRY_STATUS else ""),
                    page=self.redact(url),
                )
            return status, body, headers

    def _backoff(self, attempt: int, retry_after: str | None, url: str = "") -> float:
        """Seconds to wait: the server's Retry-After (seconds or HTTP date) if usable, else
        backoff. A Retry-After past ``MAX_RETRY_AFTER`` is an error, never silently shortened."""
        wait: float | None = None
        if retry_after:
            try:
                wait = float(retry_after)
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(retry_after)
                except (TypeError, ValueError, IndexError):
                    when = None
                if when is not None:
                    if when.tzinfo is None:
                        when = when.replace(tzinfo=timezone.utc)
                    wait = when.timestamp() - time.time()
        if wait is None or wait != wait:  # absent, unreadable or NaN
            return min(30.0, 0.25 * 2**attempt) * (0.5 + random.random())
        if wait > MAX_RETRY_AFTER:
            raise SourceError(
                self.cfg.name,
                f"the server asks to retry after {wait:.0f} s (Retry-After: {retry_after}), longer than "
                f"the {MAX_RETRY_AFTER:.0f} s fetch waits; rerun later",
                page=url or None,
            )
        return max(0.0, wait)

    def _once(self, url: str, validators: dict[str, str] | None) -> tuple[int, bytes, httpx.Headers]:
        for _ in range(MAX_REDIRECTS + 1):
            same_origin = urlsplit(url)[:2] == self.origin
            headers = {"User-Agent": USER_AGENT, **(self.headers if same_origin else {})}
            if validators:
                if validators.get("etag"):
                    headers["If-None-Match"] = validators["etag"]
                if validators.get("last_modified"):
                    headers["If-Modified-Since"] = validators["last_modified"]
            deadline = time.monotonic() + self.cfg.timeout  # for the whole response, not each read
            with self.client.stream("GET", url, headers=headers, timeout=self.cfg.timeout) as resp:
                if resp.is_redirect and "location" in resp.headers:
                    url = urljoin(url, resp.headers["location"])
                    continue
                declared = resp.headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > self.cfg.max_bytes:
                    raise SourceError(
                        self.cfg.name,
                        f"response of {declared} bytes exceeds max_bytes "
                        f"({self.cfg.max_bytes}); raise max_bytes or page smaller",
                        page=self.redact(url),
                    )
                chunks, size = [], 0
                for chunk in resp.iter_bytes():
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout(
                            f"the response took longer than {self.cfg.timeout:g} s (timeout) to arrive"
                        )
                    size += len(chunk)
                    if size > self.cfg.max_bytes:
                        raise SourceError(
                            self.cfg.name,
                            f"response exceeds max_bytes ({self.cfg.max_bytes}); "
                            "raise max_bytes or page smaller",
                            page=self.redact(url),
                        )
                    chunks.append(chunk)
                return resp.status_code, b"".join(chunks), resp.headers
        raise SourceError(self.cfg.name, f"more than {MAX_REDIRECTS} redirects", page=self.redact(url))

    def _file(self, url: str) -> tuple[int, bytes, httpx.Headers]:
        path = resolve_file_url(url, self.root).resolve()
        if self.export is not None and self.export not in path.parents:
            raise SourceError(
                self.cfg.name, f"{path} is outside the export folder {self.export}; not read", page=url
            )
        try:
            if not path.is_file():  # a device such as /dev/zero, a folder, a FIFO
                raise SourceError(self.cfg.name, f"{path} is not a regular file; not read", page=url)
            with open(path, "rb") as fh:
                data = fh.read(self.cfg.max_bytes + 1)
        except OSError as exc:
            raise SourceError(self.cfg.name, f"cannot read {path}: {exc.strerror}", page=url) from None
        if len(data) > self.cfg.max_bytes:
            raise SourceError(self.cfg.name, f"file exceeds max_bytes ({self.cfg.max_bytes})", page=url)
        return 200, data, httpx.Headers()


MAX_DEPTH = 100  # records nested deeper are refused: past ~1000 levels Python cannot even parse them


def nesting(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests lists and objects, counted up to ``limit + 1`` (iteratively)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            break
        if isinstance(node, dict):
            stack += [(v, depth + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, depth + 1) for v in node]
    return deepest


def _items(cfg: SourceConfig, url: str, body: bytes) -> tuple[Any, list[Any]]:
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(
            cfg.name, f"malformed JSON ({exc}); the response may be truncated", page=url
        ) from None
    except RecursionError:
        raise SourceError(cfg.name, "JSON nested too deeply to parse; not read", page=url) from None
    items = dotted(doc, cfg.items)
    if not isinstance(items, list):
        where = f"at '{cfg.items}'" if cfg.items else "(the page itself)"
        raise SourceError(
            cfg.name, f"expected a list of records {where}; set 'items' to the list's path", page=url
        )
    return doc, items


def iter_pages(cfg: SourceConfig, getter: HttpGetter, validators: dict[str, dict]) -> Iterator[Page]:
    """Yield pages in order, detecting loops; page/offset styles fetch a window concurrently.

    ``validators`` (url → last ETag/Last-Modified/next/ids) is only read here. A fresh page carries
    its new validators in ``Page.validators``; the caller stores them once the page's records are
    safely stored, so a crash or a bad record never leaves a validator that would skip the page.
    """
    style = cfg.pagination.style
    if style in ("page", "offset"):
        yield from _iter_numbered(cfg, getter, validators)
        return
    url: str | None = cfg.url
    seen: set[str] = set()
    previous: list[Any] | None = None
    pages = 0
    while url:
        if url in seen:
            raise SourceError(cfg.name, "pagination loops back to a page already fetched", page=url)
        seen.add(url)
        pages += 1
        if pages > cfg.max_pages:
            raise SourceError(cfg.name, f"more than max_pages ({cfg.max_pages}) pages", page=url)
        old = validators.get(url) or {}
        status, body, headers = getter.get(url, old)
        if status == 304 and old:
            yield Page(url, [], old.get("next"), list(old.get("ids", [])))
            url = old.get("next")
            continue
        doc, items = _items(cfg, url, body)
        if items and items == previous:  # a cursor or next link that changes but never advances
            raise SourceError(cfg.name, "pagination returns the same records again (a loop)", page=url)
        previous = items
        next_url = _next_url(cfg, url, doc, headers, items)
        next_url = getter.redact(next_url) if next_url else None
        etag, modified = headers.get("etag"), headers.get("last-modified")
        fresh = {"etag": etag, "last_modified": modified, "next": next_url} if etag or modified else None
        yield Page(url, items, next_url, validators=fresh)
        url = next_url


_LINK = re.compile(r"<([^>]*)>([^<]*)")
_REL = re.compile(r'(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))', re.IGNORECASE)


def link_next(header: str) -> str | None:
    """The target of the ``rel="next"`` link in an RFC 8288 Link header. Commas inside a URL and
    relation lists (``rel="next last"``) are handled: each link runs from its ``<`` to the next."""
    for m in _LINK.finditer(header):
        rel = _REL.search(m.group(2))
        if rel and "next" in (rel.group(1) or rel.group(2) or "").lower().split():
            return m.group(1).strip()
    return None


def _next_url(cfg: SourceConfig, url: str, doc: Any, headers: httpx.Headers, items: list) -> str | None:
    p = cfg.pagination
    if p.style == "next_field":
        nxt = dotted(doc, p.field)
        return join_url(url, nxt) if isinstance(nxt, str) and nxt else None
    if p.style == "link_header":
        nxt = link_next(headers.get("link") or "")
        return join_url(url, nxt) if nxt else None
    if p.style == "cursor":
        cursor = dotted(doc, p.field)
        if cursor in (None, "") or not items:
            return None
        return with_query(url, **{p.param: cursor})
    return None


def _iter_numbered(cfg: SourceConfig, getter: HttpGetter, validators: dict[str, dict]) -> Iterator[Page]:
    p = cfg.pagination
    window = max(1, cfg.concurrency)
    start = p.start if p.style == "page" else 0
    step = 1 if p.style == "page" else p.size

    def url_for(i: int) -> str:
        params = {p.param: start + i * step}
        if p.size_param:
            params[p.size_param] = p.size
        return with_query(cfg.url, **params)

    def fetch(i: int) -> Page:
        url = url_for(i)
        old = validators.get(url) or {}
        status, body, headers = getter.get(url, old)
        if status == 304 and old:
            return Page(url, [], None, list(old.get("ids", [])))
        etag, modified = headers.get("etag"), headers.get("last-modified")
        fresh = {"etag": etag, "last_modified": modified, "next": None} if etag or modified else None
        return Page(url, _items(cfg, url, body)[1], validators=fresh)

    previous: Any = None
    i = 0
    with ThreadPoolExecutor(max_workers=window) as pool:
        while True:
            if i >= cfg.max_pages:
                raise SourceError(cfg.name, f"more than max_pages ({cfg.max_pages}) pages", page=url_for(i))
            batch = list(pool.map(fetch, range(i, min(i + window, cfg.max_pages))))
            for page in batch:
                unchanged = page.not_modified_ids is not None  # a 304: the ids it held last time
                count = len(page.not_modified_ids) if unchanged else len(page.items)
                if not count:
                    yield page  # the empty page that ends the list: fetch compares it with last time
                    return
                signature = ("ids", page.not_modified_ids) if unchanged else page.items
                if previous is not None and signature == previous:
                    raise SourceError(
                        cfg.name, "pagination returns the same records again (a loop)", page=page.url
                    )
                previous = signature
                yield page
                if p.size_param and count < p.size:
                    return
            i += len(batch)


def record_id(cfg: SourceConfig, item: Any, n: int, seen: set[str]) -> tuple[str, str]:
    """The id of the ``n``-th record of a page, and why it must be skipped ('' when it need not)."""
    rid = dotted(item, cfg.id) if isinstance(item, dict) else None
    if rid is None or isinstance(rid, (dict, list)) or str(rid).strip() == "":
        return "", f"record #{n + 1} has no usable '{cfg.id}' field; it was skipped"
    rid = str(rid)
    if nesting(item) > MAX_DEPTH:
        return rid, f"nested more than {MAX_DEPTH} levels deep; skipped"
    if rid in seen:
        return rid, "duplicate id; the first occurrence was kept"
    return rid, ""


def fetch_http(
    cfg: SourceConfig,
    store: SourceStore,
    client: httpx.Client,
    root: Path,
    report: FetchReport,
    progress: Progress | None = None,
    environ: dict[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> set[str] | None:
    """Fetch one HTTP source. Returns the ids seen, or None if some record could not be read."""
    env = os.environ if environ is None else environ
    getter = HttpGetter(cfg, client, root, expand_headers(cfg, env), sleep, url_secrets(cfg, env))
    fetched_at = now_iso()
    seen: set[str] = set()
    complete = True
    for page in iter_pages(cfg, getter, store.pages):
        report.pages += 1
        count = len(page.not_modified_ids) if page.not_modified_ids is not None else len(page.items)
        report.layout.append((page.url, count))
        if page.not_modified_ids is not None:
            report.not_modified += 1
            for rid in page.not_modified_ids:
                seen.add(rid)
                report.unchanged += 1
            if progress:
                progress(cfg.name, report.records, None)
            continue
        ids = []
        page_complete = True
        for n, item in enumerate(page.items):
            rid, problem = record_id(cfg, item, n, seen)
            if problem:
                report.errors.append(str(SourceError(cfg.name, problem, page=page.url, record=rid or None)))
                complete = page_complete = False
                continue
            seen.add(rid)
            ids.append(rid)
            result = store.put(Record(cfg.name, rid, item, getter.redact(page.url)), fetched_at)
            setattr(report, result.status, getattr(report, result.status) + 1)
        # Only a page whose every record is stored may be skipped by a 304 next time.
        if page.validators and page_complete:
            store.pages[page.url] = {**page.validators, "ids": ids}
        else:
            store.pages.pop(page.url, None)
        if progress:
            progress(cfg.name, report.records, None)
    return seen if complete else None


def page_problem(layout: list[tuple[str, int]], before: list[int]) -> tuple[str, str] | None:
    """(page URL, what is wrong) for the first page that lost records without a reason, or None:
    an empty page before the last one, an empty page where the last fetch found records, or a
    page before the last one with fewer records than the page before it."""
    for i, (url, count) in enumerate(layout):
        last = i == len(layout) - 1
        had = before[i] if i < len(before) else 0
        if not count and not last:
            return url, f"page {i + 1} has no records, yet more pages follow it"
        if not count and had:
            return url, f"page {i + 1} has no records; the last fetch found {had} there"
        if i and not last and count < layout[i - 1][1]:
            return url, (
                f"page {i + 1} has {count} records, fewer than the {layout[i - 1][1]} of page {i}, "
                "yet more pages follow it"
            )
    return None
