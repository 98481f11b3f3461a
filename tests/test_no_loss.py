"""Nothing is lost silently: a KB under a hidden folder, an empty layer 1, a source that shrinks,
a wrong --root, and the compile log after a crash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import copy_example, snapshot_tree
from typer.testing import CliRunner

from wikic.cli import app
from wikic.compile import compile_wiki
from wikic.lint import check
from wikic.search import open_index

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
