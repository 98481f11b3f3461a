"""Inputs an outside tester brought, each a test: symbolic links, page ids and folders that would
overwrite the KB's own files, files that crashed a command, and sources whose compiled pages
failed ``check``. No traceback anywhere: a clear error naming the file (exit 2 for what a user
must fix in the configuration), and nothing compile publishes fails ``check``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from wikic.check.run import check
from wikic.cli.app import app
from wikic.compile.run import compile_wiki
from wikic.transform.layer1 import LAYER1

runner = CliRunner()


def wikic(root: Path, *args: str) -> tuple[int, str]:
    """Run a command the way a user does, in its own process (the fast path for search and ask
    included); (exit code, stdout and stderr), with no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "wikic", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    return proc.returncode, " ".join(out.split())


def faq(title: str, body: str) -> str:
    """A hand-maintained FAQ entry that lands on the troubleshooting topic page."""
    return f"---\ntitle: {json.dumps(title)}\ncategory: troubleshooting\n---\n\n# {title}\n\n{body}\n"


# ---- symbolic links are never followed -----------------------------------------------------------


def test_a_symlink_in_layer1_is_not_published_indexed_or_answered_and_check_reports_it(
    example_kb: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(faq("Root password", "The root password is hunter2-zebra for every garden."), "utf-8")
    (example_kb / LAYER1 / "faq" / "passwd.md").symlink_to(secret)
    (example_kb / LAYER1 / "elsewhere").symlink_to(tmp_path)  # a folder link: not walked either
    compile_wiki(example_kb)
    wiki = "".join(p.read_text("utf-8") for p in (example_kb / "wiki").rglob("*.md"))
    assert "hunter2" not in wiki
    code, out = wikic(example_kb, "search", "root password hunter2")
    assert code == 0 and "hunter2" not in out and "passwd.md" not in out
    code, out = wikic(example_kb, "ask", "What is the root password?")
    assert "hunter2" not in out
    code, out = wikic(example_kb, "check")
    assert code == 1
    assert f"{LAYER1}/faq/passwd.md: error [symlink] a symbolic link to {secret}" in out
    assert f"{LAYER1}/elsewhere: error [symlink]" in out


def test_a_symlink_in_schema_or_wiki_is_not_read(example_kb: Path, tmp_path: Path) -> None:
    page = example_kb / "wiki" / "topics" / "watering.md"
    target = tmp_path / "page.md"
    target.write_text(page.read_text("utf-8").replace("Watering", "Hijacked"), "utf-8")
    page.unlink()
    page.symlink_to(target)
    code, out = wikic(example_kb, "check")
    assert code == 1 and "wiki/topics/watering.md: error [symlink]" in out
    code, out = wikic(example_kb, "search", "Hijacked")
    assert "Hijacked" not in out
    rules = example_kb / "schema" / "librarian.md"
    moved = tmp_path / "librarian.md"
    rules.rename(moved)
    rules.symlink_to(moved)
    code, out = wikic(example_kb, "compile")
    assert code == 2 and "schema/librarian.md: a symbolic link, which wikic never follows" in out
    assert target.read_text("utf-8").startswith("---")  # the link's target was never written


@pytest.mark.parametrize(("folder", "command"), [("wiki/topics", "compile"), (f"{LAYER1}/faq", "transform")])
def test_a_command_never_writes_through_a_linked_folder(
    example_kb: Path, tmp_path: Path, folder: str, command: str
) -> None:
    """A folder of the wiki or of layer 1 replaced by a link to one outside: compile and
    transform, which write there, stop before writing anything, naming the link."""
    outside = tmp_path / "outside"
    os.rename(example_kb / folder, outside)
    (outside / "algae.md").write_text("# Mine\n", "utf-8")  # a page the compile would rewrite
    (example_kb / folder).symlink_to(outside)
    if command == "transform":  # a file transform would write again
        os.remove(next(outside.glob("*.md")))
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    code, out = wikic(example_kb, command)
    assert code == 2 and f"{folder}: a symbolic link to a folder, which wikic never writes through" in out
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_a_template_reached_through_a_symlink_is_refused(tree, tmp_path: Path) -> None:
    (tmp_path / "outside.md.j2").write_text("# {{ record.title }}\n", "utf-8")
    root = tree(
        {
            "schema/sources.yaml": {
                "sources": {"docs": {"kind": "files", "path": "docs", "template": "page.md.j2"}}
            },
            "docs/a.md": "---\ntitle: A\n---\nText.\n",
        }
    )
    (root / "schema" / "templates").mkdir()
    (root / "schema" / "templates" / "page.md.j2").symlink_to(tmp_path / "outside.md.j2")
    assert runner.invoke(app, ["--root", str(root), "fetch"]).exit_code == 0
    result = runner.invoke(app, ["--root", str(root), "transform"])
    assert (
        result.exit_code == 1 and "page.md.j2 (a symbolic link, which wikic never follows)" in result.output
    )


# ---- page ids and folders never address the KB's own files ---------------------------------------


GROVE = {"title": "Grove 6", "sources": ["specs:grove-6"], "match": ["Grove 6"]}


@pytest.mark.parametrize(
    ("page_types", "devices", "message"),
    [
        (
            {"device": {"folder": ""}},
            [{"id": "log", **GROVE}],
            "device id 'log' would be written to wiki/log.md",
        ),
        ({"device": {"folder": ""}}, [{"id": "index", **GROVE}], "device id 'index' would be written"),
        ({"device": {"folder": "topics"}}, [], "the folder of page_types.topic"),
        (  # the glossary beside the devices, and a device named for it: the planner refuses it
            {"glossary": {"folder": "devices"}},
            [{"id": "glossary", **GROVE}],
            "the device page 'glossary' would be written to wiki/devices/glossary.md, over the glossary page",
        ),
        ({"device": {"folder": ""}}, [{"id": "changes", **GROVE}], "device id 'changes' would be written"),
        ({"device": {"folder": ""}}, [{"id": "glossary", **GROVE}], "device id 'glossary' would be written"),
        ({"device": {"folder": "index"}}, [], "page_types.device.folder"),
        ({"device": {"folder": "index/devices"}}, [], "page_types.device.folder"),
    ],
)
def test_no_page_id_or_folder_addresses_the_kbs_own_files_or_another_page(
    example_kb: Path, page_types: dict, devices: list, message: str
) -> None:
    path = example_kb / "schema" / "wiki.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    data["page_types"] = {**data.get("page_types", {}), **page_types}
    data["devices"] = devices or data.get("devices", [])
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    log = (example_kb / "wiki" / "log.md").read_bytes()
    result = runner.invoke(app, ["--root", str(example_kb), "compile"])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    assert (example_kb / "wiki" / "log.md").read_bytes() == log


def test_two_pages_planned_for_one_file_never_share_it(example_kb: Path) -> None:
    """Two pages of one type and name (two groups titled alike) are told apart by a suffix; a
    page planned over a file of another type is refused, never written over it."""
    from wikic.compile.pageplan import _Pages
    from wikic.compile.schema import load_wiki_schema
    from wikic.core.errors import ConfigError

    pages = _Pages(load_wiki_schema(example_kb), {})
    first = pages.add("device", "grove-6", "Grove 6", [], {})
    second = pages.add("device", "grove-6", "Grove 6 again", [], {})
    assert (first.path, second.path) == ("wiki/devices/grove-6.md", "wiki/devices/grove-6-2.md")
    pages.folders["topic"] = "devices"  # as if the schema's folders had let the two share one
    with pytest.raises(ConfigError, match="over the device page 'grove-6'"):
        pages.add("topic", "grove-6", "Grove 6 topic", [], {})


@pytest.mark.parametrize("slug", ["changes", "glossary", "log", "index"])
def test_a_page_in_wiki_itself_never_takes_a_file_wikic_keeps(example_kb: Path, slug: str) -> None:
    """A topic group titled 'Changes' with topics kept in wiki/ itself: refused even in a run that
    writes no change list, whose file it would otherwise take."""
    from wikic.compile.pageplan import _Pages
    from wikic.compile.schema import load_wiki_schema
    from wikic.core.errors import ConfigError

    path = example_kb / "schema" / "wiki.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    data["page_types"] = {**data.get("page_types", {}), "topic": {"folder": ""}}
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    pages = _Pages(load_wiki_schema(example_kb), {})
    with pytest.raises(
        ConfigError, match=f"the topic page '{slug}' would be written to wiki/{slug}.md, over"
    ):
        pages.add("topic", slug, slug.title(), [], {})
    if slug in ("changes", "glossary"):  # the page type the file is kept for still writes it
        assert pages.add(slug, slug, slug.title(), [], {}).path == f"wiki/{slug}.md"


# ---- inputs that raised a traceback --------------------------------------------------------------


def alias_bomb(depth: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, depth + 1)]
    return "---\n" + "\n".join(lines) + "\ntitle: Bomb\ncategory: troubleshooting\n---\n\n# Bomb\n\nText.\n"


@pytest.mark.parametrize("command", ["compile", "check", "search", "ask"])
@pytest.mark.parametrize("case", ["stray", "bomb"])
def test_a_stray_layer1_file_or_an_alias_bomb_is_skipped_and_named(
    example_kb: Path, case: str, command: str
) -> None:
    if case == "stray":  # directly in layer1_sources/, in no source's folder
        rel = f"{LAYER1}/stray.md"
        (example_kb / rel).write_text(faq("Stray", "A stray file about the pump."), "utf-8")
    else:  # 9**10 strings once expanded: search and ask ran a minute and then crashed
        rel = f"{LAYER1}/faq/bomb.md"
        (example_kb / rel).write_text(alias_bomb(), "utf-8")
    started = time.monotonic()
    args = [command, "pump"] if command in ("search", "ask") else [command]
    code, out = wikic(example_kb, *args)
    assert time.monotonic() - started < 60  # a hang guard, not a timing: it took a minute before
    assert code == (1 if command in ("compile", "check") else 0), out  # 1: the KB has a problem
    if command in ("compile", "check"):
        assert rel in out


@pytest.mark.parametrize(
    ("case", "command", "message"),
    [
        ("absolute glob", "fetch", "sources.docs.glob: '/etc/*.conf' must be a pattern inside"),
        ("deep sources.yaml", "fetch", "schema/sources.yaml: YAML nested too deeply to read"),
        ("deep sources.yaml", "check", "schema/sources.yaml: YAML nested too deeply to read"),
        ("broken sources.yaml", "check", "schema/sources.yaml: invalid YAML"),
        ("binary transform state", "transform", ".wikic/transform.json: not valid JSON"),
        ("lock is a folder", "compile", ".wikic/kb.lock: cannot be opened as a lock file"),
        ("index is a folder", "search", ".wikic/search.sqlite: not a database file"),
        ("index is a folder", "ask", ".wikic/search.sqlite: not a database file"),
    ],
)
def test_a_broken_file_is_a_clear_error_naming_it(
    example_kb: Path, case: str, command: str, message: str
) -> None:
    root = example_kb
    if case == "absolute glob":
        sources = {"sources": {"docs": {"kind": "files", "path": "examples", "glob": "/etc/*.conf"}}}
        (root / "schema" / "sources.yaml").write_text(yaml.safe_dump(sources), "utf-8")
    elif case == "deep sources.yaml":
        (root / "schema" / "sources.yaml").write_text("sources: " + "[" * 5000 + "]" * 5000 + "\n", "utf-8")
    elif case == "broken sources.yaml":
        (root / "schema" / "sources.yaml").write_text("sources: [unclosed\n", "utf-8")
    elif case == "binary transform state":
        (root / ".wikic").mkdir(exist_ok=True)
        (root / ".wikic" / "transform.json").write_bytes(bytes(range(256)))
    elif case == "lock is a folder":
        (root / ".wikic" / "kb.lock").mkdir(parents=True)
    else:
        (root / ".wikic" / "search.sqlite").mkdir(parents=True)
    code, out = wikic(root, *([command, "pump"] if command in ("search", "ask") else [command]))
    assert code == 2 and message in out, out


def test_init_on_a_path_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file", "utf-8")
    for args in (["init", str(tmp_path / "taken")], ["init", str(tmp_path / "taken" / "kb")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "taken: exists and is not a folder" in result.output
    result = runner.invoke(app, ["init", str(tmp_path / "taken"), "--from", str(tmp_path)])
    assert result.exit_code == 2 and "exists and is not a folder" in result.output


# ---- what compile publishes passes check ---------------------------------------------------------

HOSTILE = {
    "my file [v2] (draft).md": faq(
        "Spaces and brackets", "The pump filter of the Grove 6 needs a rinse every month."
    ),
    "nested.md": faq("Nested links", "See [[the pump guide](x.md)](y.md) for the pump of the Grove 6."),
    "nul.md": faq("Control characters", "The pump\x00 of the Grove 6 hums\x1b[31m quietly every half hour."),
    "brackets.md": faq("Brackets", "[" * 40000 + "x" + "](y)" * 10000),
    "bang-brackets.md": faq("Image brackets", "![" * 40000),
}


def test_whatever_compile_publishes_passes_check(example_kb: Path) -> None:
    for name, text in HOSTILE.items():
        (example_kb / LAYER1 / "faq" / name).write_text(text, "utf-8")
    report = compile_wiki(example_kb)
    assert not report.failed, report.failed
    page = (example_kb / "wiki" / "topics" / "troubleshooting.md").read_text("utf-8")
    assert "my%20file%20%5Bv2%5D%20%28draft%29.md#spaces-and-brackets" in page
    assert "needs a rinse every month" in page and "(x.md)" not in page
    wiki = "".join(p.read_text("utf-8") for p in (example_kb / "wiki").rglob("*.md"))
    assert not any(ch in wiki for ch in "\x00\x1b")
    result = check(example_kb)
    assert not result.errors, [str(f) for f in result.errors]
    assert wikic(example_kb, "check")[0] == 0


def test_no_input_makes_compile_or_check_superlinear(tmp_path: Path) -> None:
    """80 KB of nested brackets once took 52 s to compile and 57 s to check: each command, on a
    KB of that file alone, stays within a generous bound (a hang guard, not a timing; the figure
    is reported by ``make bench``)."""
    root = tmp_path / "kb"
    (root / "schema").mkdir(parents=True)
    repo = Path(__file__).resolve().parents[1]
    (root / "schema" / "librarian.md").write_text((repo / "schema" / "librarian.md").read_text("utf-8"))
    (root / "schema" / "wiki.yaml").write_text(yaml.safe_dump({"topics": [{"source": "faq"}]}), "utf-8")
    for name in ("brackets.md", "bang-brackets.md"):
        (root / LAYER1 / "faq").mkdir(parents=True, exist_ok=True)
        (root / LAYER1 / "faq" / name).write_text(HOSTILE[name], "utf-8")
    for command in ("compile", "check"):
        started = time.monotonic()
        code, _ = wikic(root, command)
        assert code == 0 and time.monotonic() - started < 30, command
    assert os.path.getsize(root / LAYER1 / "faq" / "brackets.md") > 80_000
