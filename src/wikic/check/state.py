"""The state every rule reads, gathered once: layer-1 documents, the plan, the wiki pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..compile.citations import DEFAULT_MIN_OVERLAP, Verifier
from ..compile.schema import WikiSchema
from ..core.config import load_sources
from ..core.fsutil import require_kb
from ..core.models import SourceDoc
from ..transform.layer1 import load_layer1, require_sources
from .pages import WikiPage, wiki_pages


@dataclass
class KB:
    root: Path
    docs: dict[str, SourceDoc]
    pages: list[WikiPage]
    superseded_by: dict[str, str]
    verifier: Verifier
    schema: WikiSchema | None
    plan: Any = None  # plan.Plan, or None without a readable schema
    unreadable: dict[str, str] = field(default_factory=dict)  # layer-1 files skipped, and why
    config: Any = None  # schema/sources.yaml, or None without one

    @cached_property
    def content_pages(self) -> list[WikiPage]:
        return [p for p in self.pages if not p.is_special]

    @cached_property
    def page_paths(self) -> set[str]:
        return {p.path for p in self.pages}


def gather(root: Path) -> KB:
    from ..compile.pageplan import plan, supersession
    from ..compile.schema import load_wiki_schema

    require_kb(root)
    # a sources.yaml that cannot be read is a configuration error (exit 2), not a rule to skip
    config = load_sources(root) if (root / "schema" / "sources.yaml").exists() else None
    require_sources(root, "check")
    unreadable: dict[str, str] = {}
    docs_list = load_layer1(root, None, unreadable)
    docs = {d.path: d for d in docs_list}
    schema = None
    the_plan = None
    if (root / "schema" / "wiki.yaml").exists():
        schema = load_wiki_schema(root)
        the_plan = plan(docs_list, schema)
        superseded = the_plan.superseded_by
    else:
        superseded = supersession(docs_list)
    min_overlap = schema.min_overlap if schema else DEFAULT_MIN_OVERLAP
    return KB(
        root,
        docs,
        wiki_pages(root),
        superseded,
        Verifier(docs_list, min_overlap, unreadable=set(unreadable)),
        schema,
        the_plan,
        unreadable,
        config,
    )
