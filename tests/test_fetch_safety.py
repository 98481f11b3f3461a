"""Fetch hardening: a source that shrinks is refused, secrets never reach a message, paginators and
files stay inside what was configured, hostile responses end one source with a clear error."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import snapshot_tree
from test_fetch import http_source, kb, manifest, records, run, snapshots
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.core.config import load_sources
from wikic.fetch.http import redact
from wikic.fetch.layer0 import LAYER0
from wikic.transform.run import transform

runner = CliRunner()


# ---- a source that shrinks -----------------------------------------------------------------------


def test_an_empty_answer_is_refused_and_changes_nothing(tree, api) -> None:
    data = records(47)
    url = api.add("faq", data, page_size=20)
    root = kb(tree, {"faq": http_source(url, pagination={"style": "next_field"})})
    run(root)
    transform(root, load_sources(root))
    before = snapshot_tree(root)
    api.collections["faq"].records = []  # the API answers {"data": []}
    result = runner.invoke(app, ["--root", str(root), "fetch"])
    assert result.exit_code == 1
    assert f"source 'faq', page {url}: page 1 has no records; the last fetch found 20 there" in " ".join(
        result.output.split()
    )
    assert "0 records, down from 47" in result.output and "--allow-shrink" in result.output
    transform(root, load_sources(root))
    after = snapshot_tree(root)
    assert {k: v for k, v in after.items() if not k.startswith(".wikic/")} == {
        k: v for k, v in before.items() if not k.startswith(".wikic/")
    }
    assert len(list((root / "layer1_sources/faq").glob("*.md"))) == 47


def test_a_partial_shrink_writes_no_snapshot_and_allow_shrink_accepts_it(tree, api) -> None:
    data = records(10)
    url = api.add("faq", data)
    root = kb(tree, {"faq": http_source(url)})
    run(root)
    before = snapshot_tree(root / LAYER0)
    api.collections["faq"].records = [dict(data[0], title="Changed")] + data[1:4]  # 4 of 10, one changed
    [report] = run(root)
    assert report.errors and "4 records, down from 10" in report.errors[0]
    assert snapshot_tree(root / LAYER0) == before  # not even the changed record's snapshot
    [report] = run(root, allow_shrink=True)
    assert report.errors == [] and len(report.removed) == 6 and report.changed == 1


def test_max_shrink_is_configurable_per_source(tree, api) -> None:
    data = records(10)
    url = api.add("faq", data)
    root = kb(tree, {"faq": http_source(url, max_shrink=0.9)})
    run(root)
    del data[2:]
    [report] = run(root)
    assert report.errors == [] and len(report.removed) == 8
    bad = kb(tree, {"faq": http_source(url, max_shrink=1.5)}, name="bad")
    result = runner.invoke(app, ["--root", str(bad), "fetch"])
    assert result.exit_code == 2 and "max_shrink" in result.output


STYLES = {
    "next_field": {"style": "next_field"},
    "link_header": {"style": "link_header"},
    "cursor": {"style": "cursor", "param": "cursor", "field": "next_cursor"},
    "page": {"style": "page", "param": "page"},
}


def paged(tree, api, style: str, n: int = 95) -> tuple[Path, list[dict], str]:
    """A KB fetching ``n`` records in pages of 10 from a loopback API, fetched once."""
    data = records(n)
    url = api.add("faq", data, style=style, page_size=10)
    root = kb(tree, {"faq": http_source(url, pagination=STYLES[style])}, name=f"kb-{style}")
    [report] = run(root)
    assert report.errors == [] and report.added == n
    return root, data, url


@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize(("fault", "page"), [("empty", 1), ("empty", 9), ("short", 2)])
def test_a_page_that_lost_records_keeps_the_previous_ones_and_names_the_page(
    tree, api, style: str, fault: str, page: int
) -> None:
    """An empty page in the middle, an empty last page (5 records: within max_shrink) and a
    short page in the middle keep layer 0 as it was; fetch exits 1 naming the page."""
    from apiserver import Fault

    root, _, _ = paged(tree, api, style)
    before = snapshot_tree(root / LAYER0)
    api.collections["faq"].faults.append(Fault(fault, times=100, page=page))
    result = runner.invoke(app, ["--root", str(root), "fetch"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "source 'faq', page http://127.0.0.1" in said and "--allow-shrink" in said
    assert (f"page {page + 1} has" in said) or (style == "cursor" and fault == "empty"), said
    assert snapshot_tree(root / LAYER0) == before
    assert not (root / LAYER0 / "log.md").exists()


def test_allow_shrink_accepts_a_real_deletion_and_the_log_records_it(tree, api) -> None:
    from apiserver import Fault

    root, data, _ = paged(tree, api, "next_field")
    api.collections["faq"].faults.append(Fault("empty", times=100, page=1))
    result = runner.invoke(app, ["--root", str(root), "fetch", "--allow-shrink"])
    assert result.exit_code == 0, result.output
    log = (root / LAYER0 / "log.md").read_text("utf-8")
    assert (
        "fetch faq | -10 records (95 → 85)" in log
        and "Accepted with --allow-shrink: page 2 has no records" in log
    )
    assert "- removed r010" in log and "- removed r019" in log
    assert len([e for e in manifest(root, "faq")["records"].values() if e["status"] == "current"]) == 85


def test_a_drop_past_max_shrink_is_refused_and_one_within_it_is_logged(tree, api) -> None:
    root, data, _ = paged(tree, api, "next_field", n=20)
    del data[-3:]  # 15% of the source, from the last page: no page looks wrong
    [report] = run(root)
    assert report.errors and "17 records, down from 20 (more than 10% gone in one fetch)" in report.errors[0]
    data.append(records(20)[-1])  # now 18 of 20: 10% is not more than 10%
    [report] = run(root)
    assert report.errors == [] and len(report.removed) == 2
    log = (root / LAYER0 / "log.md").read_text("utf-8")
    assert "-2 records (20 → 18)" in log and "--allow-shrink" not in log


# ---- secrets and configuration errors ------------------------------------------------------------

TOKEN = "s3cr3t-token-0123456789"


@pytest.mark.parametrize("bad", [TOKEN + "\r\nX-Evil: 1", TOKEN + "\n", TOKEN + "\x1bzz"])
def test_a_token_with_a_control_character_is_a_config_error_that_never_shows_it(tree, api, bad) -> None:
    url = api.add("items", records(2))
    other = api.add("other", records(3))
    root = kb(
        tree,
        {"items": http_source(url, headers={"Authorization": "Bearer ${TOK}"}), "other": http_source(other)},
    )
    result = runner.invoke(app, ["--root", str(root), "fetch"], env={"TOK": bad})
    assert result.exit_code == 2, result.output
    assert "header 'Authorization' contains a line break or control character (from ${TOK})" in result.output
    assert "s3cr3t" not in result.output and len(snapshots(root, "other")) == 3


def test_redact_hides_a_secret_in_every_form_a_message_may_show_it() -> None:
    secret = "Bearer " + TOKEN + "\r\n"
    message = f"LocalProtocolError: Illegal header value {secret.encode()!r}; also {json.dumps(secret)}"
    hidden = redact(message, [secret, TOKEN + "\r\n"])
    assert "s3cr3t" not in hidden and hidden.count("***") >= 2


def test_a_missing_variable_or_folder_exits_2_and_the_other_sources_are_fetched(tree, api) -> None:
    url = api.add("items", records(1))
    other = api.add("other", records(2))
    root = kb(
        tree,
        {
            "items": http_source(url, headers={"Authorization": "Bearer ${NOPE}"}),
            "docs": {"kind": "files", "path": "no-such-folder"},
            "other": http_source(other),
        },
    )
    result = runner.invoke(app, ["--root", str(root), "fetch"], env={"NOPE": None})
    assert result.exit_code == 2, result.output
    assert "environment variable NOPE" in result.output and "no-such-folder does not exist" in result.output
    assert len(snapshots(root, "other")) == 2


# ---- ways out of the KB --------------------------------------------------------------------------


def export_kb(tree, next_link: str, name: str = "kb") -> Path:
    return tree(
        {
            "schema/sources.yaml": {
                "sources": {
                    "ex": {
                        "kind": "http",
                        "url": "file:export/page1.json",
                        "items": "data",
                        "pagination": {"style": "next_field"},
                    }
                }
            },
            "export/page1.json": json.dumps({"data": [{"id": 1, "title": "a"}], "next": next_link}),
            "private.json": json.dumps({"data": [{"id": 2, "title": "PRIVATE"}], "next": None}),
        },
        name,
    )


@pytest.mark.parametrize(
    "next_link", ["../private.json", "file:///dev/zero", "/dev/zero", "https://example.com/x"]
)
def test_a_file_export_pages_only_through_its_own_folder(tree, next_link) -> None:
    root = export_kb(tree, next_link)
    [report] = run(root)
    assert len(report.errors) == 1 and (
        "outside the export folder" in report.errors[0] or "scheme" in report.errors[0]
    )
    stored = " ".join(p.read_text("utf-8") for p in snapshots(root, "ex"))
    assert "PRIVATE" not in stored and len(snapshots(root, "ex")) == 1


def test_an_export_page_that_is_a_symlink_out_of_its_folder_is_refused(tree) -> None:
    root = export_kb(tree, "page2.json")
    os.symlink(root / "private.json", root / "export/page2.json")
    [report] = run(root)
    assert report.errors and "outside the export folder" in report.errors[0]
    assert "PRIVATE" not in " ".join(p.read_text("utf-8") for p in snapshots(root, "ex"))


@pytest.mark.parametrize("next_link", ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"])
def test_an_http_next_link_keeps_the_first_urls_scheme(tree, api, next_link) -> None:
    url = api.add("items", records(3), page_size=10)
    api.collections["items"].next_format = "absolute"
    api.collections["items"].next_host = None
    root = kb(tree, {"items": http_source(url, pagination={"style": "next_field", "field": "next"})})
    original = api._next
    api._next = lambda *a, **k: next_link  # type: ignore[method-assign]
    try:
        [report] = run(root)
    finally:
        api._next = original  # type: ignore[method-assign]
    assert len(report.errors) == 1 and "leaves the first URL's scheme (http:)" in report.errors[0]
    assert len(snapshots(root, "items")) == 3 and "root:" not in json.dumps(manifest(root, "items"))


def test_a_files_source_reads_nothing_a_symlink_leads_out_of_its_folder(tree) -> None:
    root = tree(
        {
            "schema/sources.yaml": {"sources": {"docs": {"kind": "files", "path": "docs", "glob": "**/*"}}},
            "docs/a.md": "---\ntitle: A\n---\nPublic text.\n",
            "private/key.md": "---\ntitle: Private\n---\nPRIVATE KEY\n",
        }
    )
    os.symlink(root / "private/key.md", root / "docs/key.md")
    os.symlink("/etc/passwd", root / "docs/passwd.json")
    os.symlink(root / "private", root / "docs/more")
    os.symlink(root / "docs/a.md", root / "docs/alias.md")  # inside the folder: fine
    [report] = run(root)
    refused = {e.split("record '")[1].split("'")[0] for e in report.errors}
    assert {"key.md", "passwd.json"} <= refused <= {"key.md", "passwd.json", "more/key.md"}
    assert all("outside" in e for e in report.errors)
    transform(root, load_sources(root))
    published = " ".join(
        p.read_text("utf-8") for p in [*snapshots(root, "docs"), *root.glob("layer1_sources/**/*.md")]
    )
    assert "PRIVATE" not in published and "root:" not in published
    assert report.added == 2  # a.md and alias.md


# ---- hostile responses end one source with a clear error -----------------------------------------


class Scripted:
    """A loopback HTTP server whose GET handler is a plain function of the request path."""

    def __init__(self, handler) -> None:
        outer = self
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # see ApiServer

            def do_GET(self) -> None:  # noqa: N802
                outer.requests.append(self.path)
                handler(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/items"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send_json(h: BaseHTTPRequestHandler, value: Any) -> None:
    body = json.dumps(value).encode()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@pytest.fixture
def scripted():
    servers: list[Scripted] = []

    def start(handler) -> Scripted:
        servers.append(Scripted(handler))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def test_deeply_nested_json_ends_only_its_source_and_page(tree, api, scripted) -> None:
    deep: Any = "bottom"
    for _ in range(200):
        deep = [deep]
    url = api.add("items", [{"id": "ok", "title": "Fine"}, {"id": "deep", "title": "x", "tree": deep}])
    other = api.add("other", records(3))

    def crushing(h: BaseHTTPRequestHandler) -> None:  # 100,000 levels: json cannot even parse it
        body = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    crush = scripted(crushing)
    root = kb(tree, {"items": http_source(url), "crush": http_source(crush.url), "other": http_source(other)})
    items, crushed, good = run(root)
    assert items.added == 1 and "record 'deep': nested more than 100 levels deep" in items.errors[0]
    assert crushed.errors == [f"source 'crush', page {crush.url}: JSON nested too deeply to parse; not read"]
    assert good.errors == [] and good.added == 3


def test_a_cursor_that_never_advances_stops_after_two_pages(tree, scripted) -> None:
    calls = {"n": 0}

    def handler(h: BaseHTTPRequestHandler) -> None:
        calls["n"] += 1  # a new cursor every time, and always the same records
        send_json(h, {"data": [{"id": "a", "title": "A"}], "next_cursor": f"c{calls['n']}"})

    server = scripted(handler)
    root = kb(tree, {"items": http_source(server.url, pagination={"style": "cursor"}, max_pages=50)})
    [report] = run(root)
    assert "returns the same records again" in report.errors[0] and len(server.requests) == 2


def test_a_slow_drip_is_cut_at_the_timeout(tree, scripted) -> None:
    body = json.dumps({"data": [{"id": "a", "title": "A"}]}).encode()

    def handler(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            for byte in body:  # one byte every 50 ms: ~2 s in all, never a 0.5 s silence
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    server = scripted(handler)
    root = kb(tree, {"items": http_source(server.url, timeout=0.5, retries=0)})
    [report] = run(root)
    assert "took longer than 0.5 s" in report.errors[0] and snapshots(root, "items") == []


def test_a_retry_after_beyond_the_cap_is_reported_not_shortened(tree, api) -> None:
    url = api.add("items", records(2))
    api.fault("items", "429", retry_after="3600")
    root = kb(tree, {"items": http_source(url)})
    sleeps: list[float] = []
    [report] = run(root, sleep=sleeps.append)
    assert sleeps == [] and "retry after 3600 s (Retry-After: 3600)" in report.errors[0]
