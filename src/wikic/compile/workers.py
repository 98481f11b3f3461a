"""The page phase of a compile: each page drafted, verified and rendered on its own, its new text
staged in a temp file beside the page (``publish`` moves it into place once the log entry is
recorded), and only what the index, the report and coverage need kept of it.

Pages are independent once planned, so the offline librarian's pages (and every backend's
overviews, glossary and change list) are made in a pool of processes forked from the compile,
which share its documents and plan without copying them; results come back in plan order, so
any number of processes writes the same bytes. LLM backends draft with their own concurrency,
and their drafts are finished here, in the compile's process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from .. import __version__
from ..core import pool
from ..core.fsutil import sha256_tag, stage_write
from .citations import Verifier
from .draft import Draft, Navigation, render_body
from .finish import finish_draft
from .librarian.base import Librarian, PageJob
from .librarian.offline import OfflineLibrarian, write_page
from .pageplan import PageSpec
from .report import CompileReport, diffstat
from .schema import WikiSchema
from .searchindex.store import Made, page_rows

Statements = list[tuple[str, list[str]]]


@dataclass
class PageOut:
    """One page as the page phase left it."""

    path: str
    staged: str | None = None  # the temp file holding its new text; None: nothing to write
    existed: bool = False  # the page was on disk (changed) rather than new (added)
    diffstat: tuple[int, int] = (0, 0)
    entry: tuple[str, str, tuple[str, ...]] | None = None  # title, summary, keywords; None: failed
    statements: Statements = field(default_factory=list)  # (text, cited paths), for coverage
    rows: Made | None = None  # its new text's search-index rows (``store.page_rows``), when staged
    report: CompileReport = field(default_factory=CompileReport)  # this page's counts


@dataclass
class Task:
    """A page to make: its job and fingerprint, and the draft an LLM backend wrote for it (None
    when it wrote none); the offline librarian drafts in the page phase itself."""

    spec: PageSpec
    fp: str
    job: PageJob
    offline: bool = True
    draft: Draft | None = None


def render_page(spec: PageSpec, draft: Draft, fp: str, lib: Librarian, nav: Navigation) -> str:
    _, head, body = page_parts(spec, draft, fp, lib, nav)
    return page_text(head, body)


def page_parts(
    spec: PageSpec, draft: Draft, fp: str, lib: Librarian, nav: Navigation
) -> tuple[dict, str, str]:
    """A page's frontmatter, as a dict and as YAML, and its body: ``page_text`` joins them."""
    meta = {
        "title": draft.title,
        "type": spec.type,
        "summary": " ".join(draft.summary.split()),
        "keywords": list(draft.keywords),
        "sources": list(spec.sources),
        "wikic": {"fingerprint": fp, "backend": lib.name, "model": lib.model, "version": __version__},
    }
    head = yaml.dump(meta, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=1000)
    return meta, head, render_body(draft, spec.path, nav)


def page_text(head: str, body: str) -> str:
    return f"---\n{head}---\n\n{body}"


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter where PyYAML has it


def statements_of(blocks) -> Statements:
    """(text, cited layer-1 paths) of every cited sentence and table cell of a draft."""
    out = [(s.text, [c.path for c in s.cites]) for b in blocks for s in b.sentences if s.cites]
    out += [(c.text, [x.path for x in c.cites]) for b in blocks for row in b.rows for c in row if c.cites]
    return out


@dataclass
class Shared:
    """What every page of a compile reads: set before the pool forks, so its processes share it."""

    root: Path
    schema: WikiSchema
    verifier: Verifier
    lib: Librarian
    written: dict[str, str]  # wiki path → hash of the file on disk
    tasks: Sequence[Task] = ()
    indexed: Mapping[str, str] = field(default_factory=dict)  # wiki path → hash the search index holds


def finish_page(shared: Shared, task: Task) -> PageOut:
    """Draft (offline), verify and finish a page, render it, and stage its text if it differs
    from the page on disk; the verifier forgets the cited texts afterwards, so memory follows a
    page, not the KB."""
    spec, lib = task.spec, shared.lib
    out = PageOut(spec.path)
    outline = shared.schema.page_types[spec.type].sections if spec.type in shared.schema.page_types else ()
    draft = write_page(task.job) if task.offline else task.draft
    final = finish_draft(task.job, draft, lib, shared.verifier, out.report, outline) if draft else None
    shared.verifier.forget()
    if final is None:
        return out
    out.entry = (final.title, final.summary, final.keywords)
    out.statements = statements_of(final.blocks)
    meta, head, body = page_parts(spec, final, task.fp, lib, task.job.nav)
    text = page_text(head, body)
    digest = sha256_tag(text.encode("utf-8"))
    if shared.written.get(spec.path) == digest:
        return out
    target = shared.root / spec.path
    old = target.read_text("utf-8") if target.exists() else None
    out.existed, out.diffstat = old is not None, diffstat(old, text)
    out.staged = str(stage_write(target, text))
    if shared.indexed.get(spec.path) != digest:  # chunked here, in the pool, not by the index
        out.rows = page_rows(spec.path, text, (meta, head, body))
    return out


_SHARED: Shared | None = None  # the pool's work, inherited by its forked processes


def _page(i: int) -> PageOut:
    assert _SHARED is not None
    return finish_page(_SHARED, _SHARED.tasks[i])


def pages(shared: Shared, jobs: int, advance: Callable[[int], None]) -> Iterator[PageOut]:
    """Every task's page, in order: in ``jobs`` forked processes when the librarian is the
    offline one (no network client is forked), the platform forks and there are more than a
    handful of pages; else here."""
    global _SHARED
    n = len(shared.tasks)
    pooled = shared.lib.name == OfflineLibrarian.name and jobs > 1 and n >= 2 * jobs
    if not pooled or not pool.can_fork():
        for task in shared.tasks:
            yield finish_page(shared, task)
            if task.offline:  # an LLM backend's drafts were counted as it wrote them
                advance(1)
        return
    _SHARED = shared
    try:
        with pool.forked(jobs) as processes:
            for out in processes.imap(_page, range(n), chunksize=max(1, min(4, n // (jobs * 8)))):
                yield out
                advance(1)
    finally:
        _SHARED = None


def merge_counts(report: CompileReport, page: CompileReport) -> None:
    """Add a page's counts (sentences, verified, dropped …, their reasons and notes) to the compile's."""
    for f in fields(CompileReport):
        value = getattr(page, f.name)
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(report, f.name, getattr(report, f.name) + value)
    report.drop_reasons += page.drop_reasons
    report.notes += page.notes
