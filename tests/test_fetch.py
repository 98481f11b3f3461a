"""``wikic fetch`` against a real loopback API: pagination, retries, validators, hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import changed_files, snapshot_tree
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.core.config import load_sources
from wikic.core.errors import ConfigError
from wikic.fetch import http as fetch_mod
from wikic.fetch.layer0 import LAYER0, MANIFEST
from wikic.fetch.report import FetchReport
from wikic.fetch.run import fetch
from wikic.transform.run import transform

SECRET = "s3cr3t-token-value-0123456789"


def records(n: int, prefix: str = "r") -> list[dict[str, Any]]:
    return [
        {"id": f"{prefix}{i:03d}", "title": f"Record {i}", "body": f"Body of record {i}."} for i in range(n)
    ]


def kb(tree, sources: dict[str, Any], name: str = "kb") -> Path:
    return tree({"schema/sources.yaml": {"sources": sources}}, name)


def run(root: Path, **kwargs: Any) -> list[FetchReport]:
    kwargs.setdefault("sleep", lambda s: None)
    kwargs.setdefault("environ", {})
    return fetch(root, load_sources(root), **kwargs)


def manifest(root: Path, source: str) -> dict[str, Any]:
    return json.loads((root / LAYER0 / source / MANIFEST).read_text("utf-8"))


def snapshots(root: Path, source: str) -> list[Path]:
    return sorted(p for p in (root / LAYER0 / source).rglob("*.json") if p.name != MANIFEST)


def stored_records(root: Path, source: str) -> dict[str, dict]:
    out = {}
    for p in snapshots(root, source):
        body = json.loads(p.read_text("utf-8"))
        out.setdefault(body["id"], body["record"])
    return out


def http_source(url: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "http", "url": url, "items": "data", **extra}


# ---- pagination styles ------------------------------------------------------------------------------

PAGINATIONS = [
    ("next_field", {"next_format": "relative"}, {"style": "next_field", "field": "next"}),
    ("next_field", {"next_format": "query"}, {"style": "next_field"}),
    (
        "next_field",
        {"next_format": "absolute", "next_field": "links.next"},
        {"style": "next_field", "field": "links.next"},
    ),
    ("link_header", {}, {"style": "link_header"}),
    ("page", {}, {"style": "page", "param": "page"}),
    ("page", {}, {"style": "page", "param": "page", "size_param": "per_page", "size": 7}),
    ("offset", {}, {"style": "offset", "size": 7}),
    ("cursor", {}, {"style": "cursor", "param": "cursor", "field": "next_cursor"}),
]


@pytest.mark.parametrize(("style", "server_opts", "pagination"), PAGINATIONS)
def test_every_pagination_style_fetches_every_record(tree, api, style, server_opts, pagination):
    data = records(23)
    url = api.add("items", data, style=style, page_size=7, **server_opts)
    root = kb(tree, {"items": http_source(url, pagination=pagination)})
    [report] = run(root)
    assert report.errors == []
    assert report.added == 23 and report.records == 23
    assert stored_records(root, "items") == {r["id"]: r for r in data}
    assert len(snapshots(root, "items")) == 23


def test_single_page_list_without_envelope(tree, api):
    url = api.add("items", records(5), style="none", items="")
    root = kb(tree, {"items": {"kind": "http", "url": url}})
    [report] = run(root)
    assert (report.added, report.pages, report.errors) == (5, 1, [])


def test_nested_items_path_and_dotted_id(tree, api):
    data = [{"meta": {"key": i * 10}, "title": f"T{i}"} for i in range(12)]
    url = api.add("items", data, items="result.list", page_size=5)
    root = kb(
        tree,
        {"items": http_source(url, items="result.list", id="meta.key", pagination={"style": "next_field"})},
    )
    [report] = run(root)
    assert report.errors == []
    assert sorted(manifest(root, "items")["records"]) == sorted(str(i * 10) for i in range(12))


def test_wrong_items_path_is_a_clear_error(tree, api):
    url = api.add("items", records(3))
    root = kb(tree, {"items": http_source(url, items="results")})
    [report] = run(root)
    assert len(report.errors) == 1
    assert "source 'items'" in report.errors[0] and "'results'" in report.errors[0]


# ---- headers and secrets ----------------------------------------------------------------------------


def test_env_header_is_sent_and_never_stored(tree, api):
    url = api.add("items", records(12), require={"Authorization": f"Bearer {SECRET}"}, etag=True)
    root = kb(
        tree,
        {
            "items": http_source(
                url, pagination={"style": "next_field"}, headers={"Authorization": "Bearer ${API_TOKEN}"}
            )
        },
    )
    reports = run(root, environ={"API_TOKEN": SECRET})
    assert reports[0].errors == [] and reports[0].added == 12
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in api.requests("items"))
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in repr(reports)


def test_secret_absent_from_errors_when_fetch_fails(tree, api):
    url = api.add("items", records(3), require={"X-Key": SECRET})
    api.fault("items", "500", times=10)
    root = kb(tree, {"items": http_source(url, headers={"X-Key": "${KEY}"}, retries=1)})
    reports = run(root, environ={"KEY": SECRET})
    assert reports[0].errors and SECRET not in repr(reports)


def test_missing_env_variable_fails_only_its_source(tree, api):
    url = api.add("items", records(1))
    other = api.add("other", records(2))
    root = kb(
        tree,
        {"items": http_source(url, headers={"Authorization": "Bearer ${NOPE}"}), "other": http_source(other)},
    )
    bad, good = run(root, environ={})
    assert "NOPE" in bad.errors[0] and "environment variable" in bad.errors[0]
    assert good.errors == [] and good.added == 2


def test_wrong_secret_gives_http_401_error(tree, api):
    url = api.add("items", records(2), require={"Authorization": "Bearer right"})
    root = kb(tree, {"items": http_source(url, headers={"Authorization": "Bearer ${T}"})})
    [report] = run(root, environ={"T": "wrong"})
    assert "HTTP 401" in report.errors[0]


# ---- conditional requests ---------------------------------------------------------------------------


@pytest.mark.parametrize("validator", ["etag", "last_modified"])
def test_second_run_gets_304s_and_writes_nothing(tree, api, validator):
    url = api.add("items", records(30), page_size=10, **{validator: True})
    root = kb(tree, {"items": http_source(url, pagination={"style": "next_field"})})
    first = run(root)[0]
    assert first.added == 30 and first.pages == 3
    before = snapshot_tree(root)
    n = len(api.log)
    second = run(root)[0]
    assert changed_files(before, snapshot_tree(root)) == []
    new = api.log[n:]
    assert [r.status for r in new] == [304, 304, 304]
    header = "if-none-match" if validator == "etag" else "if-modified-since"
    assert all(header in r.headers for r in new)
    assert (second.not_modified, second.unchanged, second.added, second.removed) == (3, 30, 0, [])


@pytest.mark.parametrize(
    ("style", "pagination"),
    [
        ("page", {"style": "page", "param": "page"}),
        ("offset", {"style": "offset", "param": "offset", "size_param": "limit", "size": 10}),
    ],
)
def test_numbered_pages_are_fetched_conditionally_too(tree, api, style, pagination):
    data = records(25)
    url = api.add("items", data, style=style, page_size=10, etag=True)
    root = kb(tree, {"items": http_source(url, pagination=pagination)})
    assert run(root)[0].added == 25
    before = snapshot_tree(root)
    n = len(api.log)
    again = run(root)[0]
    assert changed_files(before, snapshot_tree(root)) == []
    # The three pages holding records come back 304, and so does the empty page that ends a list
    # paged by number alone (fetch keeps what that page held, to tell an empty page from the
    # end); with a page size the short third page ends it. Pages read ahead past the end by the
    # concurrent window are asked again.
    pages = 4 if style == "page" else 3
    assert sum(r.status == 304 for r in api.log[n:]) == pages
    assert again.not_modified == pages and again.unchanged == 25 and again.removed == []
    data[12]["body"] = "changed"
    third = run(root)[0]
    assert (third.changed, third.unchanged, third.removed) == (1, 24, [])


def test_304_run_still_detects_changes_on_other_pages(tree, api):
    data = records(30)
    url = api.add("items", data, page_size=10, etag=True)
    root = kb(tree, {"items": http_source(url, pagination={"style": "next_field"})})
    run(root)
    data[15]["body"] = "changed"
    del data[25]
    report = run(root)[0]
    assert report.not_modified == 1  # only the first page is unchanged
    assert (report.changed, report.removed) == (1, ["r025"])


# ---- retries, timeouts, broken responses ------------------------------------------------------------


def test_429_is_retried_honouring_retry_after(tree, api):
    url = api.add("items", records(5))
    api.fault("items", "429", times=2, retry_after="7")
    root = kb(tree, {"items": http_source(url)})
    sleeps: list[float] = []
    [report] = run(root, sleep=sleeps.append)
    assert report.errors == [] and report.added == 5
    assert sleeps == [7.0, 7.0]
    assert [r.status for r in api.requests("items")] == [429, 429, 200]


def test_retry_after_http_date_and_garbage(tree, api):
    url = api.add("items", records(1))
    api.fault("items", "429", retry_after="Wed, 21 Oct 2015 07:28:00 GMT")
    api.fault("items", "429", retry_after="soon-ish")
    root = kb(tree, {"items": http_source(url)})
    sleeps: list[float] = []
    [report] = run(root, sleep=sleeps.append)
    assert report.errors == [] and len(sleeps) == 2
    assert sleeps[0] == 0.0  # a date in the past: retry at once
    assert 0 < sleeps[1] <= 30


def test_500s_then_success(tree, api):
    url = api.add("items", records(5))
    api.fault("items", "500", times=3)
    root = kb(tree, {"items": http_source(url, retries=4)})
    sleeps: list[float] = []
    [report] = run(root, sleep=sleeps.append)
    assert report.errors == [] and report.added == 5 and len(sleeps) == 3


def test_500s_beyond_retries_name_source_and_page(tree, api):
    url = api.add("items", records(5))
    api.fault("items", "500", times=10)
    root = kb(tree, {"items": http_source(url, retries=2)})
    [report] = run(root)
    assert len(report.errors) == 1
    assert "source 'items'" in report.errors[0] and url in report.errors[0] and "HTTP 500" in report.errors[0]
    assert len(api.requests("items")) == 3


def test_timeout_is_retried(tree, api):
    url = api.add("items", records(5))
    api.fault("items", "slow", delay=0.6)
    root = kb(tree, {"items": http_source(url, timeout=0.15)})
    sleeps: list[float] = []
    [report] = run(root, sleep=sleeps.append)
    assert report.errors == [] and report.added == 5 and len(sleeps) == 1


def test_timeout_beyond_retries_is_an_error(tree, api):
    url = api.add("items", records(5))
    api.fault("items", "slow", delay=0.5, times=2)
    root = kb(tree, {"items": http_source(url, timeout=0.1, retries=1)})
    [report] = run(root)
    assert "Timeout" in report.errors[0] and "source 'items'" in report.errors[0]


@pytest.mark.parametrize("kind", ["truncate", "malformed"])
def test_broken_page_names_source_and_page_and_others_complete(tree, api, kind):
    good = api.add("good", records(4))
    bad = api.add("bad", records(25), page_size=10)
    api.fault("bad", kind, page=1, times=10)
    root = kb(
        tree,
        {
            "bad": http_source(bad, pagination={"style": "next_field"}, retries=1),
            "good": http_source(good),
        },
    )
    bad_report, good_report = run(root)
    assert good_report.errors == [] and good_report.added == 4
    assert len(bad_report.errors) == 1
    msg = bad_report.errors[0]
    assert "source 'bad'" in msg and "page=2" in msg
    assert bad_report.added == 10  # the first page was kept ...
    assert bad_report.removed == []  # ... and nothing was marked removed
    assert not list(root.rglob("*.tmp"))


def test_cli_fetch_exits_1_on_a_source_error(tree, api, monkeypatch):
    good = api.add("good", records(2))
    bad = api.add("bad", records(2))
    api.fault("bad", "malformed", times=10)
    root = kb(tree, {"bad": http_source(bad, retries=0), "good": http_source(good)})
    monkeypatch.setattr(fetch_mod.time, "sleep", lambda s: None)
    result = CliRunner().invoke(app, ["--root", str(root), "fetch"])
    assert result.exit_code == 1, result.output
    assert "source 'bad'" in result.output and "malformed JSON" in result.output
    assert len(snapshots(root, "good")) == 2


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('<https://a.test/x?page=2>; rel="next"', "https://a.test/x?page=2"),
        (
            '<https://a.test/x?ids=1,2&p=1>; rel="prev", <https://a.test/x?ids=1,2&p=3>; rel="next last"',
            "https://a.test/x?ids=1,2&p=3",
        ),
        ('</items?p=4>; title="a, b"; REL=Next', "/items?p=4"),
        ('<https://a.test/x?p=1>; rel="prev", <https://a.test/x?p=9>; rel="last"', None),
        ('<https://a.test/x?p=2>; rel="nextish"', None),
        ("", None),
    ],
)
def test_link_header_next(header, expected):
    assert fetch_mod.link_next(header) == expected


@pytest.mark.parametrize("style", ["next_field", "link_header", "cursor"])
def test_looping_next_is_detected(tree, api, style):
    url = api.add("items", records(30), page_size=10, style=style)
    api.fault("items", "loop", page=1)
    root = kb(tree, {"items": http_source(url, pagination={"style": style})})
    [report] = run(root)
    assert len(report.errors) == 1 and "loop" in report.errors[0]
    assert report.removed == []
    assert len(api.requests("items")) == 2


def test_page_style_server_ignoring_page_param_is_detected(tree, api):
    url = api.add("items", records(10), style="none")
    root = kb(tree, {"items": http_source(url, pagination={"style": "page"})})
    [report] = run(root)
    assert "loop" in report.errors[0]


def test_max_pages_bounds_a_runaway_paginator(tree, api):
    url = api.add("items", records(50), page_size=5)
    root = kb(tree, {"items": http_source(url, pagination={"style": "next_field"}, max_pages=3)})
    [report] = run(root)
    assert "max_pages" in report.errors[0] and report.removed == []


@pytest.mark.parametrize("declare", [True, False])
def test_oversized_response_is_refused(tree, api, declare):
    url = api.add("items", records(3))
    api.fault("items", "oversize", size=200_000, declare_length=declare)
    root = kb(tree, {"items": http_source(url, max_bytes=50_000)})
    [report] = run(root)
    assert len(report.errors) == 1 and "max_bytes" in report.errors[0]
    assert snapshots(root, "items") == []


def test_cross_host_redirect_drops_auth_header(tree, api):
    url = api.add("items", records(5), require={"Authorization": f"Bearer {SECRET}"})
    api.fault("items", "redirect")
    root = kb(tree, {"items": http_source(url, headers={"Authorization": "Bearer ${T}"})})
    [report] = run(root, environ={"T": SECRET})
    assert report.errors == [] and report.added == 5
    first, other = api.requests("items")
    assert first.host == "127.0.0.1" and first.status == 302
    assert first.headers["authorization"] == f"Bearer {SECRET}"
    assert other.host == "localhost"
    assert "authorization" not in other.headers


def test_cross_host_next_url_does_not_get_auth_header(tree, api):
    data = records(20)
    api.add("items", data, page_size=10, next_format="absolute", next_host="127.0.0.1")
    # the API's own origin is "localhost"; its next links point at 127.0.0.1, another host
    url = api.first_url("items", host="localhost")
    root = kb(
        tree, {"items": http_source(url, pagination={"style": "next_field"}, headers={"X-Key": "${T}"})}
    )
    run(root, environ={"T": SECRET})
    log = api.requests("items")
    assert [r.host for r in log] == ["localhost", "127.0.0.1"]
    assert log[0].headers.get("x-key") == SECRET and "x-key" not in log[1].headers


# ---- ids ---------------------------------------------------------------------------------------------

HOSTILE = [
    "../../x",
    "a/b",
    "..",
    ".",
    "x" * 500,
    "Grüße 日本",
    "a b",
    "a:b",
    "a?b",
    "x",
    "_manifest",
    "CON",
    "a@b",
    "X",  # only the case differs from "x": one file name on case-insensitive file systems
]


def test_hostile_ids_stay_inside_the_source_folder_without_collisions(tree, api):
    data = [{"id": rid, "title": f"t{n}"} for n, rid in enumerate(HOSTILE)]
    url = api.add("items", data, page_size=100)
    root = kb(tree, {"items": http_source(url)})
    [report] = run(root)
    assert report.errors == [] and report.added == len(HOSTILE)
    folder = (root / LAYER0 / "items").resolve()
    files = [
        p for p in root.rglob("*") if p.is_file() and ".wikic" not in p.parts and p.name != "sources.yaml"
    ]
    assert all(p.resolve().is_relative_to(folder) for p in files), files
    assert len(snapshots(root, "items")) == len(HOSTILE)
    m = manifest(root, "items")["records"]
    assert sorted(m) == sorted(HOSTILE)
    keys = [e["key"] for e in m.values()]
    assert len({k.casefold() for k in keys}) == len(keys)
    assert all("/" not in k and ".." not in k and len(k) <= 120 for k in keys)
    assert m["x"]["key"] == "x"
    assert stored_records(root, "items") == {r["id"]: r for r in data}


def test_numeric_ids_become_strings(tree, api):
    url = api.add("items", [{"id": 7, "title": "a"}, {"id": 7.5, "title": "b"}])
    root = kb(tree, {"items": http_source(url)})
    run(root)
    assert sorted(manifest(root, "items")["records"]) == ["7", "7.5"]


def test_record_without_id_is_reported_others_stored_and_nothing_marked_removed(tree, api):
    data = records(6)
    url = api.add("items", data, page_size=3)
    root = kb(tree, {"items": http_source(url, pagination={"style": "next_field"})})
    run(root)
    broken = [dict(r) for r in data]
    del broken[1]["id"]
    broken[4]["id"] = ""
    broken[5]["body"] = "new body"
    api.collections["items"].records = broken
    [report] = run(root)
    assert len(report.errors) == 2
    assert all("no usable 'id'" in e and "source 'items'" in e for e in report.errors)
    assert "record #2" in report.errors[0] and "page=1" in report.errors[0]
    assert report.changed == 1 and report.removed == []
    assert all(e["status"] == "current" for e in manifest(root, "items")["records"].values())


def test_duplicate_id_is_reported_and_first_kept(tree, api):
    url = api.add("items", [{"id": "a", "title": "1"}, {"id": "a", "title": "2"}])
    root = kb(tree, {"items": http_source(url)})
    [report] = run(root)
    assert "duplicate id" in report.errors[0] and "'a'" in report.errors[0]
    assert stored_records(root, "items")["a"]["title"] == "1"


def test_missing_id_page_is_not_cached_by_etag(tree, api):
    """A page with a record error must not be skipped via 304 next time, or its error would vanish."""
    data = records(3)
    del data[1]["id"]
    url = api.add("items", data, etag=True)
    root = kb(tree, {"items": http_source(url)})
    assert len(run(root)[0].errors) == 1
    second = run(root)[0]
    assert len(second.errors) == 1 and second.not_modified == 0


# ---- record lifecycle --------------------------------------------------------------------------------


def test_removed_record_is_marked_and_its_snapshots_stay(tree, api):
    data = records(5)
    url = api.add("items", data)
    root = kb(tree, {"items": http_source(url)})
    run(root)
    gone = data.pop(2)
    [report] = run(root, allow_shrink=True)  # one of five is more than max_shrink (10%)
    assert report.removed == [gone["id"]]
    entry = manifest(root, "items")["records"][gone["id"]]
    assert entry["status"] == "removed" and entry["removed"]
    assert (root / entry["snapshot"]).exists()
    assert len(snapshots(root, "items")) == 5
    data.insert(2, gone)  # it comes back
    [report] = run(root)
    assert report.added == 1 and manifest(root, "items")["records"][gone["id"]]["status"] == "current"
    assert len(snapshots(root, "items")) == 5


def test_changed_record_adds_exactly_one_snapshot(tree, api):
    data = records(5)
    url = api.add("items", data)
    root = kb(tree, {"items": http_source(url)})
    run(root)
    before = snapshot_tree(root)
    data[3]["title"] = "Renamed"
    [report] = run(root)
    assert (report.changed, report.unchanged, report.added) == (1, 4, 0)
    diff = changed_files(before, snapshot_tree(root))
    new = [d for d in diff if d.startswith(f"{LAYER0}/items/r003@")]
    assert len(new) == 1
    assert sorted(set(diff) - set(new)) == [f"{LAYER0}/items/{MANIFEST}"]
    entry = manifest(root, "items")["records"]["r003"]
    assert len(entry["history"]) == 2 and entry["snapshot"] == new[0]


def test_key_order_does_not_make_a_new_snapshot(tree, api):
    data = [{"id": "a", "title": "x", "n": 1}]
    url = api.add("items", data)
    root = kb(tree, {"items": http_source(url)})
    run(root)
    api.collections["items"].records = [{"n": 1, "title": "x", "id": "a"}]
    assert run(root)[0].unchanged == 1


# ---- kill safety --------------------------------------------------------------------------------------


def test_crash_mid_fetch_leaves_no_temp_files_and_rerun_completes(tree, api, monkeypatch):
    data = records(30)
    url = api.add("items", data, page_size=10, etag=True)
    root = kb(tree, {"items": http_source(url, pagination={"style": "next_field"})})
    real_replace = fetch_mod.os.replace if hasattr(fetch_mod, "os") else None
    import wikic.core.fsutil as fsutil

    calls = {"n": 0}
    real = fsutil.os.replace

    def dying_replace(src, dst):
        calls["n"] += 1
        if calls["n"] == 15:
            raise KeyboardInterrupt("killed")
        return real(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        run(root)
    monkeypatch.setattr(fsutil.os, "replace", real)
    assert real_replace is not None
    assert not list(root.rglob("*.tmp"))
    [report] = run(root)
    assert report.errors == [] and report.records == 30
    assert len(snapshots(root, "items")) == 30
    assert set(manifest(root, "items")["records"]) == {r["id"] for r in data}
    # and a third run is a no-op
    before = snapshot_tree(root)
    run(root)
    assert changed_files(before, snapshot_tree(root)) == []


def test_stale_temp_files_from_a_killed_run_are_cleaned(tree, api):
    url = api.add("items", records(2))
    root = kb(tree, {"items": http_source(url), **{}})
    (root / LAYER0 / "items").mkdir(parents=True)
    (root / LAYER0 / "items" / ".r000@abc.json.x1y2.tmp").write_text("half")
    run(root)
    assert not list(root.rglob("*.tmp"))


# ---- files sources ------------------------------------------------------------------------------------


def test_files_source_reads_md_and_json(tree):
    root = tree(
        {
            "schema/sources.yaml": {"sources": {"hb": {"kind": "files", "path": "../handbook"}}},
        }
    )
    tree(
        {
            "handbook/intro.md": "---\ntitle: Intro\ndate: 2024-01-02\n---\nHello.\n",
            "handbook/sub/part.json": json.dumps({"title": "Part", "n": 3}),
            "handbook/ignored.txt": "nope",
        },
        ".",
    )
    [report] = run(root)
    assert report.errors == [] and report.added == 2
    recs = stored_records(root, "hb")
    assert recs["intro.md"] == {"title": "Intro", "date": "2024-01-02", "body": "Hello."}
    assert recs["sub/part.json"] == {"title": "Part", "n": 3}
    assert run(root)[0].unchanged == 2
    (root.parent / "handbook" / "intro.md").unlink()
    assert run(root, allow_shrink=True)[0].removed == ["intro.md"]


def test_files_source_keys_drop_the_extension_and_urls_are_kb_relative(tree):
    root = tree({"schema/sources.yaml": {"sources": {"hb": {"kind": "files", "path": "hb"}}}})
    tree({"hb/guide/setup.md": "# Setup\n", "hb/guide/setup.json": '{"title": "Setup"}'})
    [report] = run(root)
    assert report.errors == [] and report.added == 2
    entries = manifest(root, "hb")["records"]
    keys = {rid: e["key"] for rid, e in entries.items()}
    # Files are read in sorted order: the .json one claims the plain key, the .md one gets a hash.
    assert keys["guide/setup.json"] == "guide/setup"
    assert keys["guide/setup.md"].startswith("guide/setup-") and "/" not in keys["guide/setup.md"][6:]
    assert {e["url"] for e in entries.values()} == {"file:hb/guide/setup.md", "file:hb/guide/setup.json"}


def test_files_source_markdown_becomes_the_layer1_body(tree):
    root = tree({"schema/sources.yaml": {"sources": {"hb": {"kind": "files", "path": "hb"}}}})
    tree({"hb/reset.md": "---\ntitle: Reset\n---\nHold the button for 8 seconds.\n"})
    run(root)
    transform(root, load_sources(root))
    text = (root / "layer1_sources/hb/reset.md").read_text("utf-8")
    assert "# Reset\n\nHold the button for 8 seconds." in text and "## Body" not in text


def test_files_source_bad_json_is_reported(tree):
    root = tree(
        {"schema/sources.yaml": {"sources": {"hb": {"kind": "files", "path": "hb", "glob": "*.json"}}}}
    )
    tree({"hb/a.json": "{not json", "hb/b.json": "[1]", "hb/c.json": '{"title": "ok"}'})
    [report] = run(root)
    assert len(report.errors) == 2 and report.added == 1 and report.removed == []
    assert "record 'a.json'" in report.errors[0]


def test_file_url_export(tree):
    root = tree(
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
            "export/page1.json": json.dumps({"data": [{"id": 1, "title": "a"}], "next": "page2.json"}),
            "export/page2.json": json.dumps({"data": [{"id": 2, "title": "b"}], "next": None}),
        }
    )
    [report] = run(root)
    assert report.errors == [] and report.added == 2


# ---- configuration ------------------------------------------------------------------------------------


def test_unknown_key_names_file_and_key(tree, api):
    root = kb(tree, {"items": {"kind": "http", "url": "http://127.0.0.1:1/x", "itmes": "data"}})
    with pytest.raises(ConfigError) as exc:
        load_sources(root)
    assert (
        "sources.yaml" in str(exc.value) and "itmes" in str(exc.value) and "sources.items" in str(exc.value)
    )
    result = CliRunner().invoke(app, ["--root", str(root), "fetch"])
    assert result.exit_code == 2 and "itmes" in result.output


def test_unknown_pagination_key(tree):
    root = kb(
        tree,
        {
            "items": {
                "kind": "http",
                "url": "http://127.0.0.1:1/x",
                "pagination": {"style": "page", "sise": 3},
            }
        },
    )
    with pytest.raises(ConfigError, match=r"pagination.*sise"):
        load_sources(root)


def test_yaml_tags_are_rejected(tree):
    root = tree({"schema/sources.yaml": "sources: !!python/object/apply:os.system ['echo hi']\n"})
    with pytest.raises(ConfigError, match="sources.yaml"):
        load_sources(root)
    result = CliRunner().invoke(app, ["--root", str(root), "fetch"])
    assert result.exit_code == 2


def test_unknown_source_name_for_only(tree, api):
    url = api.add("items", records(1))
    root = kb(tree, {"items": http_source(url)})
    with pytest.raises(ConfigError, match="nope"):
        run(root, only="nope")


def test_user_supplied_client_is_used(tree, api):
    url = api.add("items", records(3))
    root = kb(tree, {"items": http_source(url)})
    with httpx.Client() as client:
        [report] = run(root, client=client)
    assert report.added == 3
