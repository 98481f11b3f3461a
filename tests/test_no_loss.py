"""Nothing is lost silently: a KB under a hidden folder, an empty layer 1, a source that shrinks,
a wrong --root, and the compile log after a crash."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import copy_example, snapshot_tree
from typer.testing import CliRunner

from wikic.check.run import check
from wikic.cli.app import app
from wikic.compile.run import compile_wiki
from wikic.lookup.search import open_index

runner = CliRunner()


def wiki_pages(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md"))


def test_a_kb_below_a_hidden_folder_keeps_its_wiki(tmp_path: Path) -> None:
    root = copy_example(tmp_path / ".kb" / "mywiki")
    before = wiki_pages(root)
    report = compile_wiki(root)
    assert report.removed == [] and wiki_pages(root) == before
    assert not check(root).errors
    index, _ = open_index(root)
    try:
        assert index.count("source") > 100 and index.search("water tank").hits
    finally:
        index.close()


@pytest.mark.parametrize(
    "command", [["compile"], ["check"], ["search", "tank"], ["ask", "How long does the tank last?"]]
)
def test_an_empty_layer_1_with_a_wiki_is_refused(example_kb: Path, command: list[str]) -> None:
    shutil.rmtree(example_kb / "layer1_sources")
    (example_kb / "layer1_sources").mkdir()
    before = snapshot_tree(example_kb / "wiki")
    result = runner.invoke(app, ["--root", str(example_kb), *command])
    assert result.exit_code == 1, result.output
    assert "no layer-1 sources, but wiki/ has" in result.output
    assert snapshot_tree(example_kb / "wiki") == before


def test_an_empty_layer_1_without_a_wiki_compiles_to_nothing(tree) -> None:
    root = tree({"schema/wiki.yaml": "{}\n", "schema/librarian.md": "# Rules\n"})
    report = compile_wiki(root)
    assert report.added == [] and report.removed == []


@pytest.mark.parametrize(
    "command", [["verify"], ["check"], ["search", "tank"], ["trace", "wiki/index.md"], ["compile"], ["fetch"]]
)
def test_a_root_without_schema_is_not_a_knowledge_base(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "layer0_raw").mkdir()
    result = runner.invoke(app, ["--root", str(tmp_path), *command])
    assert result.exit_code == 2, result.output
    expected = "file not found" if command[0] in ("compile", "fetch") else "not a wikic knowledge base"
    assert expected in result.output and "--root" in result.output
    assert not (tmp_path / ".wikic").exists()  # nothing written into a folder that is no KB


def entries(root: Path) -> list[str]:
    return [line for line in (root / "wiki/log.md").read_text("utf-8").split("\n") if line.startswith("## [")]


def test_a_compile_killed_after_writing_pages_is_logged_by_the_rerun(
    unbuilt_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wikic.compile.run as compile_module

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # killed between the pages and the index

    with monkeypatch.context() as m:
        m.setattr(compile_module, "write_index", die)
        with pytest.raises(KeyboardInterrupt):
            compile_wiki(unbuilt_example)
    written = len(wiki_pages(unbuilt_example))
    assert written > 30 and not (unbuilt_example / "wiki/log.md").exists()
    report = compile_wiki(unbuilt_example)
    assert report.added == []  # the pages were already there
    (entry,) = entries(unbuilt_example)
    assert f"+{written} ~0 -0 pages" in entry
    assert not check(unbuilt_example).errors


def test_a_compile_killed_after_logging_is_not_logged_twice(
    unbuilt_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wikic.compile.run as compile_module

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(compile_module, "save_state", die)
        with pytest.raises(KeyboardInterrupt):
            compile_wiki(unbuilt_example)
    assert len(entries(unbuilt_example)) == 1
    compile_wiki(unbuilt_example)
    assert len(entries(unbuilt_example)) == 1
    page = next((unbuilt_example / "wiki/topics").glob("*.md"))
    page.unlink()
    compile_wiki(unbuilt_example)
    assert len(entries(unbuilt_example)) == 2 and "+1 ~0 -0 pages" in entries(unbuilt_example)[-1]


def test_check_warns_when_the_last_compile_emptied_most_of_the_wiki(compiled_example: Path) -> None:
    assert not [f for f in check(compiled_example).findings if f.rule == "wiki-shrank"]
    for source in ("plants", "faq", "blog"):
        shutil.rmtree(compiled_example / "layer1_sources" / source)
    report = compile_wiki(compiled_example)
    assert len(report.removed) > 17
    (found,) = [f for f in check(compiled_example).warnings if f.rule == "wiki-shrank"]
    assert "down from" in found.message


@pytest.mark.parametrize("folder", ["../../x", "/tmp/x", "devices/../../../x", "index", "a\\\\b", ".hidden"])
def test_a_page_folder_outside_the_wiki_is_a_config_error(example_kb: Path, folder: str) -> None:
    schema = example_kb / "schema/wiki.yaml"
    text = schema.read_text("utf-8").replace("device: {folder: devices,", f"device: {{folder: '{folder}',")
    schema.write_text(text, "utf-8")
    before = snapshot_tree(example_kb.parent)
    result = runner.invoke(app, ["--root", str(example_kb), "compile"])
    assert result.exit_code == 2 and "page_types.device.folder" in result.output
    assert snapshot_tree(example_kb.parent) == before


def test_an_empty_page_folder_means_wiki_itself(example_kb: Path) -> None:
    schema = example_kb / "schema/wiki.yaml"
    schema.write_text(
        schema.read_text("utf-8").replace("guide: {folder: guides,", "guide: {folder: '',"), "utf-8"
    )
    result = runner.invoke(app, ["--root", str(example_kb), "compile"])
    assert result.exit_code == 0, result.output
    assert (example_kb / "wiki/first-week.md").is_file()


BROKEN = "---\ntitle: Grove 6\nsource: specs\n  id: [unclosed\n---\n# Grove 6\n\nThe tank holds 4.0 litres.\n"


def test_one_broken_layer1_file_is_reported_and_skipped_everywhere(example_kb: Path) -> None:
    spec = example_kb / "layer1_sources/specs/grove-6.md"
    page = example_kb / "wiki/devices/grove-6.md"
    kept = page.read_text("utf-8")
    spec.write_text(BROKEN, "utf-8")
    root = ["--root", str(example_kb)]

    result = runner.invoke(app, [*root, "compile"])
    assert result.exit_code == 1, result.output
    assert "layer1_sources/specs/grove-6.md: cannot read frontmatter" in " ".join(result.output.split())
    assert page.read_text("utf-8") == kept  # made from the broken file: kept as it was
    assert "devices/grove-6.md" in (example_kb / "wiki/index.md").read_text("utf-8")

    result = runner.invoke(app, [*root, "check", "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.output)["errors"]
    assert [(e["rule"], e["path"]) for e in errors] == [
        ("unreadable-source", "layer1_sources/specs/grove-6.md")
    ]

    result = runner.invoke(app, [*root, "search", "water tank", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["results"]
    assert "skipped" in result.stderr and "grove-6.md" in result.stderr

    result = runner.invoke(app, [*root, "ask", "How long does a full water tank last?"])
    assert result.exit_code == 0 and "cannot confirm" not in result.stdout
    assert "grove-6.md" in result.stderr

    spec.write_text(BROKEN.replace("  id: [unclosed\n", "id: grove-6\n"), "utf-8")
    assert runner.invoke(app, [*root, "compile"]).exit_code == 0  # fixed: compiles again
