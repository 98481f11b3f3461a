"""The state every rule reads, gathered once: layer-1 documents, the plan, the wiki pages.

When layer 1 and the schema are byte for byte what the last compile read, the plan is that
compile's (``compile.state.plan_record``) instead of a new one. With the same schema, the pages
the last compile wrote that are still as it wrote them, and cite only layer-1 files still as it
read them, count as verified: their citations are not checked again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import __version__
from ..compile.citations import DEFAULT_MIN_OVERLAP, Verifier
from ..compile.disagreements import Disagreement, Said
from ..compile.schema import WikiSchema
from ..core.config import load_sources
from ..core.fsutil import require_kb
from ..core.models import SourceDoc
from ..transform.layer1 import load_layer1, require_sources
from .pages import WikiPage, wiki_pages


@dataclass
class Planned:
    """What the rules read of the page plan."""

    pages: dict[str, tuple[str, ...]]  # planned page → the sources it is made from, in plan order
    reasons: dict[str, str]  # unplaced layer-1 path → why
    superseded_by: dict[str, str]
    disputes: list[Disagreement]
    expected: Callable[[str, dict], str | None]  # (page, its frontmatter) → the fingerprint it should have
    about: dict[str, str] = field(default_factory=dict)  # page → the description the plan gives it


@dataclass
class KB:
    root: Path
    docs: dict[str, SourceDoc]
    pages: list[WikiPage]
    superseded_by: dict[str, str]
    verifier: Verifier
    schema: WikiSchema | None
    plan: Planned | None = None  # None without a readable schema
    unreadable: dict[str, str] = field(default_factory=dict)  # layer-1 files skipped, and why
    verified: frozenset[str] = frozenset()  # pages as the last compile wrote and verified them
    compiled_coverage: dict | None = None  # that compile's coverage, when the whole wiki is as it left it
    config: Any = None  # schema/sources.yaml, or None without one

    @cached_property
    def content_pages(self) -> list[WikiPage]:
        return [p for p in self.pages if not p.is_special]

    @cached_property
    def page_paths(self) -> set[str]:
        return {p.path for p in self.pages}


def librarian_of(meta: dict) -> SimpleNamespace:
    """The backend identity (``name``, ``model``) that went into a page's fingerprint."""
    info = meta.get("wikic") or {}
    backend = str(info.get("backend", "offline"))
    if backend == "offline":
        from ..compile.librarian.offline import OfflineLibrarian

        return SimpleNamespace(name=OfflineLibrarian.name, model=OfflineLibrarian.model)
    return SimpleNamespace(name=backend, model=str(info.get("model", "")))


def planned_now(docs_list: list[SourceDoc], schema: WikiSchema) -> Planned:
    """The plan made from the documents as they are."""
    from ..compile.pageplan import plan
    from ..compile.run import fingerprint, model_written, navigation

    the_plan = plan(docs_list, schema)
    docs = {d.path: d for d in docs_list}
    specs = {s.path: s for s in the_plan.pages}
    unanchored = functools.cache(lambda backend: model_written(the_plan, backend))

    def expected(path: str, meta: dict) -> str | None:
        lib = librarian_of(meta)
        nav = navigation(the_plan, specs[path], unanchored(lib.name))
        return fingerprint(specs[path], docs, schema, lib, nav)  # type: ignore[arg-type]

    pages = {s.path: s.sources for s in the_plan.pages}
    about = {s.path: s.config["about"] for s in the_plan.pages if s.config.get("about")}
    return Planned(pages, the_plan.reasons, the_plan.superseded_by, the_plan.disputes, expected, about)


def last_compile(root: Path) -> dict | None:
    """The last compile's state when that compile finished, with this wikic and this schema;
    else None."""
    from ..compile.state import load_state, schema_hashes

    state = load_state(root) or {}
    record = state.get("plan") or {}
    if not record or "about" not in record or state.get("version") != __version__ or not state.get("digest"):
        return None
    if state.get("schema") != [list(x) for x in schema_hashes(root)]:
        return None
    return state


def compiled(state: dict | None, docs: dict[str, SourceDoc], pages: list[WikiPage]) -> dict | None:
    """``state`` (``last_compile``) when that compile read exactly these layer-1 files and wrote
    every page with the backend the pages name; else None."""
    if not state or state.get("layer1") != {p: d.sha256 for p, d in docs.items()}:
        return None
    record = state["plan"]
    libs = {(librarian_of(p.meta).name, librarian_of(p.meta).model) for p in pages if p.managed}
    if libs - {(record.get("backend"), record.get("model"))}:
        return None
    return state


def still_verified(state: dict | None, docs: dict[str, SourceDoc], pages: list[WikiPage]) -> frozenset[str]:
    """The pages as the last compile wrote (and verified) them whose every cited layer-1 file is
    byte for byte what that compile read: their citations check as they did then, whatever
    else in layer 1 changed since."""
    outputs = (state or {}).get("outputs", {})
    read = (state or {}).get("layer1", {})

    def unchanged(page: WikiPage) -> bool:
        cited = {c.path for st in page.statements for c in st.cites}
        return all(p in docs and read.get(p) == docs[p].sha256 for p in cited)

    return frozenset(p.path for p in pages if outputs.get(p.path) == p.sha256 and unchanged(p))


def planned_then(state: dict, docs: dict[str, SourceDoc]) -> Planned:
    """The plan as the last compile recorded it (see ``compiled``)."""
    record = state["plan"]
    fingerprints = {p: fp for p, (fp, _) in record["pages"].items()}

    def said(path: str, anchor: str, text: str) -> Said:
        return Said(docs[path], anchor, text)

    disputes = [
        Disagreement(said(*d[1:4]), said(*d[5:8]), d[4], d[8], d[0])
        for d in record["disputes"]
        if d[1] in docs and d[5] in docs
    ]
    pages = {p: tuple(sources) for p, (_, sources) in record["pages"].items()}
    return Planned(
        pages,
        state.get("reasons", {}),
        record["superseded_by"],
        disputes,
        lambda p, _: fingerprints.get(p),
        record["about"],
    )


def gather(root: Path, full: bool = False) -> KB:
    """Everything the rules read; ``full``: plan again and verify every page, whatever the last
    compile did."""
    from ..compile.pageplan import supersession
    from ..compile.schema import load_wiki_schema

    require_kb(root)
    # a sources.yaml that cannot be read is a configuration error (exit 2), not a rule to skip
    config = load_sources(root) if (root / "schema" / "sources.yaml").exists() else None
    require_sources(root, "check")
    unreadable: dict[str, str] = {}
    docs_list = load_layer1(root, None, unreadable)
    docs = {d.path: d for d in docs_list}
    pages = wiki_pages(root)
    schema = None
    planned = None
    last = None if full or unreadable else last_compile(root)
    state = compiled(last, docs, pages)
    if (root / "schema" / "wiki.yaml").exists():
        schema = load_wiki_schema(root)
        planned = planned_then(state, docs) if state else planned_now(docs_list, schema)
        superseded = planned.superseded_by
    else:
        superseded = supersession(docs_list)
    outputs = (state or {}).get("outputs", {})
    verified = still_verified(last, docs, pages)
    added = {p.path for p in pages} - set(outputs) - {"wiki/log.md"}  # pages the compile did not write
    whole = bool(state) and not added and set(outputs) <= verified
    min_overlap = schema.min_overlap if schema else DEFAULT_MIN_OVERLAP
    return KB(
        root,
        docs,
        pages,
        superseded,
        Verifier(docs_list, min_overlap, unreadable=set(unreadable)),
        schema,
        planned,
        unreadable,
        verified,
        state.get("coverage") if whole and state else None,
        config,
    )
