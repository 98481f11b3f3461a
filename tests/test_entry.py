"""The console script: ``search`` and ``ask`` run without typer when well formed, and give what the
typer commands give; everything else goes to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.cli import main as entry
from wikic.cli.app import app


def _quick(capsys, argv: list[str]) -> tuple[bool, str]:
    handled = entry.quick(argv)
    return handled, capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "pump noise", "--k", "3"],
        ["search", "pump noise", "--json", "--k=2"],
        ["ask", "How long does a full water tank last?"],
        ["ask", "Does the Grove 6 work with Alexa?", "--json"],
    ],
)
def test_the_quick_path_prints_what_the_typer_command_prints(example_kb, capsys, argv):
    root = ["--root", str(example_kb)]
    handled, quick = _quick(capsys, root + argv)
    typed = CliRunner().invoke(app, root + argv)
    assert handled and typed.exit_code == 0 and quick == typed.output and quick.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--help"],
        ["search", "pump", "--k", "0"],
        ["search", "pump", "--k"],
        ["search", "pump", "--bogus"],
        ["search"],
        ["ask", "one", "two"],
        ["check"],
        [],
    ],
)
def test_anything_else_is_left_to_typer(example_kb, capsys, argv):
    handled, printed = _quick(capsys, ["--root", str(example_kb), *argv])
    assert not handled and printed == ""


def test_an_error_is_reported_by_typer_with_its_exit_code(tmp_path):
    script = Path(sys.executable).parent / "wikic"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "wikic"]
    done = subprocess.run(
        [*command, "--root", str(tmp_path), "ask", "anything?"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2 and "error:" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [*command, "--root", str(tmp_path), "search", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "--json" in done.stdout


# what a lookup on a settled index never needs: YAML, hashing, the CLI and the LLM libraries
NEVER = ("typer", "rich", "yaml", "frontmatter", "hashlib", "httpx", "anthropic", "jinja2")


@pytest.mark.parametrize(
    ("command", "never"),
    # the answer's modules use typing; a search parses no layer-1 document and makes no dataclass
    [("search", (*NEVER, "typing", "dataclasses", "wikic.core.markdown")), ("ask", NEVER)],
)
def test_a_lookup_on_a_settled_index_imports_nothing_it_does_not_use(example_kb, command, never):
    """An agent calls ``search`` and ``ask`` once per question, so each fresh process pays for
    its imports."""
    import os

    old = 1_000_000_000  # every file long settled, so none is re-read or hashed
    for path in example_kb.rglob("*"):
        os.utime(path, (old, old))
    entry.quick(["--root", str(example_kb), "search", "warm up"])  # builds the index
    probe = (
        "import sys\nfrom wikic.cli import main as entry\n"
        f"entry.quick(['--root', {str(example_kb)!r}, {command!r}, 'How long does a full tank last?'])\n"
        f"print('imported:', [m for m in {never!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.rstrip().splitlines()[-1] == "imported: []"
