"""The fault matrix: what an attacker or a careless operator does to a KB, and what survives.

A small KB (30 FAQ records from a loopback API, three hand-written handbook files, an offline
wiki) is built once. Each scenario starts from a fresh copy of it, breaks something (the API
answers badly, a file is deleted, edited or corrupted, the configuration is wrong), runs the
commands an operator would, as the CLI runs them, and, where wikic advises a repair, the repair.

- **survived**: every command ended with a documented exit code (0, 1 or 2) and a message, never
  a traceback;
- **data lost**: layer-0 snapshots, current records, layer-1 files and wiki pages of the intact
  KB that are missing or altered at the end (the scenario's own deliberate change aside).

``tests/test_faults.py`` runs every scenario; ``bench/bench_faults.py`` prints the summary.
"""

from __future__ import annotations

import json
import os
import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from apiserver import ApiServer, Fault
from conftest import copy_kb
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.compile.searchindex.store import DB_PATH
from wikic.fetch.layer0 import LAYER0, MANIFEST

RECORDS = [
    {
        "id": f"q{i:02d}",
        "title": f"Question {i}",
        "category": ("setup", "care", "orders")[i % 3],
        "body": f"Answer {i}: fill the tank with {i + 1} litres of water and wait {i + 2} days.",
    }
    for i in range(30)
]
HANDBOOK = {
    f"handbook/{name}.md": f"---\ntitle: {name.title()}\n---\n# {name.title()}\n\nThe {name} step comes first.\n"
    for name in ("unpacking", "planting", "cleaning")
}
WIKI_YAML = {"topics": [{"source": "faq", "group_by": "category"}, {"source": "handbook"}]}
runner = CliRunner()


def build_base(root: Path, api: ApiServer) -> None:
    """Fetch, transform and compile the small KB into ``root`` (the API must serve 'faq')."""
    sources = {
        "faq": {
            "kind": "http",
            "url": api.first_url("faq"),
            "items": "data",
            "pagination": {"style": "next_field"},
            "headers": {"Authorization": "Bearer ${FAQ_TOKEN}"},
            "body": "body",
            "timeout": 1.0,
            "retries": 1,
            "max_bytes": 1_000_000,
        },
        "handbook": {"kind": "files", "path": "handbook", "glob": "*.md"},
    }
    files: dict[str, Any] = {
        "schema/sources.yaml": yaml.safe_dump({"sources": sources}, sort_keys=False),
        "schema/wiki.yaml": yaml.safe_dump(WIKI_YAML),
        "schema/librarian.md": "# Librarian rules\n\nQuote the sources.\n",
        **HANDBOOK,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    for command in (["fetch"], ["transform"], ["compile"]):
        result = cli(root, command)
        assert result.exit_code == 0, result.output


def serve(api: ApiServer) -> None:
    """(Re)serve the intact API: 30 records, pages of 10, ETags, a bearer token required."""
    api.add(
        "faq", [dict(r) for r in RECORDS], page_size=10, etag=True, require={"Authorization": "Bearer tok"}
    )


def cli(root: Path, args: list[str], env: dict[str, str | None] | None = None):
    return runner.invoke(app, ["--root", str(root), *args], env={"FAQ_TOKEN": "tok", **(env or {})})


# --- what the intact KB holds ---------------------------------------------------------------------


def holdings(root: Path) -> dict[str, bytes]:
    """Everything that must not be lost: snapshot files, current records, layer-1 files, pages."""
    out: dict[str, bytes] = {}
    for folder in (LAYER0, "layer1_sources", "wiki"):
        for p in (root / folder).rglob("*") if (root / folder).is_dir() else ():
            if (
                p.is_file()
                and p.name not in (MANIFEST, "log.md", "index.md")
                and "/index/" not in p.as_posix()
            ):
                out[p.relative_to(root).as_posix()] = p.read_bytes()
    for manifest in (root / LAYER0).glob(f"*/{MANIFEST}"):
        try:
            records = json.loads(manifest.read_text("utf-8")).get("records", {})
        except (OSError, ValueError):
            records = {}
        for rid, entry in records.items():
            if entry.get("status") == "current":
                out[f"record:{manifest.parent.name}:{rid}"] = entry.get("sha256", "").encode()
    return out


def lost(before: dict[str, bytes], after: dict[str, bytes], allowed: Callable[[str], bool]) -> list[str]:
    return sorted(k for k, v in before.items() if after.get(k) != v and not allowed(k))


# --- scenarios ------------------------------------------------------------------------------------


@dataclass
class Scenario:
    name: str
    setup: Callable[[Path, ApiServer], None] = lambda root, api: None
    commands: list[list[str]] = field(default_factory=lambda: [["fetch"], ["transform"], ["compile"]])
    env: dict[str, str | None] = field(default_factory=dict)
    may_change: Callable[[str], bool] = lambda key: False  # what the scenario changes on purpose
    root: Callable[[Path], Path] = lambda root: root  # where the commands run (a wrong --root)


def fault(kind: str, **kwargs: Any) -> Callable[[Path, ApiServer], None]:
    def setup(root: Path, api: ApiServer) -> None:
        api.collections["faq"].faults.append(Fault(kind, **kwargs))

    return setup


def records(change: Callable[[list[dict]], list[dict]]) -> Callable[[Path, ApiServer], None]:
    def setup(root: Path, api: ApiServer) -> None:
        coll = api.collections["faq"]
        coll.records = change(coll.records)

    return setup


def body(raw: bytes) -> Callable[[Path, ApiServer], None]:
    """Every page answers ``raw`` with status 200."""

    def setup(root: Path, api: ApiServer) -> None:
        real = api._respond

        def respond(path, query, host, headers, h):
            if path.strip("/") == "faq":
                return 200, raw, {"Content-Type": "application/json"}
            return real(path, query, host, headers, h)

        api._respond = respond  # type: ignore[method-assign]

    return setup


def next_link(link: str) -> Callable[[Path, ApiServer], None]:
    def setup(root: Path, api: ApiServer) -> None:
        api._next = lambda *a, **k: link  # type: ignore[method-assign]

    return setup


def edit(rel: str, change: Callable[[Path], None]) -> Callable[[Path, ApiServer], None]:
    return lambda root, api: change(root / rel)


def first_snapshot(root: Path) -> Path:
    entry = json.loads((root / LAYER0 / "faq" / MANIFEST).read_text("utf-8"))["records"]["q05"]
    return root / entry["snapshot"]


def on_snapshot(change: Callable[[Path], None]) -> Callable[[Path, ApiServer], None]:
    return lambda root, api: change(first_snapshot(root))


def forge(path: Path) -> None:
    data = json.loads(path.read_text("utf-8"))
    data["record"]["body"] = "Forged."
    path.write_text(json.dumps(data), "utf-8")


def corrupt_db(root: Path, api: ApiServer) -> None:
    cli(root, ["search", "tank"])
    (root / DB_PATH).write_bytes(b"garbage" * 500)


def deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = [value]
    return value


def symlink_out(root: Path, api: ApiServer) -> None:
    os.symlink("/etc/passwd", root / "handbook/passwd.md")


def dot_dir(root: Path) -> Path:
    """A copy of the KB below a hidden folder ('~/.kb/mywiki')."""
    hidden = root.parent / ".kb" / "mywiki"
    if hidden.exists():
        shutil.rmtree(hidden)
    shutil.copytree(root, hidden, symlinks=True)
    return hidden


def kill_compile(root: Path, api: ApiServer) -> None:
    """A compile killed between writing its pages and its index, with the wiki deleted first."""
    import wikic.compile.run as compile_module

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    shutil.rmtree(root / "wiki")
    real = compile_module.write_index
    compile_module.write_index = killed  # type: ignore[assignment]
    try:
        cli(root, ["compile"])
    except KeyboardInterrupt:
        pass
    finally:
        compile_module.write_index = real


def template_escape(root: Path, api: ApiServer) -> None:
    config = yaml.safe_load((root / "schema/sources.yaml").read_text("utf-8"))
    config["sources"]["faq"]["template"] = "t.md.j2"
    (root / "schema/sources.yaml").write_text(yaml.safe_dump(config), "utf-8")
    (root / "schema/templates").mkdir(exist_ok=True)
    (root / "schema/templates/t.md.j2").write_text(
        "{{ self.__init__.__globals__.__builtins__.__import__('os').system('touch PWNED') }}\n", "utf-8"
    )


API = [
    Scenario("empty answer {data: []}", body(b'{"data": []}')),
    Scenario("60% of the records gone", records(lambda r: r[:12])),
    Scenario("500 on every request", fault("500", times=99)),
    Scenario("500 once, then fine", fault("500", times=1)),
    Scenario("429 with Retry-After: 0", fault("429", times=1)),
    Scenario("429 with Retry-After: 3600", fault("429", times=9, retry_after="3600")),
    Scenario("truncated body", fault("truncate", times=9)),
    Scenario("malformed JSON", fault("malformed", times=9)),
    Scenario("slower than the timeout", fault("slow", times=9, delay=1.5)),
    Scenario("response over max_bytes", fault("oversize", times=9, size=2_000_000, declare_length=False)),
    Scenario("redirect to another host", fault("redirect", times=1)),
    Scenario("next link loops", fault("loop", times=9)),
    Scenario("next link to file:///etc/passwd", next_link("file:///etc/passwd")),
    Scenario("next link to ftp:", next_link("ftp://127.0.0.1/faq")),
    Scenario("HTML instead of JSON", body(b"<html><body>Maintenance</body></html>")),
    Scenario("items is not a list", body(b'{"data": {"id": 1}}')),
    Scenario("JSON nested 100,000 deep", body(b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")),
    Scenario("a record nested 200 deep", records(lambda r: [*r[:-1], dict(r[-1], tree=deep(200))])),
    Scenario("a record without an id", records(lambda r: [*r, {"title": "no id"}])),
    Scenario("duplicate ids", records(lambda r: [*r, dict(r[0], title="twin")])),
    Scenario("ids that climb out ('../../x')", records(lambda r: [*r, {"id": "../../etc/x", "title": "x"}])),
    Scenario("non-UTF-8 bytes", body(b'{"data": [{"id": "a", "title": "caf\xe9"}]}')),
    Scenario(
        "one record changed",
        records(lambda r: [dict(r[0], body="Updated."), *r[1:]]),
        may_change=lambda k: k.startswith(("layer1_sources/faq/q00", "record:faq:q00", "wiki/")),
    ),
    Scenario("token with a line break", env={"FAQ_TOKEN": "tok\r\nX-Evil: 1"}),
    Scenario("token missing from the environment", env={"FAQ_TOKEN": None}),
]
LOCAL = [
    Scenario(
        "a snapshot deleted",
        on_snapshot(lambda p: p.unlink()),
        [["verify"], ["transform"], ["fetch", "--repair"], ["verify"], ["transform"]],
    ),
    Scenario(
        "a snapshot truncated",
        on_snapshot(lambda p: p.write_bytes(p.read_bytes()[:50])),
        [["verify"], ["transform"], ["fetch", "--repair"], ["verify"]],
    ),
    Scenario(
        "a snapshot forged",
        on_snapshot(forge),
        [["verify"], ["transform"], ["fetch", "--repair"], ["verify"]],
    ),
    Scenario(
        "the manifest deleted",
        edit(f"{LAYER0}/faq/{MANIFEST}", lambda p: p.unlink()),
        [["verify"], ["fetch", "--repair"], ["verify"], ["transform"], ["compile"]],
    ),
    Scenario("search index corrupt", corrupt_db, [["search", "tank"], ["ask", "How much water?"]]),
    Scenario(
        "sources.yaml not UTF-8",
        edit("schema/sources.yaml", lambda p: p.write_bytes(p.read_bytes() + b"# caf\xe9\n")),
    ),
    Scenario(
        "a layer-1 file with broken frontmatter",
        edit("layer1_sources/handbook/planting.md", lambda p: p.write_text("---\ntitle: [x\n---\nbody\n")),
        [["compile"], ["check"], ["search", "tank"], ["ask", "How much water?"]],
        may_change=lambda k: k == "layer1_sources/handbook/planting.md",
    ),
    Scenario(
        "layer 1 emptied",
        lambda root, api: shutil.rmtree(root / "layer1_sources"),
        [["compile"], ["check"], ["search", "tank"], ["transform"], ["compile"]],
    ),
    Scenario("a symlink to /etc/passwd in a files source", symlink_out),
    Scenario("a template that runs a command", template_escape, [["transform"]]),
    Scenario(
        "a page folder of '../../x'",
        edit(
            "schema/wiki.yaml",
            lambda p: p.write_text("page_types:\n  topic: {folder: ../../x}\n" + p.read_text()),
        ),
        [["compile"], ["check"]],
    ),
    Scenario("the KB below a hidden folder", commands=[["compile"], ["check"]], root=dot_dir),
    Scenario(
        "--root without schema/", commands=[["verify"], ["check"], ["search", "x"]], root=lambda r: r / "wiki"
    ),
    Scenario("a compile killed mid-write", kill_compile, [["compile"], ["check"]]),
]
SCENARIOS = API + LOCAL


@dataclass
class Outcome:
    name: str
    survived: bool
    lost: list[str]
    codes: list[int]
    problem: str = ""


def run_scenario(scenario: Scenario, base: Path, work: Path, api: ApiServer) -> Outcome:
    """Copy ``base`` to ``work``, break it as ``scenario`` says and run its commands."""
    if work.exists():
        shutil.rmtree(work)
    copy_kb(base, work, symlinks=True)
    serve(api)
    real_respond, real_next = api._respond, api._next
    codes: list[int] = []
    problem = ""
    try:
        before = holdings(work)
        scenario.setup(work, api)
        root = scenario.root(work)
        for command in scenario.commands:
            result = cli(root, command, scenario.env)
            codes.append(result.exit_code)
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                problem = "".join(traceback.format_exception(result.exception))[-600:]
                break
            if result.exit_code not in (0, 1, 2):
                problem = f"{command}: exit {result.exit_code}: {result.output[-300:]}"
                break
        if (work / "PWNED").exists() or Path("PWNED").exists():
            problem = problem or "a template ran a command"
        after = holdings(root if (root / "schema").is_dir() else work)
        gone = lost(before, after, scenario.may_change)
    finally:
        api._respond, api._next = real_respond, real_next  # type: ignore[method-assign]
    return Outcome(scenario.name, not problem, gone, codes, problem)
