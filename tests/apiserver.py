"""A real paged JSON API on loopback for fetch tests and benchmarks.

One ``ThreadingHTTPServer`` on ``127.0.0.1`` (ephemeral port, background thread) serves any number of
collections at ``/<name>``. Each collection is configured per test: pagination style, items envelope,
required auth header, ETag / Last-Modified validators, and queued faults. Every request is logged.

The server answers to two host names: ``127.0.0.1`` (the API's own origin) and ``localhost`` (a
different origin for the client, used by the cross-host redirect fault). Required headers are only
enforced on the ``127.0.0.1`` host, so a redirected request that (correctly) lost its auth header still
gets an answer and the test can assert what that other host received.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

STYLES = ("next_field", "link_header", "page", "offset", "cursor", "none")
FAULTS = ("429", "500", "slow", "truncate", "malformed", "loop", "redirect", "oversize", "empty", "short")


@dataclass
class Fault:
    kind: str
    times: int = 1
    page: int | None = None  # 0-based page index it applies to; None = any page
    retry_after: str | None = "0"  # 429: Retry-After header value (None: header absent)
    delay: float = 0.5  # slow: seconds before answering
    size: int = 0  # oversize: body bytes
    declare_length: bool = True  # oversize: send Content-Length (False: stream it chunked)

    def __post_init__(self) -> None:
        if self.kind not in FAULTS:
            raise ValueError(f"unknown fault {self.kind!r}; known: {FAULTS}")


@dataclass
class Collection:
    name: str
    records: list[dict[str, Any]]
    style: str = "next_field"
    page_size: int = 10
    items: str = "data"  # dotted path of the list in the envelope; "" = the page is a bare list
    next_field: str = "next"  # next_field: dotted path of the next URL
    next_format: str = "relative"  # next_field: relative ("/name?page=2") | query ("?page=2") | absolute
    next_host: str | None = None  # absolute next/link URLs point at this host (default: the one asked)
    cursor_field: str = "next_cursor"
    page_param: str = "page"
    offset_param: str = "offset"
    limit_param: str = "limit"
    cursor_param: str = "cursor"
    require: dict[str, str] = field(default_factory=dict)  # headers the 127.0.0.1 host insists on
    etag: bool = False
    last_modified: bool = False
    faults: list[Fault] = field(default_factory=list)
    version: int = 0  # bump (or call ApiServer.touch) when records change, for Last-Modified

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"unknown style {self.style!r}; known: {STYLES}")


@dataclass(frozen=True)
class Request:
    host: str  # the Host header without the port
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    status: int


def _dig(value: dict, path: str, leaf: Any) -> Any:
    """Wrap ``leaf`` so that it sits at dotted ``path`` inside ``value`` (built in place)."""
    parts = path.split(".")
    node = value
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = leaf
    return value


class QuietServer(ThreadingHTTPServer):
    """A loopback server that does not print a client hanging up (a timeout a test provokes, or
    a slow machine's) as an error; anything else it prints as usual."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class ApiServer:
    def __init__(self) -> None:
        self.collections: dict[str, Collection] = {}
        self.log: list[Request] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # a kept-alive connection answers at once, not after the client's delayed ACK (~40 ms)
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802 (stdlib name)
                server._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.block_on_close = False
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    # ---- test-facing API -------------------------------------------------------------------------

    def add(self, name: str, records: list[dict[str, Any]], **options: Any) -> str:
        """Serve ``records`` at ``/<name>``; returns the first page's URL."""
        coll = Collection(name, records, **options)
        self.collections[name] = coll
        return self.first_url(name)

    def first_url(self, name: str, host: str = "127.0.0.1") -> str:
        c = self.collections[name]
        base = f"http://{host}:{self.port}/{name}"
        if c.style in ("next_field", "link_header", "page"):
            return f"{base}?{c.page_param}=1"
        return base

    def fault(self, name: str, kind: str, **kwargs: Any) -> Fault:
        f = Fault(kind, **kwargs)
        self.collections[name].faults.append(f)
        return f

    def touch(self, name: str) -> None:
        self.collections[name].version += 1

    def requests(self, name: str | None = None, host: str | None = None) -> list[Request]:
        with self.lock:
            log = list(self.log)
        return [r for r in log if (name is None or r.path == f"/{name}") and (host is None or r.host == host)]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- serving -----------------------------------------------------------------------------------

    def _page(self, c: Collection, query: dict[str, str], host: str) -> tuple[int, list, dict | None]:
        """(page index, records of that page, extra envelope fields)."""
        n = len(c.records)
        size = c.page_size
        if c.style == "none":
            return 0, c.records, None
        if c.style in ("next_field", "link_header", "page"):
            index = int(query.get(c.page_param, "1")) - 1
            start = index * size
        elif c.style == "offset":
            size = int(query.get(c.limit_param, str(size)))
            start = int(query.get(c.offset_param, "0"))
            index = start // max(size, 1)
        else:  # cursor
            token = query.get(c.cursor_param)
            start = int(base64.urlsafe_b64decode(token.encode()).decode()) if token else 0
            index = start // size
        chunk = c.records[start : start + size]
        more = start + size < n
        return index, chunk, {"more": more, "start": start, "size": size}

    def _next(self, c: Collection, index: int, more: bool, start: int, size: int, host: str, loop: bool):
        target = index + 1 if loop else index + 2
        host = c.next_host or host
        if c.style == "cursor":
            if loop:  # the classic bug: hand back the cursor of the page just served
                return base64.urlsafe_b64encode(str(start).encode()).decode()
            return base64.urlsafe_b64encode(str(start + size).encode()).decode() if more else None
        if not more and not loop:
            return None
        if c.style == "link_header" or c.next_format == "absolute":
            return f"http://{host}:{self.port}/{c.name}?{c.page_param}={target}"
        if c.next_format == "query":
            return f"?{c.page_param}={target}"
        return f"/{c.name}?{c.page_param}={target}"

    def _take_fault(self, c: Collection, index: int) -> Fault | None:
        with self.lock:
            for f in c.faults:
                if f.times > 0 and (f.page is None or f.page == index):
                    f.times -= 1
                    return f
        return None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        host = (h.headers.get("Host") or "").rsplit(":", 1)[0]
        headers = {k.lower(): v for k, v in h.headers.items()}
        status, body, extra = self._respond(parts.path, query, host, headers, h)
        with self.lock:
            self.log.append(Request(host, parts.path, query, headers, status))
        if status == -1:  # connection already handled (truncated body)
            return
        try:
            h.send_response(status)
            for k, v in extra.items():
                h.send_header(k, v)
            if "Content-Length" not in extra and "Transfer-Encoding" not in extra:
                h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if "Transfer-Encoding" in extra:
                for i in range(0, len(body), 65536):
                    chunk = body[i : i + 65536]
                    h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                h.wfile.write(b"0\r\n\r\n")
            else:
                h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True

    def _respond(self, path: str, query: dict, host: str, headers: dict, h: BaseHTTPRequestHandler):
        c = self.collections.get(path.strip("/"))
        if c is None:
            return 404, b'{"error": "not found"}', {"Content-Type": "application/json"}
        if host == "127.0.0.1":
            for name, value in c.require.items():
                if headers.get(name.lower()) != value:
                    return 401, b'{"error": "unauthorized"}', {"Content-Type": "application/json"}
        index, chunk, info = self._page(c, query, host)
        fault = self._take_fault(c, index)
        kind = fault.kind if fault else None
        if kind == "429":
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return 429, b'{"error": "slow down"}', extra
        if kind == "500":
            return 500, b'{"error": "boom"}', {}
        if kind == "slow":
            time.sleep(fault.delay)
        if kind == "redirect":
            other = "localhost" if host == "127.0.0.1" else "127.0.0.1"
            qs = parts_query(query)
            return 302, b"", {"Location": f"http://{other}:{self.port}{path}{qs}"}
        if kind == "empty":  # the page's records are missing, its next link is not
            chunk = []
        elif kind == "short":
            chunk = chunk[: len(chunk) // 2]
        more = bool(info and info["more"])
        nxt = self._next(c, index, more, info["start"], info["size"], host, kind == "loop") if info else None
        extra = {"Content-Type": "application/json"}
        if c.style == "link_header" and nxt:
            extra["Link"] = f'<{nxt}>; rel="next", <{self.first_url(c.name)}>; rel="first"'
        envelope: Any
        if c.items:
            envelope = _dig({}, c.items, chunk)
            if c.style == "next_field":
                _dig(envelope, c.next_field, nxt)
            elif c.style == "cursor":
                _dig(envelope, c.cursor_field, nxt)
        else:
            envelope = chunk
        body = json.dumps(envelope, ensure_ascii=False).encode("utf-8")
        if kind == "malformed":
            body = body[: len(body) // 2]
        if kind == "oversize":
            body = json.dumps({c.items or "data": chunk, "pad": "x" * fault.size}).encode()
            if not fault.declare_length:
                extra["Transfer-Encoding"] = "chunked"
        validators = {}
        if c.etag:
            validators["ETag"] = '"' + hashlib.sha256(body + (nxt or "").encode()).hexdigest()[:16] + '"'
        if c.last_modified:
            validators["Last-Modified"] = email.utils.formatdate(1_700_000_000 + c.version, usegmt=True)
        extra.update(validators)
        if kind is None and validators:
            etag_ok = "ETag" not in validators or headers.get("if-none-match") == validators["ETag"]
            lm_ok = (
                "Last-Modified" not in validators
                or headers.get("if-modified-since") == validators["Last-Modified"]
            )
            asked = "if-none-match" in headers or "if-modified-since" in headers
            if asked and etag_ok and lm_ok:
                return 304, b"", {**validators, "Content-Length": "0"}
        if kind == "truncate":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body) + 100))
            h.end_headers()
            h.wfile.write(body)
            h.wfile.flush()
            h.close_connection = True
            return -1, b"", {}
        return 200, body, extra


def parts_query(query: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return "?" + urlencode(query) if query else ""
