"""The LLM a lookup may use: the model of the configured librarian backend, and query expansion
with it. Kept apart from ``ask`` so that ``wikic search`` on an offline KB imports neither the
answering code nor the backends."""

from __future__ import annotations

import os
from pathlib import Path

from .search import SearchIndex


def model_expander(model):
    """An ``Expander`` backed by an LLM: up to three rewrites of the query."""
    from ..compile.librarian.model import ModelRequest, Tool

    tool = Tool(
        "expand",
        "Rewrite a search query as up to three alternative queries using the words the documents would use.",
        {
            "type": "object",
            "properties": {"queries": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
            "required": ["queries"],
        },
    )

    def expand(query: str) -> list[str]:
        response = model.complete(
            ModelRequest(
                system=("You rewrite search queries for a product support knowledge base.",),
                user=f"<query>{query}</query>",
                tools=(tool,),
                tool_name=tool.name,
                max_tokens=300,
            )
        )
        args = response.tool_input or {}
        return [str(q) for q in args.get("queries") or [] if str(q).strip()][:3]

    return expand


def llm_model(root: Path, environ: dict[str, str] | None = None, index: SearchIndex | None = None):
    """The model of the configured LLM backend, or None when the KB runs offline (or the
    Anthropic backend has no key). With ``index``, an offline KB is known from the backend the
    index remembers for this ``schema/wiki.yaml``, without reading the schema or the backends."""
    env = os.environ if environ is None else environ
    backend = index.backend() if index is not None else None
    schema = None
    if backend is None:
        from ..compile.schema import load_wiki_schema

        schema = load_wiki_schema(root)
        backend = schema.librarian.backend
        if index is not None:
            index.remember_backend(backend)
    if backend == "offline" or (backend == "anthropic" and not env.get("ANTHROPIC_API_KEY")):
        return None
    from ..compile.run import make_librarian
    from ..compile.schema import load_wiki_schema

    lib = make_librarian(schema or load_wiki_schema(root), None, dict(env))
    return getattr(lib, "model_api", None)


__all__ = ["llm_model", "model_expander"]
