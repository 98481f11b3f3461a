"""Versioned documents: which layer-1 documents, or single sections, a newer document replaces.

A document says what it replaces in its frontmatter, ``supersedes:`` (one value or a list):

- ``other-id`` or ``other.md``: a record id, key or file name of the same source;
- ``source:name``: a document of another source;
- either with ``#section`` (an anchor, or the heading's text): only that section is replaced, and
  the rest of the older document stays current.

``schema/wiki.yaml`` may also list ``versions:``, chains of whole documents oldest first, which
``wikic plan`` proposes from file names with a version suffix (``_v1``, ``-v2``, ``-2025``) and
from ``updated`` dates (``version_chains``).

Supersession is a map from the older document's path, or ``path#anchor`` for one section, to the
path of the document that replaces it.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.markdown import github_slug
from ..core.models import SourceDoc

UPDATED_FIELDS = ("updated_at", "updated", "last_modified", "modified", "date")


@dataclass(frozen=True)
class Unresolved:
    """A ``supersedes`` value that names no document or section."""

    path: str  # the document that says it
    value: str
    reason: str


def section_key(path: str, anchor: str) -> str:
    return f"{path}#{anchor}"


def is_superseded(path: str, anchor: str, superseded: dict[str, str]) -> bool:
    """Whether the section ``path#anchor`` states an older version (its document or it alone)."""
    return path in superseded or bool(anchor) and section_key(path, anchor) in superseded


def supersedes_values(doc: SourceDoc) -> list[str]:
    value = doc.meta.get("supersedes")
    values = value if isinstance(value, list) else [value]
    return [str(v).strip() for v in values if v not in (None, "") and str(v).strip()]


class _Refs:
    """Documents by every ``source:name`` that names them (id, key, file name, stem)."""

    def __init__(self, docs: Iterable[SourceDoc]):
        self.by_ref: dict[str, SourceDoc] = {}
        for d in docs:
            for r in d.refs:
                self.by_ref.setdefault(r, d)

    def get(self, source: str, name: str) -> SourceDoc | None:
        name = name.strip().lstrip("./")
        return self.by_ref.get(f"{source}:{name}")


def resolve_supersedes(
    docs: list[SourceDoc], chains: Iterable[Any] = ()
) -> tuple[dict[str, str], list[Unresolved]]:
    """The supersession map, and the ``supersedes`` values that name nothing.

    ``chains`` are ``wikischema.VersionChain`` values (``source`` and ``chain``, oldest first).
    A document's own ``supersedes`` wins over a chain that says otherwise.
    """
    refs = _Refs(docs)
    out: dict[str, str] = {}
    problems: list[Unresolved] = []
    for chain in chains:
        found = []
        for name in chain.chain:
            d = refs.get(chain.source, name)
            if d is None:
                problems.append(
                    Unresolved("schema/wiki.yaml", f"{chain.source}:{name}", "no document of that name")
                )
            else:
                found.append(d)
        for old, new in zip(found, found[1:]):
            if old.path != new.path:
                out[old.path] = new.path
    for d in docs:
        for value in supersedes_values(d):
            ref, _, anchor = value.partition("#")
            source, colon, name = ref.rpartition(":")
            old = refs.get(source if colon else d.source, name)
            if old is None:
                problems.append(Unresolved(d.path, value, "no document of that name"))
                continue
            if old.path == d.path:
                problems.append(Unresolved(d.path, value, "a document cannot supersede itself"))
                continue
            if not anchor:
                out[old.path] = d.path
                continue
            section = old.section(anchor) or old.section(github_slug(anchor))
            if section is None or not section.anchor:
                problems.append(Unresolved(d.path, value, f"{old.path} has no section '{anchor}'"))
                continue
            out[section_key(old.path, section.anchor)] = d.path
    return out, problems


def supersession(docs: list[SourceDoc], chains: Iterable[Any] = ()) -> dict[str, str]:
    return resolve_supersedes(docs, chains)[0]


def current_of(path: str, superseded_by: dict[str, str]) -> str:
    """The document (or ``path#anchor`` section) that replaces ``path`` in the end, following a
    chain; ``path`` itself when nothing replaces it."""
    seen = set()
    while path in superseded_by and path not in seen:
        seen.add(path)
        path = superseded_by[path]
    return path


def replaced_on_page(docs: dict[str, SourceDoc], superseded_by: dict[str, str]) -> dict[str, list[SourceDoc]]:
    """For each document, those of ``docs`` it replaces, directly or through a chain (whole, or
    reduced to the section it replaces), in the order of ``docs``: one pass for a whole page."""
    gone: dict[str, list[str]] = {}  # path → the anchors of its sections a newer document replaces
    for key in superseded_by:
        path, mark, anchor = key.partition("#")
        if mark and path in docs:
            gone.setdefault(path, []).append(anchor)
    out: dict[str, list[SourceDoc]] = {}
    for p, d in docs.items():
        if p in superseded_by:
            out.setdefault(current_of(p, superseded_by), []).append(d)
        for anchor in sorted(gone.get(p, ())):
            out.setdefault(current_of(section_key(p, anchor), superseded_by), []).append(
                section_view(d, anchor)
            )
    return out


def superseded_anchors(path: str, superseded: dict[str, str]) -> set[str]:
    prefix = path + "#"
    return {k[len(prefix) :] for k in superseded if k.startswith(prefix)}


def current_view(doc: SourceDoc, superseded: dict[str, str]) -> SourceDoc:
    """``doc`` without the sections a newer document replaces (itself when none is)."""
    gone = superseded_anchors(doc.path, superseded)
    if not gone:
        return doc
    return dataclasses.replace(doc, sections=tuple(s for s in doc.sections if s.anchor not in gone))


def section_view(doc: SourceDoc, anchor: str) -> SourceDoc:
    """``doc`` reduced to one section, for quoting that section in a superseded note."""
    return dataclasses.replace(doc, sections=tuple(s for s in doc.sections if s.anchor == anchor))


def updated_of(doc: SourceDoc) -> str:
    for name in UPDATED_FIELDS:
        value = doc.meta.get(name)
        if value not in (None, ""):
            return str(value)
    return ""


# A version suffix: _v2, -v1.1, ' v3', .v2 (an explicit v), or a year with an optional month and
# day: -2025, _2025-03, -2025-03-01. Plain numbers ('firmware-3') name things, not versions.
_VERSION = re.compile(
    r"^(?P<base>.+?)[-_. ](?:v(?:ersion)?(?P<v>\d+(?:[._]\d+)*)|(?P<y>(?:19|20)\d\d(?:[-_]\d\d){0,2}))$",
    re.IGNORECASE,
)


def version_of(name: str) -> tuple[str, tuple[int, ...]]:
    """A file stem's base name and version numbers: ``refunds_v2`` → ``('refunds', (2,))``,
    ``refunds-2025-03`` → ``('refunds', (2025, 3))``, ``refunds`` → ``('refunds', ())``."""
    m = _VERSION.match(name)
    if not m:
        return name.lower(), ()
    digits = m.group("v") or m.group("y")
    return m.group("base").lower(), tuple(int(x) for x in re.split(r"[-_.]", digits))


@dataclass(frozen=True)
class ProposedChain:
    source: str
    docs: tuple[SourceDoc, ...]  # oldest first
    evidence: str  # what was seen, for the proposal's comment
    todo: str = ""  # set when the order is a guess a person should confirm


def version_chains(docs: list[SourceDoc], superseded: dict[str, str]) -> list[ProposedChain]:
    """Documents of one source with the same base name and a version suffix, or the same name in
    different folders, ordered by version then ``updated``; chains ``supersedes`` already states
    in full are left out."""
    groups: dict[tuple[str, str], list[SourceDoc]] = defaultdict(list)
    for d in docs:
        stem = PurePosixPath(d.key).name
        groups[(d.source, version_of(stem)[0])].append(d)
    out = []
    for (source, base), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        order = sorted(
            members, key=lambda d: (version_of(PurePosixPath(d.key).name)[1], updated_of(d), d.path)
        )
        keys = [(version_of(PurePosixPath(d.key).name)[1], updated_of(d)) for d in order]
        if all(superseded.get(a.path) == b.path for a, b in zip(order, order[1:])):
            continue  # already stated by the documents themselves
        versions = [k[0] for k in keys]
        dates = [k[1] for k in keys]
        todo = ""
        if len(set(keys)) < len(keys):
            todo = "two of these have the same version and date; put them in order by hand"
        elif any(a and b and a > b for a, b in zip(dates, dates[1:])) and len(set(versions)) > 1:
            todo = "the version suffixes and the updated dates disagree on the order; check it"
        if len(set(versions)) > 1:
            seen = "same base name '" + base + "' with version suffixes"
        else:
            seen = f"same file name '{base}' in {len(members)} places, ordered by updated date"
        if any(dates):
            seen += "; updated " + ", ".join(x or "?" for x in dates)
        out.append(ProposedChain(source, tuple(order), seen, todo))
    return out


def schema_chains(root: Path) -> tuple:
    """The ``versions`` chains of ``schema/wiki.yaml``; none when the KB has no wiki.yaml."""
    from .schema import load_wiki_schema

    if not (root / "schema" / "wiki.yaml").exists():
        return ()
    return load_wiki_schema(root).versions
