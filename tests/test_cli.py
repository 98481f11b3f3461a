"""The command line as a whole: help for every command, init, exit codes."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.compile.schema import load_wiki_schema
from wikic.core.config import load_sources

runner = CliRunner()


def commands() -> list[str]:
    group = typer.main.get_group(app)
    return sorted(group.commands)


def test_the_contract_commands_exist() -> None:
    assert {"init", "fetch", "transform", "compile", "verify"} <= set(commands())


def test_every_command_has_help_text() -> None:
    group = typer.main.get_group(app)
    for name in commands():
        cmd = group.commands[name]
        assert (cmd.help or "").strip(), f"'{name}' has no help text"
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert cmd.help.split("\n")[0][:30] in " ".join(result.output.split())


def test_init_scaffolds_a_kb_whose_schema_loads(tmp_path: Path) -> None:
    target = tmp_path / "newkb"
    result = runner.invoke(app, ["init", str(target)])
    assert result.exit_code == 0, result.output
    for rel in ("schema/sources.yaml", "schema/wiki.yaml", "schema/librarian.md", "Makefile", ".gitignore"):
        assert (target / rel).is_file(), rel
    for folder in ("layer0_raw", "layer1_sources", "wiki"):
        assert (target / folder).is_dir()
    assert "#" in (target / "schema/sources.yaml").read_text("utf-8")  # explained with comments
    assert list(load_sources(target).sources) == ["articles"]
    assert load_wiki_schema(target).librarian.backend == "offline"
    again = runner.invoke(app, ["init", str(target)])
    assert again.exit_code == 2 and "already exists" in again.output


def test_missing_schema_is_a_configuration_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--root", str(tmp_path), "fetch"])
    assert result.exit_code == 2
    assert "sources.yaml" in result.output and "not found" in result.output
