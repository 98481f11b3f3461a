"""``wikic init PATH --from``: sources.yaml inferred from a sample, against real loopback servers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from apiserver import ApiServer
from conftest import REPO
from farmbot_kb import available, load
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.core.config import load_sources
from wikic.fetch.run import fetch
from wikic.onboard.infer import onboard, redact_headers, redact_url, source_name
from wikic.transform.run import transform

runner = CliRunner()


def records(n: int) -> list[dict]:
    return [
        {
            "uid": f"rec-{i:03d}",
            "headline": f"How to water plant {i}",
            "text": f"## Steps\n\nFill the tank for plant {i}.\n\n- Check the level\n- Add [feed](https://x.test/f)",
            "permalink": f"https://help.example.com/a/{i}",
            "updated": f"2025-01-{i % 28 + 1:02d}",
            "score": i,
        }
        for i in range(n)
    ]


def fetch_all(root: Path, environ: dict[str, str] | None = None) -> dict[str, int]:
    config = load_sources(root)
    reports = fetch(root, config, sleep=lambda s: None, environ=environ)
    for r in reports:
        assert not r.errors, r.errors
    for r in transform(root, config):
        assert not r.errors, r.errors
    return {r.source: r.records for r in reports}


def sources_yaml(root: Path) -> tuple[str, dict]:
    text = (root / "schema" / "sources.yaml").read_text("utf-8")
    return text, yaml.safe_load(text)["sources"]


@pytest.mark.parametrize(
    "style, options",
    [
        ("next_field", {"items": "data", "next_field": "links.next"}),
        ("link_header", {"items": ""}),
        ("page", {"items": "result.items"}),
        ("offset", {"items": "data"}),
        ("cursor", {"items": "data", "cursor_field": "paging.after", "cursor_param": "after"}),
    ],
)
def test_every_pagination_style_is_detected_and_fetches_every_record(
    tmp_path: Path, api: ApiServer, style: str, options: dict
) -> None:
    url = api.add("guides", records(37), style=style, page_size=10, **options)
    report = onboard(tmp_path / "kb", [url])
    text, sources = sources_yaml(tmp_path / "kb")
    guides = sources["guides"]
    assert guides["pagination"]["style"] == style
    assert (guides["id"], guides["title"], guides["body"]) == ("uid", "headline", "text")
    assert guides["url_field"] == "permalink" and guides["updated_at"] == "updated"
    assert guides.get("items", "") == options["items"]
    assert report.todos == [] and "TODO:" not in text
    assert "# 'links.next' holds" in text or style != "next_field"  # every guess says what was seen
    assert fetch_all(tmp_path / "kb") == {"guides": 37}
    doc = (tmp_path / "kb" / "layer1_sources" / "guides" / "rec-036.md").read_text("utf-8")
    assert "title: How to water plant 36" in doc and "url: https://help.example.com/a/36" in doc


@pytest.mark.skipif(not available(), reason="FarmBot corpus not found in ../shared/corpora/farmbot")
@pytest.mark.parametrize("articles_style", ["next_field", "page"])
def test_farmbot_api_is_onboarded_with_no_edit(tmp_path: Path, api: ApiServer, articles_style: str) -> None:
    """Articles in two pagination styles and crops by cursor: every record arrives as written."""
    articles = api.add("articles", load("articles"), style=articles_style, page_size=50, items="articles")
    crops = api.add(
        "crops", load("crops"), style="cursor", page_size=40, items="result.crops", cursor_field="meta.next"
    )
    result = runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", articles, "--from", crops])
    assert result.exit_code == 0, result.output
    text, sources = sources_yaml(tmp_path / "kb")
    assert "TODO:" not in text
    assert sources["articles"]["cleanups"] == ["liquid"]  # Jekyll include tags seen in the bodies
    assert sources["crops"]["id"] == "slug" and sources["crops"]["title"] == "name"
    assert "body" not in sources["crops"]  # plain-text descriptions: the default rendering keeps the fields
    assert fetch_all(tmp_path / "kb") == {"articles": 239, "crops": 248}


def test_secrets_in_the_url_and_headers_become_env_placeholders(tmp_path: Path, api: ApiServer) -> None:
    url = api.add("faq", records(25), style="page", page_size=10, require={"X-Api-Token": "s3cret"})
    result = runner.invoke(
        app,
        ["init", str(tmp_path / "kb"), "--from", url + "&api_key=k3y", "--header", "X-Api-Token: s3cret"],
    )
    assert result.exit_code == 0, result.output
    assert "export FAQ_API_KEY=" in result.output and "export FAQ_X_API_TOKEN=" in result.output
    assert "inspecting faq (" in result.output and "api_key=${FAQ_API_KEY}" in result.output
    assert "k3y" not in result.output and "s3cret" not in result.output  # not on the console either
    written = "".join(p.read_text("utf-8") for p in (tmp_path / "kb").rglob("*") if p.is_file())
    assert "k3y" not in written and "s3cret" not in written
    text, sources = sources_yaml(tmp_path / "kb")
    assert "s3cret" not in text and "k3y" not in text
    assert sources["faq"]["headers"] == {"X-Api-Token": "${FAQ_X_API_TOKEN}"}
    assert sources["faq"]["url"].endswith("api_key=${FAQ_API_KEY}")
    (failed,) = fetch(tmp_path / "kb", load_sources(tmp_path / "kb"), environ={"FAQ_X_API_TOKEN": "s3cret"})
    assert failed.errors == ["source 'faq': url needs environment variable FAQ_API_KEY; set it and rerun"]
    api.log.clear()
    env = {"FAQ_API_KEY": "k3y", "FAQ_X_API_TOKEN": "s3cret"}
    assert fetch_all(tmp_path / "kb", env) == {"faq": 25}
    assert {r.query.get("api_key") for r in api.requests("faq")} == {"k3y"}  # sent on every page
    stored = "".join(p.read_text("utf-8") for p in (tmp_path / "kb" / "layer0_raw").rglob("*.json"))
    assert "k3y" not in stored and "s3cret" not in stored and "${FAQ_API_KEY}" in stored


def test_a_secret_in_an_origin_that_is_no_url_is_never_printed(tmp_path: Path) -> None:
    result = runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", "htps://api.test/x?api_key=k3y"])
    assert result.exit_code == 2 and "api_key=${" in result.output and "k3y" not in result.output


def test_redaction_keeps_the_scheme_and_names_the_variable() -> None:
    url, values, about = redact_url("https://u:pw@api.test/v1/items?page=1&access_token=abc&q=x y", "shop")
    assert (
        url
        == "https://${SHOP_USER}:${SHOP_PASSWORD}@api.test/v1/items?page=1&access_token=${SHOP_ACCESS_TOKEN}&q=x%20y"
    )
    assert values == {"SHOP_USER": "u", "SHOP_PASSWORD": "pw", "SHOP_ACCESS_TOKEN": "abc"}
    assert set(about) == set(values)
    headers, about = redact_headers({"Authorization": "Bearer abc", "Accept": "application/json"}, "shop")
    assert headers == {"Authorization": "Bearer ${SHOP_API_TOKEN}", "Accept": "application/json"}
    assert list(about) == ["SHOP_API_TOKEN"]


@pytest.mark.parametrize(
    "origin, name",
    [
        ("https://x.test/api/crops?page=1", "crops"),
        ("https://x.test/api/v2/help_articles.json?limit=10", "help_articles"),
        ("examples/api/faq/page-1.json", "faq"),
        ("file:export/Blog Posts/2.json", "blog-posts"),
        ("../handbook/", "handbook"),
    ],
)
def test_sources_are_named_after_the_last_meaningful_path_segment(origin: str, name: str) -> None:
    assert source_name(origin) == name


class StaticServer:
    """Serves fixed bodies by path on 127.0.0.1: for inputs the paged API server never produces."""

    def __init__(self, pages: dict[str, tuple[str, bytes]]):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (stdlib name)
                kind, body = pages.get(self.path.split("?")[0], ("text/plain", b"not found"))
                self.send_response(200 if self.path.split("?")[0] in pages else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()  # close at once

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def static() -> Iterator[StaticServer]:
    server = StaticServer(
        {
            "/help": ("text/html; charset=utf-8", b"<!doctype html><html><body>Help centre</body></html>"),
            "/status": ("application/json", json.dumps({"status": "ok", "count": 3, "tags": ["a"]}).encode()),
        }
    )
    try:
        yield server
    finally:
        server.close()


def bad_inputs(static: StaticServer, api: ApiServer, tmp_path: Path) -> dict[str, tuple[str, str]]:
    loop = api.add("loop", records(30), page_size=10)
    api.fault("loop", "loop", times=10, page=1)  # page 2's next link points at page 2 again
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("not markdown", "utf-8")
    return {
        "html": (static.url + "/help", "returned HTML"),
        "no records": (static.url + "/status", "no list of records"),
        "loop": (loop, "pagination loops"),
        "empty folder": (str(tmp_path / "empty"), "no .md or .json files"),
        "missing": (static.url + "/nothing", "HTTP 404"),
        "no credentials": (api.add("private", records(3), require={"X-Key": "k"}), "pass them with --header"),
    }


@pytest.mark.parametrize("case", ["html", "no records", "loop", "empty folder", "missing", "no credentials"])
def test_bad_inputs_exit_2_with_a_clear_error_and_write_nothing(
    tmp_path: Path, static: StaticServer, api: ApiServer, case: str
) -> None:
    origin, message = bad_inputs(static, api, tmp_path)[case]
    good = api.add("fine", records(5), page_size=10)
    result = runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", good, "--from", origin])
    assert result.exit_code == 2, result.output
    assert message in result.output and origin in result.output
    assert not (tmp_path / "kb").exists()  # the good source was inspected, yet nothing was written


def test_ambiguous_guesses_are_marked_todo_and_reported(tmp_path: Path, api: ApiServer) -> None:
    rows = [{"code": f"C{i}", "label_a": f"Alpha {i}", "extra": [{"x": 1}, {"x": 2}]} for i in range(50)]
    url = api.add("things", rows, style="none", items="data")
    result = runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", url])
    assert result.exit_code == 0, result.output
    text, sources = sources_yaml(tmp_path / "kb")
    assert sources["things"]["id"] == "code" and sources["things"]["title"] == "label_a"
    todos = [line for line in text.splitlines() if "TODO" in line]
    assert any("title:" in t and "no field is named like a title" in t for t in todos)
    assert any("pagination: none" in t and "exactly 50 records" in t for t in todos)
    assert "TODO things.pagination" in result.output and "TODO things.title" in result.output


def test_a_folder_becomes_a_files_source(tmp_path: Path) -> None:
    docs = tmp_path / "handbook"
    (docs / "hr").mkdir(parents=True)
    (docs / "hr" / "leave.md").write_text("---\ntitle: Leave\nupdated: 2025-02-01\n---\nText.\n", "utf-8")
    (docs / "intro.md").write_text("# Welcome\n\nHello there, new colleague.\n", "utf-8")
    (docs / "faq-v2.md").write_text("Plain text with no heading at all.\n", "utf-8")
    result = runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", str(docs), "--name", "hb"])
    assert result.exit_code == 0, result.output
    text, sources = sources_yaml(tmp_path / "kb")
    assert sources["hb"] == {
        "kind": "files",
        "path": "../handbook",
        "glob": "**/*.md",
        "title": "title",
        "updated_at": "updated",
    }
    assert (
        "1 of 3 files have a frontmatter title; 1 take their first '# ' heading and 1 their file name" in text
    )
    wiki = yaml.safe_load((tmp_path / "kb" / "schema" / "wiki.yaml").read_text("utf-8"))
    assert wiki["topics"] == [{"source": "hb"}]
    fetch_all(tmp_path / "kb")
    titles = sorted(
        yaml.safe_load(p.read_text("utf-8").split("---")[1])["title"]
        for p in (tmp_path / "kb" / "layer1_sources" / "hb").rglob("*.md")
    )
    assert titles == ["Faq v2", "Leave", "Welcome"]


def test_a_folder_of_json_records_without_a_body_renders_their_fields(tmp_path: Path) -> None:
    """A folder of crop records ('name', 'spread', a plain 'description'; no 'body'): a files source
    reads a 'body' field by default, so every record failed transform until init said there is none."""
    crops = tmp_path / "crops"
    crops.mkdir()
    for n, name in enumerate(["Green Zucchini", "Kale", "Radish"]):
        record = {"name": name, "spread": 30 + n, "description": f"{name} grows fast in a raised bed."}
        (crops / f"{name.lower().replace(' ', '-')}.json").write_text(json.dumps(record), "utf-8")
    result = runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", str(crops)])
    assert result.exit_code == 0, result.output
    _, sources = sources_yaml(tmp_path / "kb")
    assert sources["crops"]["title"] == "name" and sources["crops"]["body"] == ""
    fetch_all(tmp_path / "kb")
    zucchini = (tmp_path / "kb" / "layer1_sources" / "crops" / "green-zucchini.md").read_text("utf-8")
    assert "title: Green Zucchini" in zucchini and "Spread" in zucchini


def test_init_refuses_an_existing_kb_and_mismatched_names(tmp_path: Path, api: ApiServer) -> None:
    url = api.add("x", records(3))
    (tmp_path / "kb" / "schema").mkdir(parents=True)
    (tmp_path / "kb" / "schema" / "sources.yaml").write_text("sources: {}\n", "utf-8")
    assert runner.invoke(app, ["init", str(tmp_path / "kb"), "--from", url]).exit_code == 2
    result = runner.invoke(app, ["init", str(tmp_path / "new"), "--from", url, "--from", url])
    assert result.exit_code == 2 and "two sources would be named 'x'" in result.output
    result = runner.invoke(app, ["init", str(tmp_path / "new"), "--from", url, "--name", "Bad Name"])
    assert result.exit_code == 2 and "--name 'Bad Name'" in result.output


def test_the_example_export_is_onboarded_like_the_hand_written_sources(tmp_path: Path) -> None:
    """``make demo-onboard`` in a test: init --from on examples/api, then fetch, plan and compile, in
    a KB inside a hidden folder as the demo's .wikic/demo-onboard is."""
    root = tmp_path / ".wikic" / "demo"
    pages = [str(REPO / "examples" / "api" / s / "page-1.json") for s in ("faq", "plants", "blog")]
    result = runner.invoke(app, ["init", str(root), *(a for p in pages for a in ("--from", p))])
    assert result.exit_code == 0, result.output
    _, sources = sources_yaml(root)
    hand = yaml.safe_load((REPO / "schema" / "sources.yaml").read_text("utf-8"))["sources"]
    for name, cfg in hand.items():
        inferred = {k: sources[name][k] for k in cfg if k != "url"}
        assert inferred == {k: v for k, v in cfg.items() if k != "url"}, name
    assert fetch_all(root) == {"faq": 47, "plants": 53, "blog": 16}
    planned = runner.invoke(app, ["--root", str(root), "plan"])
    assert planned.exit_code == 0, planned.output
    assert "+  # 'category' splits the 43 records into 7 groups" in planned.output
    assert "+    group_by: category" in planned.output
    written = runner.invoke(app, ["--root", str(root), "plan", "--write"])
    assert written.exit_code == 0
    # 'Getting started' would quote one FAQ (how to reset): one document's sections are no guide
    assert "or a guide of one document's sections, which its topic page holds): guide getting-started" in (
        " ".join(written.output.split())
    )
    assert runner.invoke(app, ["--root", str(root), "compile"]).exit_code == 0
    guides = sorted((root / "wiki" / "guides").glob("*.md"))
    assert guides and all(
        len(yaml.safe_load(g.read_text("utf-8").split("---")[1])["sources"]) >= 2 for g in guides
    )
    found = runner.invoke(app, ["--root", str(root), "search", "vacation mode", "--json"])
    assert found.exit_code == 0 and '"path": "wiki/' in found.output  # wiki pages are indexed too
