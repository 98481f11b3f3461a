"""Lookup hardening: a corrupt search index is rebuilt, queries are capped, and the MCP tools follow
their own links and report their errors."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.compile.searchindex.store import DB_PATH
from wikic.lookup.search import open_index

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


def test_the_index_is_written_without_waiting_for_the_disk_also_when_rebuilt(example_kb: Path) -> None:
    """Derived state: its commits are not synced (a hundred waits a compile); a database found
    corrupt, or of another version, is replaced by one written the same way."""
    from wikic.compile.searchindex.store import IndexStore

    for damage in (None, "garbage", "version"):
        if damage == "garbage":
            corrupt(example_kb / DB_PATH, damage)
        elif damage == "version":
            with sqlite3.connect(example_kb / DB_PATH) as conn:
                conn.execute("UPDATE meta SET value='0' WHERE key='schema_version'")
        with IndexStore(example_kb) as store:
            assert store.conn.execute("PRAGMA synchronous").fetchone() == (0,), damage
            assert bool(store.rebuilt) == (damage == "garbage")


def test_search_and_ask_cap_the_query_and_its_words(example_kb: Path) -> None:
    root = ["--root", str(example_kb)]
    for command in (["search"], ["ask"]):
        result = runner.invoke(app, [*root, *command, "tank " + "x" * 100_000])
        assert result.exit_code == 2 and "100,000-character word" in result.output
        result = runner.invoke(app, [*root, *command, "tank " * 1000])
        assert result.exit_code == 2 and "5,000 characters long; at most 2,000" in result.output
    assert (
        runner.invoke(app, [*root, "search", "pneumonoultramicroscopicsilicovolcanoconiosis"]).exit_code == 0
    )


async def _agent(root: Path) -> dict:
    import sys

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "wikic", "--root", str(root), "mcp"])
    out: dict = {"followed": [], "failed": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        index = (await session.call_tool("read_index", {})).content[0].text
        out["index"] = index
        for link in re.findall(r"\]\(([^)#\s]+)\)", index):  # every link, followed literally
            result = await session.call_tool("read_page", {"path": link})
            (out["failed"] if result.is_error else out["followed"]).append(link)
        page = (await session.call_tool("read_page", {"path": "wiki/topics/watering.md"})).content[0].text
        out["page_links"] = re.findall(r"\]\(([^)#\s]+)", page)
        relative = await session.call_tool(
            "read_page", {"path": "../devices/grove-6.md", "from_page": "wiki/topics/watering.md"}
        )
        out["relative"] = relative.content[0].text
        bad = await session.call_tool("read_page", {"path": "../schema/wiki.yaml"})
        out["bad"] = (bad.is_error, bad.content[0].text)
        huge = await session.call_tool("search", {"query": "x" * 100_000})
        out["huge"] = (huge.is_error, huge.content[0].text)
    return out


def test_an_agent_can_follow_every_link_of_a_two_level_index(example_kb: Path) -> None:
    schema = example_kb / "schema/wiki.yaml"
    schema.write_text(re.sub(r"token_budget: \d+", "token_budget: 600", schema.read_text("utf-8")), "utf-8")
    assert runner.invoke(app, ["--root", str(example_kb), "compile"]).exit_code == 0
    assert list((example_kb / "wiki/index").glob("*.md"))  # the index has parts
    got = asyncio.run(_agent(example_kb))
    assert got["failed"] == [] and len(got["followed"]) > 30
    assert all(link.startswith(("wiki/", "layer1_sources/")) for link in got["page_links"])
    assert got["relative"].startswith("---") and "# Grove 6" in got["relative"]
    assert got["bad"][0] and "no wiki page or source '../schema/wiki.yaml'" in got["bad"][1]
    assert got["huge"][0] and "100,000-character word" in got["huge"][1]
