"""Lookup hardening: a corrupt search index is rebuilt, queries are capped, and the MCP tools follow
their own links and report their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.cli import app
from wikic.search import DB_PATH, open_index

runner = CliRunner()


def corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "garbage":
        path.write_bytes(b"this is no database\n" * 200)
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 3])
    else:  # pages in the middle zeroed
        middle = len(data) // 2
        path.write_bytes(data[:4096] + b"\0" * (middle - 4096) + data[middle:])


@pytest.mark.parametrize("how", ["garbage", "truncated", "zeroed"])
def test_a_corrupt_search_index_is_rebuilt(example_kb: Path, how: str) -> None:
    index, _ = open_index(example_kb)
    index.close()
    corrupt(example_kb / DB_PATH, how)
    result = runner.invoke(app, ["--root", str(example_kb), "search", "water tank", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"]
    assert how != "garbage" or "search index was corrupt" in result.stderr
    result = runner.invoke(app, ["--root", str(example_kb), "ask", "How long does a full water tank last?"])
    assert result.exit_code == 0 and "litre" in result.stdout
