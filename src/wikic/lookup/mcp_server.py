"""``wikic mcp``: the wiki served to agents over MCP (stdio), with the official ``mcp`` SDK.

Tools follow the lookup protocol: ``read_index`` first, then ``read_page`` for the pages it
points to (and for the layer-1 sections their citations link), ``search`` when the index is not
enough, and ``ask`` for a cited answer (or the refusal). Every wiki page (and ``index.md``) is
also a resource, ``wiki://<path>``. A line on stdin that is not JSON-RPC gets a JSON-RPC error
reply (the SDK's stdio transport drops it without one).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

from mcp.server.mcpserver.exceptions import ToolError

from ..compile.citations import section_body
from ..compile.draft import link_path, resolve_href
from ..compile.searchindex.files import kb_files
from ..core.errors import ConfigError, WikicError
from ..core.fsutil import linked_part, read_regular
from ..transform.layer1 import LAYER1, parse_doc
from .ask import Lookup
from .backend import llm_model, model_expander

URI_PREFIX = "wiki://"
WIKI = "wiki"


def _page_path(root: Path, path: str, from_page: str = "") -> tuple[str, str]:
    """(root-relative path, anchor) of a wiki page or layer-1 source named by its path: root-
    relative (``wiki/…``, ``layer1_sources/…``), relative to ``wiki/``, or as a link reads on the
    page (or sub-index) ``from_page`` that holds it, with its ``#anchor`` if it has one; never
    outside ``wiki/`` and ``layer1_sources/``, never through a symbolic link."""
    rel, _, anchor = path.strip().removeprefix(URI_PREFIX).partition("#")
    rel = unquote(rel)  # a link to 'my file.md' reads 'my%20file.md'
    candidates = [resolve_href(from_page, rel)] if from_page else []
    rel = rel.lstrip("/")
    bare = re.sub(r"^(?:\.\.?/)+", "", rel)  # '../topics/x.md', copied from a page or sub-index
    for name in (rel, bare):
        candidates.append(name if name.startswith((WIKI + "/", LAYER1 + "/")) else f"{WIKI}/{name}")
    for candidate in candidates:
        parts = PurePosixPath(candidate).parts
        if len(parts) < 2 or parts[0] not in (WIKI, LAYER1) or ".." in parts or not candidate.endswith(".md"):
            continue
        if linked_part(root, candidate) is None and (root / candidate).is_file():
            return candidate, anchor
    raise ValueError(
        f"no wiki page or source {path!r}; read_index lists the pages, and their links name the rest"
    )


def _read(root: Path, rel: str, anchor: str) -> str:
    """A wiki page whole, or a layer-1 source: the cited section (with its sub-sections) under
    the document's title, or the whole document without an anchor."""
    if rel.startswith(WIKI + "/"):
        return root_links(read_regular(root / rel).decode("utf-8"), rel)
    doc = parse_doc(root, root / rel)
    if anchor and doc.section(anchor) is None:
        raise ValueError(f"{rel} has no section #{anchor}; read it without the anchor for all of it")
    body = section_body(doc, anchor) if anchor else doc.body
    return f"# {doc.title}\n\n{rel}" + (f"#{anchor}" if anchor else "") + "\n\n" + body.strip() + "\n"


_LINK_TARGET = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def root_links(text: str, page: str) -> str:
    """Every relative link of the page ``page`` rewritten relative to the KB root (``wiki/…``,
    ``layer1_sources/…``), so an agent can pass any link it reads straight to ``read_page``."""

    def fix(m: re.Match) -> str:
        if re.match(r"^[A-Za-z][\w+.-]*:", m.group(2)):
            return m.group(0)
        return m.group(1) + link_path(resolve_href(page, m.group(2))) + (m.group(3) or "") + m.group(4)

    return _LINK_TARGET.sub(fix, text)


def reported(fn: Callable) -> Callable:
    """A tool whose expected failures (a bad path, a query past the caps, a KB problem) reach the
    client with their message; the SDK reports any other exception as a bare crash."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (WikicError, ValueError, OSError) as exc:
            raise ToolError(str(exc)) from None

    return tool


def build_server(root: Path):
    """The MCP server for the KB at ``root`` (not started)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resources.types import FunctionResource

    if not (root / "wiki" / "index.md").is_file():
        raise ConfigError(f"{root / 'wiki' / 'index.md'}: missing; run 'wikic compile' first")
    lookup = Lookup(root)
    model = llm_model(root)
    expander = model_expander(model) if model is not None else None
    server = MCPServer(
        "wikic",
        instructions=(
            "A compiled, cited wiki. Call read_index first, then read_page for the pages it links; "
            "use search when the index is not enough; ask answers with file#heading citations or "
            "says it cannot confirm."
        ),
    )

    @server.tool()
    @reported
    def read_index() -> str:
        """The wiki's entry point: one line per page with a summary and keywords. Read it first.
        Links are paths from the KB root ('wiki/topics/watering.md'), as read_page takes them."""
        files = [root / "wiki" / "index.md"]
        sub = root / "wiki" / "index"
        if sub.is_dir():
            files += sorted(sub.glob("*.md"))
        return "\n\n".join(
            root_links(read_regular(p).decode("utf-8"), p.relative_to(root).as_posix()) for p in files
        )

    @server.tool()
    @reported
    def read_page(path: str, from_page: str = "") -> str:
        """A wiki page, or the source section a citation links, by any link read_index or a page
        gives: 'wiki/topics/watering.md#anchor', 'topics/watering.md', a citation
        'layer1_sources/faq/x.md#heading', or a link as written on the page ``from_page``. A
        page comes back whole, its links as paths from the KB root; a citation, as the section."""
        return _read(root, *_page_path(root, path, from_page))

    @server.tool()
    @reported
    def search(query: str, k: int = 10) -> list[dict]:
        """Hybrid search over the wiki and the source sections; results have path, heading, score, snippet."""
        result = lookup.index.search(query, max(1, min(k, 50)), expander=expander)
        return [h.as_dict() for h in result.hits]

    @server.tool()
    @reported
    def ask(question: str) -> dict:
        """Answer from the wiki with file#heading citations, or 'I cannot confirm from the knowledge base.'"""
        return lookup.answer(question, model=model).as_dict()

    for rel, kind in kb_files(root).items():
        if kind == "source":
            continue
        server.add_resource(
            FunctionResource(
                uri=URI_PREFIX + rel,
                name=rel,
                mime_type="text/markdown",
                fn=lambda p=root / rel: read_regular(p).decode("utf-8"),
            )
        )
    return server


def serve(root: Path) -> None:
    """Run the server on stdio until the client disconnects."""
    import anyio

    anyio.run(_serve_stdio, build_server(root))


async def _serve_stdio(server: Any) -> None:
    """``MCPServer.run("stdio")``, but a line that is not a JSON-RPC message gets an error reply:
    -32700 (parse error) when it is not JSON, -32600 (invalid request) when it is JSON of another
    shape; the SDK's stdio transport would drop it and leave the client waiting."""
    import anyio
    import mcp_types as types
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs on the SDK's streams
    async with stdio_server() as (read_stream, write_stream):
        forward, messages = create_context_streams[SessionMessage](0)

        async def pass_on() -> None:
            async with forward:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await forward.send(item)
                        continue
                    code = types.PARSE_ERROR if "json_invalid" in str(item) else types.INVALID_REQUEST
                    what = "Parse error: not JSON" if code == types.PARSE_ERROR else "Invalid Request"
                    error = types.ErrorData(code=code, message=f"{what} ({str(item).splitlines()[0]})")
                    await write_stream.send(
                        SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))
                    )

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pass_on)
            await lowlevel.run(messages, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


__all__ = ["build_server", "serve"]
