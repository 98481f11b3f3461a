"""`wikic mcp` spoken to with the official SDK's own stdio client, as an agent would."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]


def _text(result) -> str:
    assert not result.is_error, result
    return "".join(getattr(c, "text", "") for c in result.content)


async def _session(root: Path) -> dict:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "wikic", "--root", str(root), "mcp"], cwd=str(root)
    )
    out: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        out["index"] = _text(await session.call_tool("read_index", {}))
        out["page"] = _text(await session.call_tool("read_page", {"path": "topics/watering.md"}))
        out["guide"] = _text(await session.call_tool("read_page", {"path": "guides/going-on-holiday.md"}))
        # every link read_index and those pages give, anchors included, and the citations
        links = re.findall(r"\]\(([^)\s]+)\)", out["index"] + out["page"] + out["guide"])
        out["links"] = {}
        for link in dict.fromkeys(links):
            result = await session.call_tool("read_page", {"path": link})
            out["links"][link] = _text(result) if not result.is_error else result
        out["bad_page"] = await session.call_tool("read_page", {"path": "../schema/wiki.yaml"})
        out["search"] = await session.call_tool("search", {"query": "pump hum every half hour", "k": 3})
        out["ask"] = await session.call_tool("ask", {"question": "How long does a full water tank last?"})
        out["refuse"] = await session.call_tool("ask", {"question": "Does it work with Apple HomeKit?"})
        resources = (await session.list_resources()).resources
        out["resources"] = sorted(str(r.uri) for r in resources)
        read = await session.read_resource("wiki://wiki/index.md")
        out["resource_text"] = read.contents[0].text
    return out


def _payload(result) -> object:
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) else data
    return json.loads(_text(result))


def test_mcp_server_over_stdio(example_kb):
    root = example_kb
    got = asyncio.run(_session(root))
    assert got["tools"] == ["ask", "read_index", "read_page", "search"]
    assert got["index"].startswith("# Wiki index") and "topics/watering.md" in got["index"]
    assert got["page"].startswith("---") and "# Watering" in got["page"]
    links = got["links"]
    pages = [k for k in links if k.startswith("wiki/") and "#" in k]
    cites = [k for k in links if k.startswith("layer1_sources/")]
    assert len(links) >= 40 and len(pages) >= 2 and len(cites) >= 10, list(links)[:20]
    failed = {k: v for k, v in links.items() if not isinstance(v, str)}
    assert not failed, list(failed)[:5]
    cite = next(k for k in cites if "#" in k)
    assert links[cite].startswith("# ") and cite in links[cite]  # the cited section, named
    assert got["bad_page"].is_error
    results = _payload(got["search"])
    assert len(results) == 3 and {"path", "heading", "score", "snippet"} <= set(results[0])
    assert any("pump" in r["path"] or "pump" in r["snippet"].lower() for r in results)
    answer = _payload(got["ask"])
    assert answer["refused"] is False and answer["sentences"][0]["cites"]
    assert _payload(got["refuse"])["answer"] == "I cannot confirm from the knowledge base."
    assert "wiki://wiki/index.md" in got["resources"] and "wiki://wiki/topics/watering.md" in got["resources"]
    assert got["resource_text"].startswith("# Wiki index")


def test_a_line_that_is_not_json_rpc_gets_an_error_reply(example_kb: Path) -> None:
    """Raw lines on stdin, as a broken client might send them: each gets a JSON-RPC error (id
    null), and the server goes on answering."""
    lines = ["this is not json", "[1, 2]", json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"})]
    # stdin stays open until the three replies are read, as a client's does: a server whose
    # input ends may drop a request still in flight
    with subprocess.Popen(
        [sys.executable, "-m", "wikic", "--root", str(example_kb), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        guard = threading.Timer(60, proc.kill)  # a server that never answers fails, not hangs
        guard.start()
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        out = [proc.stdout.readline() for _ in lines]
        proc.stdin.close()
        proc.wait(timeout=60)
        guard.cancel()
    replies = [json.loads(line) for line in out if line]
    assert [r.get("error", {}).get("code") for r in replies] == [-32700, -32600, None], replies
    assert replies[0]["id"] is None and replies[2] == {"jsonrpc": "2.0", "id": 7, "result": {}}
