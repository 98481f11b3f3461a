"""``wikic mcp``: the wiki served to agents over MCP (stdio), with the official ``mcp`` SDK.

Tools follow the lookup protocol: ``read_index`` first, then ``read_page`` for the pages it
points to, ``search`` when the index is not enough, and ``ask`` for a cited answer (or the
refusal). Every wiki page (and ``index.md``) is also a resource, ``wiki://<path>``.
"""

from __future__ import annotations

from pathlib import Path

from .ask import Lookup
from .backend import llm_model, model_expander
from .errors import ConfigError
from .search import kb_files

URI_PREFIX = "wiki://"


def _page_path(root: Path, path: str) -> Path:
    """A wiki page by its path (``wiki/…`` or relative to ``wiki/``); never outside ``wiki/``."""
    rel = path.strip().removeprefix(URI_PREFIX).lstrip("/")
    if not rel.startswith("wiki/"):
        rel = "wiki/" + rel
    target = (root / rel).resolve()
    wiki = (root / "wiki").resolve()
    if wiki not in target.parents or target.suffix != ".md" or not target.is_file():
        raise ValueError(f"no wiki page {path!r}; read_index lists the pages")
    return target


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
    def read_index() -> str:
        """The wiki's entry point: one line per page with a summary and keywords. Read it first."""
        parts = [(root / "wiki" / "index.md").read_text("utf-8")]
        sub = root / "wiki" / "index"
        if sub.is_dir():
            parts += [p.read_text("utf-8") for p in sorted(sub.glob("*.md"))]
        return "\n\n".join(parts)

    @server.tool()
    def read_page(path: str) -> str:
        """One wiki page by path (e.g. 'wiki/topics/watering.md' or 'topics/watering.md')."""
        return _page_path(root, path).read_text("utf-8")

    @server.tool()
    def search(query: str, k: int = 10) -> list[dict]:
        """Hybrid search over the wiki and the source sections; results have path, heading, score, snippet."""
        result = lookup.index.search(query, max(1, min(k, 50)), expander=expander)
        return [h.as_dict() for h in result.hits]

    @server.tool()
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
