"""``wikic mcp``: the wiki served to agents over MCP (stdio), with the official ``mcp`` SDK.

Tools follow the lookup protocol: ``read_index`` first, then ``read_page`` for the pages it
points to, ``search`` when the index is not enough, and ``ask`` for a cited answer (or the
refusal). Every wiki page (and ``index.md``) is also a resource, ``wiki://<path>``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from ..compile.draft import resolve_href
from ..compile.searchindex.chunks import kb_files
from ..core.errors import ConfigError, WikicError
from .ask import Lookup
from .backend import llm_model, model_expander

URI_PREFIX = "wiki://"


def _page_path(root: Path, path: str, from_page: str = "") -> Path:
    """A wiki page by its path: root-relative (``wiki/…``), relative to ``wiki/``, or as a link
    reads on the page (or sub-index) ``from_page`` that holds it; never outside ``wiki/``."""
    rel = path.strip().removeprefix(URI_PREFIX)
    candidates = [resolve_href(from_page, rel)] if from_page else []
    rel = rel.lstrip("/")
    candidates.append(rel if rel.startswith("wiki/") else "wiki/" + rel)
    bare = re.sub(r"^(?:\.\.?/)+", "", rel)  # '../topics/x.md', copied from a page or sub-index
    candidates.append(bare if bare.startswith("wiki/") else "wiki/" + bare)
    wiki = (root / "wiki").resolve()
    for candidate in candidates:
        target = (root / candidate).resolve()
        if wiki in target.parents and target.suffix == ".md" and target.is_file():
            return target
    raise ValueError(f"no wiki page {path!r}; read_index lists the pages, as paths read_page takes")


_LINK_TARGET = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def root_links(text: str, page: str) -> str:
    """Every relative link of the page ``page`` rewritten relative to the KB root (``wiki/…``,
    ``layer1_sources/…``), so an agent can pass any link it reads straight to ``read_page``."""

    def fix(m: re.Match) -> str:
        if re.match(r"^[A-Za-z][\w+.-]*:", m.group(2)):
            return m.group(0)
        return m.group(1) + resolve_href(page, m.group(2)) + (m.group(3) or "") + m.group(4)

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
        return "\n\n".join(root_links(p.read_text("utf-8"), p.relative_to(root).as_posix()) for p in files)

    @server.tool()
    @reported
    def read_page(path: str, from_page: str = "") -> str:
        """One wiki page by path ('wiki/topics/watering.md' or 'topics/watering.md'), or by a link
        as written on the page ``from_page``. Its links come back as paths from the KB root."""
        target = _page_path(root, path, from_page)
        return root_links(target.read_text("utf-8"), target.relative_to(root.resolve()).as_posix())

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
                fn=lambda p=root / rel: p.read_text("utf-8"),
            )
        )
    return server


def serve(root: Path) -> None:
    """Run the server on stdio until the client disconnects."""
    build_server(root).run("stdio")


__all__ = ["build_server", "serve"]
