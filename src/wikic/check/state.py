"""The state every rule reads, gathered once: layer-1 documents, the plan, the wiki pages.

What the rules keep of the whole KB is compact: of each layer-1 document its names, hash and
section anchors (``DocRow``), of each page its frontmatter, hash and anchors (``PageHead``).
Texts are read one at a time: layer 1 streams past the ``readers`` a rule family gives
``gather``, the pages are read one by one when the rules walk them (``KB.read_pages``), and a
document whose text a rule needs again is read again (``KB.doc``). Only planning anew (no
usable compile state, or ``check --full``) and measuring coverage anew hold every document at
once, as the planner and the coverage measure take them.

When layer 1 and the schema are byte for byte what the last compile read, the plan is that
compile's (``compile.state.plan_record``) instead of a new one. With the same schema, the pages
the last compile wrote that are still as it wrote them, and cite only layer-1 files still as it
read them, count as verified: their citations are not checked again.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import __version__
from ..compile.citations import DEFAULT_MIN_OVERLAP, Verifier, unresolved
from ..compile.disagreements import Disagreement, Said
from ..compile.draft import Citation, as_recorded, record_id, record_links
from ..compile.schema import WikiSchema
from ..core.config import load_sources
from ..core.errors import KBError
from ..core.fsutil import read_regular, require_kb, sha256_tag
from ..core.markdown import Section
from ..core.models import SourceDoc
from ..transform.layer1 import layer1_paths, parse_doc, require_sources
from .pages import PageHead, Statement, WikiPage, page_heads, read_page


@dataclass(frozen=True, slots=True)
class DocRow:
    """A layer-1 document as the rules over the whole KB keep it: its names, hash and section
    anchors (in order), and the few frontmatter values they compare; never its text."""

    source: str
    id: str
    key: str
    path: str
    title: str
    sha256: str
    anchors: tuple[str, ...]
    supersedes: Any = None  # the frontmatter's 'supersedes', as written
    updated_at: str = ""  # str() of the frontmatter's 'updated_at' ('' without one)
    generated: bool = False  # rendered by 'wikic transform'

    @classmethod
    def of(cls, doc: SourceDoc) -> DocRow:
        return cls(
            doc.source,
            doc.id,
            doc.key,
            doc.path,
            doc.title,
            doc.sha256,
            tuple(s.anchor for s in doc.sections),
            doc.meta.get("supersedes"),
            str(doc.meta.get("updated_at", "")),
            doc.meta.get("generated_by") == "wikic",
        )

    def outline(self) -> SourceDoc:
        """The document with its section anchors and 'supersedes' alone, no text: what resolving
        'supersedes' values reads (``compile.versions``)."""
        meta = {} if self.supersedes is None else {"supersedes": self.supersedes}
        sections = tuple(Section(a, "", 0, (), "", 0) for a in self.anchors)
        return SourceDoc(
            self.source, self.id, self.key, self.path, self.title, meta, "", self.sha256, sections
        )


class Reread(Mapping[str, SourceDoc]):
    """Layer-1 documents by path, read again when asked for (the process keeps the last ones
    parsed while their bytes stay the same: ``transform.layer1.parse_doc``)."""

    def __init__(self, root: Path, rows: Mapping[str, DocRow]):
        self.root, self.rows = root, rows

    def __getitem__(self, path: str) -> SourceDoc:
        if path not in self.rows:
            raise KeyError(path)
        return parse_doc(self.root, self.root / path)

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


class RowVerifier(Verifier):
    """The compile's verifier over documents read on demand: whether a citation resolves is
    answered from the documents' anchors, without reading their text."""

    def __init__(
        self,
        rows: Mapping[str, DocRow],
        texts: Mapping[str, SourceDoc],
        min_overlap: float,
        unreadable: set[str],
    ):
        super().__init__((), min_overlap, unreadable=unreadable)
        self.rows = rows
        self.docs = texts  # what ``cited`` and ``section_text`` read, whole

    def resolve(self, cite: Citation) -> str | None:
        """As ``Verifier.resolve``, from the cited document's anchors."""
        if cite.path in self.unreadable:
            return None
        row = self.rows.get(cite.path)
        return unresolved(cite, None if row is None else row.anchors.__contains__)


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
    docs: dict[str, DocRow]  # every readable layer-1 document, in path order
    pages: list[PageHead]  # every wiki page, in path order
    superseded_by: dict[str, str]
    verifier: Verifier
    schema: WikiSchema | None
    plan: Planned | None = None  # None without a readable schema
    unreadable: dict[str, str] = field(default_factory=dict)  # layer-1 files skipped, and why
    config: Any = None  # schema/sources.yaml, or None without one
    texts: Mapping[str, SourceDoc] = field(default_factory=dict)  # the documents whole (see ``doc``)
    last: dict | None = None  # the last compile's state, when it speaks for this wikic and schema
    state: dict | None = None  # ... when that compile also read exactly this layer 1 (``compiled``)
    # What walking the pages found (``note``), read by the rules over the whole wiki:
    verified: set[str] = field(default_factory=set)  # pages as the last compile wrote and verified them
    outbound: dict[str, set[str]] = field(default_factory=dict)  # page → the other pages it links to
    statements: int = 0
    cited: list[tuple[str, list[str]]] | None = None  # (statement, cited paths), to measure coverage anew
    cited_paths: set[str] = field(default_factory=set)  # every layer-1 file a page cites (without a plan)

    @cached_property
    def content_pages(self) -> list[PageHead]:
        return [p for p in self.pages if not p.is_special]

    @cached_property
    def page_by_path(self) -> dict[str, PageHead]:
        return {p.path: p for p in self.pages}

    def said(self, page: WikiPage) -> list[tuple[str, list[str]]]:
        """(text, cited paths) of each statement of ``page``, for coverage; a cell that lists
        records by their pages' titles counts as its source's ids too."""
        out = []
        for st in page.statements:
            cited = [c.path for c in st.cites]
            out += [(text, cited) for text in dict.fromkeys([st.text, self.as_recorded(st, page.path)])]
        return out

    def as_recorded(self, st: Statement, path: str) -> str:
        """A cell of the page at ``path`` that lists records by their pages' titles, as its source
        lists them, by id ('Grove 6, Chives' for 'grove-6, chives'; ``draft.as_recorded``): a linked
        title is its page's record, a title without a link the record of the page so titled."""
        if st.kind != "cell":
            return st.text
        linked = record_links(st.raw, path, self.record_ids) if "](" in st.raw else {}
        return as_recorded(st.text, ChainMap(linked, self.titled_records))

    @cached_property
    def titled_records(self) -> dict[str, str]:
        """The title of a device's or an entry's page → the id of the record it stands for."""
        by_path = self.page_by_path
        return {str(by_path[p].meta.get("title", "")): rid for p, rid in self.record_ids.items()}

    @cached_property
    def record_ids(self) -> dict[str, str]:
        """A device's or an entry's page → the id of the record it stands for."""
        out: dict[str, str] = {}
        for head in self.pages:
            if head.meta.get("type") == "device":
                out[head.path] = Path(head.path).stem
            elif head.meta.get("type") == "entity":
                rows = [self.docs[s] for s in map(str, head.meta.get("sources") or ()) if s in self.docs]
                title = head.meta.get("title")
                out.update(
                    (head.path, record_id(r)) for r in rows if r.title == title
                )  # its record, of those
        return out

    def doc(self, path: str) -> SourceDoc:
        """A layer-1 document whole, text and all."""
        return self.texts[path]

    def read_pages(self) -> Iterator[WikiPage]:
        """Every page whole, one at a time, in path order."""
        for head in self.pages:
            yield read_page(self.root, self.root / head.path, head)

    def note(self, page: WikiPage) -> None:
        """Keep what the rules over the whole wiki read of a page being walked."""
        if still_verified(self.last, self.docs, page):
            self.verified.add(page.path)
        self.outbound[page.path] = page.outbound
        self.statements += len(page.statements)
        if self.cited is not None:
            self.cited += self.said(page)
        if self.plan is None:
            self.cited_paths.update(c.path for st in page.statements for c in st.cites)

    def compiled_coverage(self) -> dict | None:
        """The last compile's coverage when the whole wiki is as it left it (once the pages are walked)."""
        if not self.state:
            return None
        written = set(self.state.get("outputs", {}))
        whole = not unwritten(written, self.pages) and written <= self.verified
        return self.state.get("coverage") if whole else None

    def cited_texts(self) -> list[tuple[str, list[str]]]:
        """(statement, cited paths) of every page: those kept while walking, else read again."""
        if self.cited is None:
            return [pair for page in self.read_pages() for pair in self.said(page)]
        return self.cited


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
    about = {s.path: s.about for s in the_plan.pages if s.about}
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


def compiled(state: dict | None, hashes: Mapping[str, str], pages: Iterable[PageHead]) -> dict | None:
    """``state`` (``last_compile``) when that compile read exactly these layer-1 files (their
    hashes by path) and wrote every page with the backend the pages name; else None."""
    if not state or state.get("layer1") != dict(hashes):
        return None
    record = state["plan"]
    libs = {(librarian_of(p.meta).name, librarian_of(p.meta).model) for p in pages if p.managed}
    if libs - {(record.get("backend"), record.get("model"))}:
        return None
    return state


def still_verified(state: dict | None, docs: Mapping[str, DocRow], page: WikiPage) -> bool:
    """Whether ``page`` is as the last compile wrote (and verified) it and its every cited
    layer-1 file is byte for byte what that compile read: its citations check as they did then,
    whatever else in layer 1 changed since."""
    if (state or {}).get("outputs", {}).get(page.path) != page.sha256:
        return False
    read = (state or {}).get("layer1", {})
    cited = {c.path for st in page.statements for c in st.cites}
    return all(p in docs and read.get(p) == docs[p].sha256 for p in cited)


def whole_as_compiled(state: dict | None, pages: list[PageHead]) -> bool:
    """Whether every page is as ``state``'s compile wrote it, and no other page is there: then
    the rules reuse that compile's coverage, and layer 1 is read one document at a time."""
    if not state:
        return False
    outputs = state.get("outputs", {})
    hashes = {p.path: p.sha256 for p in pages}
    return not unwritten(set(outputs), pages) and all(hashes.get(p) == sha for p, sha in outputs.items())


def unwritten(written: set[str], pages: Iterable[PageHead]) -> set[str]:
    """The pages no compile wrote of those there (the append-only log aside)."""
    return {p.path for p in pages} - written - {"wiki/log.md"}


def planned_then(state: dict, docs: Mapping[str, DocRow]) -> Planned:
    """The plan as the last compile recorded it (see ``compiled``); a dispute's sides name
    their documents by ``DocRow``, which is all a rule reads of them."""
    record = state["plan"]
    fingerprints = {p: fp for p, (fp, _) in record["pages"].items()}

    def said(path: str, anchor: str, text: str) -> Said:
        return Said(docs[path], anchor, text)  # type: ignore[arg-type]

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


def layer1_hashes(root: Path) -> dict[str, str]:
    """The hash of every layer-1 file's bytes, by path, without parsing one."""
    out = {}
    for rel in layer1_paths(root):
        with contextlib.suppress(OSError):  # replaced by a link since it was listed: not read
            out[rel] = sha256_tag(read_regular(os.path.join(root, rel)))
    return out


def each_doc(root: Path, unreadable: dict[str, str]) -> Iterator[SourceDoc]:
    """``load_layer1(root, None, unreadable)`` one document at a time."""
    for rel in layer1_paths(root):
        try:
            data = read_regular(os.path.join(root, rel))
        except OSError:  # replaced by a link since it was listed: not read
            continue
        try:
            yield parse_doc(root, root / rel, data)
        except KBError as exc:
            unreadable[rel] = str(exc)


def gather(root: Path, full: bool = False, readers: Iterable[Callable[[SourceDoc], None]] = ()) -> KB:
    """Everything the rules read, each layer-1 document passed to ``readers`` as it is read;
    ``full``: plan again and verify every page, whatever the last compile did."""
    from ..compile.pageplan import supersession
    from ..compile.schema import load_wiki_schema

    require_kb(root)
    # a sources.yaml that cannot be read is a configuration error (exit 2), not a rule to skip
    config = load_sources(root) if (root / "schema" / "sources.yaml").exists() else None
    require_sources(root, "check")
    pages = page_heads(root)
    has_schema = (root / "schema" / "wiki.yaml").exists()
    last = None if full else last_compile(root)
    likely = compiled(last, layer1_hashes(root), pages) if last else None
    # Planning anew, or measuring coverage anew, takes every document at once: hold them then.
    hold = has_schema and not whole_as_compiled(likely, pages)
    unreadable: dict[str, str] = {}
    rows: dict[str, DocRow] = {}
    held: list[SourceDoc] = []
    for doc in each_doc(root, unreadable):
        rows[doc.path] = DocRow.of(doc)
        for read in readers:
            read(doc)
        if hold:
            held.append(doc)
    last = None if unreadable else last
    state = compiled(last, {p: r.sha256 for p, r in rows.items()}, pages)
    texts: Mapping[str, SourceDoc] = Reread(root, rows)
    if hold or (has_schema and not state):  # the latter: layer 1 changed while it was read
        texts = {d.path: d for d in held} if hold else {p: texts[p] for p in rows}
    schema = planned = None
    if has_schema:
        schema = load_wiki_schema(root)
        planned = planned_then(state, rows) if state else planned_now(list(texts.values()), schema)
        superseded = planned.superseded_by
    else:
        superseded = supersession([r.outline() for r in rows.values()])
    min_overlap = schema.min_overlap if schema else DEFAULT_MIN_OVERLAP
    return KB(
        root,
        rows,
        pages,
        superseded,
        RowVerifier(rows, texts, min_overlap, set(unreadable)),
        schema,
        planned,
        unreadable,
        config,
        texts,
        last,
        state,
        cited=[] if hold else None,
    )
