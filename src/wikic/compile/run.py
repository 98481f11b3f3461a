"""Compile stage: layer 1 → wiki, incrementally.

The orchestrator reads everything, plans the pages, asks the librarian only for pages whose
fingerprint changed, verifies every citation, and only then writes: pages, index, log.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath

from .. import __version__
from ..core.errors import ConfigError
from ..core.fsutil import (
    canonical_json,
    kb_lock,
    refuse_folder_links,
    remove_stale_temps,
    sha256_tag,
    write_json_artifact,
)
from ..core.markdown import github_slug, plain_inline
from ..core.models import SourceDoc
from ..core.pool import LIGHT, Ahead, Jobs, ahead, default_jobs, frozen_heap, slices
from ..transform.layer1 import load_layer1, read_layer1, require_sources
from . import workers
from .citations import Verifier
from .draft import Navigation, record_id
from .index import (
    Entry,
    append_log,
    apply_overrides,
    load_overrides,
    render_index,
    source_counts,
    write_index,
)
from .librarian.base import Librarian, PageJob
from .librarian.offline import DERIVED_TYPES, OfflineLibrarian
from .links import Target
from .pageplan import PageSpec, Plan, section_keys
from .pageplan import plan as make_plan
from .report import CompileReport, diffstat
from .schema import WikiSchema, load_wiki_schema
from .searchindex.files import WIKI_KINDS
from .searchindex.store import DB_PATH as INDEX_PATH
from .searchindex.store import indexed_pages, mend_query_file, reported, update_index, update_layer1
from .similarity import load_embedding, stored_in
from .state import (
    FACTS,
    STATE_VERSION,
    changed_sources,
    current_facts,
    fact_changes,
    input_digest,
    load_state,
    managed_pages,
    pending_log,
    plan_record,
    read_facts,
    record_pending,
    save_state,
    wiki_hashes,
)
from .timeline import quantity
from .workers import PageOut, Shared, Task, merge_counts

WIKI = "wiki"
Progress = Callable[[str, int, int | None], None]


def fingerprint(
    spec: PageSpec, docs: dict[str, SourceDoc], schema: WikiSchema, lib: Librarian, nav: Navigation
) -> str:
    """Everything a page is made from: its spec, its sources' hashes, the shared schema and rules,
    the backend, the wikic version, and its links to other pages (names, see also, backlinks)."""
    inputs = [(p, docs[p].sha256) for p in spec.sources if p in docs]
    links = {f.name: getattr(nav, f.name) for f in fields(nav)}  # tuples of strings: no deep copy
    return sha256_tag(
        canonical_json([spec.spec_hash, inputs, schema.hash, lib.name, lib.model, __version__, links])
    )


def model_written(plan: Plan, backend: str) -> frozenset[str]:
    """The pages whose headings a model writes (every page but the offline librarian's own
    overviews, glossary and change list, when the backend is an LLM): their anchors are not
    known when the plan is made, so links to them go to the page."""
    if backend == OfflineLibrarian.name:
        return frozenset()
    return frozenset(s.path for s in plan.pages if s.type not in DERIVED_TYPES)


def navigation(plan: Plan, spec: PageSpec, unanchored: frozenset[str] = frozenset()) -> Navigation:
    """A page's links, as the plan decided them; a link to one of the ``unanchored`` pages goes
    to the page, not to a heading on it."""

    def href(t: Target) -> str:
        return t.path if t.path in unanchored else t.href

    names = tuple((list(k), href(t)) for k, t in plan.links.get(spec.path, {}).items())
    refs = []  # the sources' own links, to where their targets are shown
    for path in spec.sources:
        for anchor, text, to_path, to_anchor, lead in plan.source_links.get(path, ()):
            target = plan.target(to_path, to_anchor)
            if target is not None and (target.path != spec.path or target.anchor):  # not to the page it is on
                refs.append((path, anchor, text, href(target), lead))
    mentions = []
    quoted = spec.type == "entity"  # an entry's page quotes what others say of it; no link list
    for doc, found in sorted((spec.config.get("mentions") or {}).items() if not quoted else ()):
        targets: dict[str, str] = {}
        for path, anchor, _ in found:
            target = plan.target(path, anchor)
            if target is not None and target.path != spec.path:
                targets.setdefault(href(target), plan.titles.get(target.path, target.path))
        if targets:
            mentions.append((doc, tuple(targets.items())))
    homes: dict[str, tuple[str, str]] = {}
    for key in section_keys(spec):
        path, _, anchor = key.partition("#")
        target = plan.target(path, anchor)
        if target is not None and target.path != spec.path:
            homes[key] = (href(target), plan.titles.get(target.path, target.path))
    outdated = []
    for key in section_keys(spec):
        for sentence, (change, said) in sorted(plan.timeline.outdated.get(key.partition("#")[0], {}).items()):
            target = plan.target(change.statement.doc.path, change.statement.anchor)
            if target is not None:
                now = quantity(change.new, change.unit)
                title = plan.titles.get(target.path, target.path)
                outdated.append((sentence, said.date, now, href(target), title))
    disputes = []
    keys = section_keys(spec)
    paths = {key.partition("#")[0] for key in keys}
    for d in plan.disputes:
        sides = [(d.a, d.b, d.choice_a, d.choice_b), (d.b, d.a, d.choice_b, d.choice_a)]
        shown = [_shown_at(s[0], spec, keys) for s in sides]
        both = None not in shown
        if both:  # both stand on this page: one note, where the first of them does
            sides = [sides[shown.index(min(shown))]]
        for this, other, own, choice in sides:
            target = plan.target(other.doc.path, other.anchor)
            if this.doc.path in paths and target is not None:
                # 'Etcher in Troubleshooting, against Raspberry Pi Imager here': both choices named;
                # both on this page, the note stands at the first and points down to the other
                title = plan.titles.get(target.path, target.path)
                where = "further down this page" if target.path == spec.path else f"in {title}"
                home = (href(target), f"{choice} {where}, against {own} here")
                section = other.doc.section(other.anchor) if both else None
                heading = plain_inline(section.heading) if section is not None else ""
                here = (
                    f"{spec.path}#{github_slug(heading)}",
                    f"{choice} further down this page, against {own} here",
                )
                disputes.append((this.text, *(here if heading else home), *home))
    return Navigation(
        outdated=tuple(dict.fromkeys(outdated)),
        disputes=tuple(dict.fromkeys(disputes)),
        names=tuple((tuple(k), h) for k, h in names),
        proper=tuple(tuple(k) for k, _ in names if tuple(k) in plan.proper),
        compounds=tuple(
            (k[0], tuple(sorted(plan.compounds[k[0]])))
            for k, _ in names
            if len(k) == 1 and k[0] in plan.compounds
        ),
        words=tuple(tuple(k) for k, _ in names if tuple(k) in plan.words),
        titled=tuple((k, href(t)) for k, t in plan.titled.get(spec.path, {}).items()),
        shown=tuple(
            (tuple(k), plan.titles[t.path])
            for k, t in plan.links.get(spec.path, {}).items()
            if not t.anchor and t.path in plan.subject_pages
        ),
        own=tuple(tuple(k) for k in plan.own.get(spec.path, ())),
        homes=tuple((k, h, t) for k, (h, t) in homes.items()),
        see_also=tuple((p, plan.titles[p]) for p in plan.see_also.get(spec.path, ())),
        backlinks=tuple((p, plan.titles[p]) for p in plan.backlinks.get(spec.path, ())),
        mentions=tuple(mentions),
        refs=tuple(refs),
    )


def make_librarian(
    schema: WikiSchema,
    backend: str | None,
    environ: dict[str, str] | None = None,
    report: CompileReport | None = None,
    batch: bool = False,
) -> Librarian:
    """The configured backend; without an API key a configured LLM backend falls back to offline."""
    env = os.environ if environ is None else environ
    chosen = backend or schema.librarian.backend
    if batch and chosen != "anthropic":
        raise ConfigError("--batch needs the anthropic librarian (Message Batches)")
    if chosen == "anthropic":
        if not env.get("ANTHROPIC_API_KEY"):
            if backend:
                raise ConfigError("--librarian anthropic needs ANTHROPIC_API_KEY in the environment")
            if report is not None:
                report.notes.append("ANTHROPIC_API_KEY is not set; using the offline librarian")
            chosen = "offline"
        else:
            from .librarian.anthropic import AnthropicLibrarian

            return AnthropicLibrarian.from_schema(schema, env, batch=batch)
    if chosen == "openai":
        from .librarian.openai import OpenAILibrarian

        return OpenAILibrarian.from_schema(schema, env)
    if chosen != "offline":
        raise ConfigError(f"unknown librarian '{chosen}'; use offline, anthropic or openai")
    from .librarian.offline import OfflineLibrarian

    return OfflineLibrarian()


@dataclass
class Inputs:
    """What a compile reads before it decides anything: layer 1's bytes and what the last
    compile recorded."""

    files: dict[str, bytes]
    digest: str
    state: dict | None
    written: dict[str, str]  # wiki path → hash of the file on disk now

    @property
    def unchanged(self) -> bool:
        """Nothing read changed since the last compile, and no page was touched since."""
        return (
            bool(self.state)
            and self.state.get("digest") == self.digest
            and self.state.get("outputs") == self.written
        )


@dataclass
class Work:
    """The page plan and the pages to (re)write: a page whose fingerprint is unchanged is not
    drafted again."""

    docs: dict[str, SourceDoc]
    plan: Plan
    navs: dict[str, Navigation]
    existing: dict[str, dict]  # wiki pages wikic wrote, with their frontmatter
    kept: set[str]  # pages left as they are: made from a layer-1 file that cannot be read
    jobs: list[tuple[PageSpec, str, PageJob]]
    to_remove: list[str]
    fingerprints: dict[str, str]  # planned page → its fingerprint

    @property
    def docs_list(self) -> list[SourceDoc]:
        return list(self.docs.values())


def _shown_at(statement, spec: PageSpec, keys: list[str]) -> int | None:
    """Where on a page a statement's section stands, by the order of the sections it quotes (a
    topic's whole documents by theirs), or None when the page does not show it."""
    key = f"{statement.doc.path}#{statement.anchor}"
    if key in keys:
        return keys.index(key)
    whole = statement.doc.path in (spec.config.get("members") or ())
    return keys.index(statement.doc.path) if whole and statement.doc.path in keys else None


def compile_wiki(
    root: Path,
    *,
    librarian: Librarian | None = None,
    backend: str | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    environ: dict[str, str] | None = None,
    batch: bool = False,
    pages: list[str] | None = None,
    limit: int | None = None,
    jobs: int | None = None,
) -> CompileReport:
    """Compile layer 1 into the wiki. ``pages`` (wiki paths or page names) and ``limit`` (the
    first N pages that need it) compile a subset, to try a model or a prompt on a few pages; the
    other pages are left as they are, and nothing is removed. ``jobs`` processes make the pages
    (by default one per core); the wiki is the same for any number."""
    started = time.perf_counter()
    report = CompileReport()
    schema = load_wiki_schema(root)
    lib = librarian or make_librarian(schema, backend, environ, report, batch)
    report.backend, report.model = lib.name, lib.model
    with kb_lock(root), frozen_heap():  # plan_work freezes what lives until the end
        refuse_folder_links(root, WIKI)
        remove_stale_temps(root / WIKI)
        inputs = read_inputs(root, lib)
        if inputs.unchanged and not dry_run and pages is None:
            restore_report(report, inputs.state)
            settled_index(root, schema, report, jobs or default_jobs())
        else:
            jobs = jobs or default_jobs()
            compile_changed(root, inputs, schema, lib, report, jobs, dry_run, progress, pages, limit)
    report.seconds = time.perf_counter() - started
    return report


def compile_changed(
    root: Path,
    inputs: Inputs,
    schema: WikiSchema,
    lib: Librarian,
    report: CompileReport,
    jobs: int,
    dry_run: bool,
    progress: Progress | None,
    pages: list[str] | None,
    limit: int | None,
) -> None:
    """Plan, draft and publish what changed, then bring the search index up to date. With more
    than one job, layer 1 goes into the index in a process of its own while the pages are
    planned and written (``update_layer1``), and the pages go in, in another, while the compile
    is recorded (coverage, log, state)."""
    # the embedding is loaded once, before the fork: the indexing process and the planner share
    # it; while the documents are parsed in processes, this one would wait for them idle
    loading = schema.semantic and jobs > 1 and not dry_run
    docs, skipped = parse_layer1(root, inputs, report, jobs, load_embedding if loading else None)
    indexed = indexed_pages(root)  # read before layer 1 is written into the index alongside
    layer1 = functools.partial(update_layer1, root, schema.semantic, docs)
    with ahead(layer1, enabled=jobs > 1 and not dry_run, niceness=0) as indexing:
        # the indexing takes a core, at the compile's own priority; until it is done, the plan's
        # processes would only take turns with it there, each copying what it reads and sending
        # its part back: a pass of the plan takes a core less (2 cores: none forked)
        cores: Jobs = jobs if indexing is None else lambda: jobs - (not indexing.done())
        work = plan_work(root, inputs, docs, skipped, schema, lib, report, cores)
        if pages is not None or limit is not None:
            work.jobs, report.skipped = select_jobs(work.jobs, work.plan, pages, limit)
            work.to_remove = []
        if dry_run:
            report.plan = dry_run_rows(work, schema, lib)
            return
        drafted = draft_pages(root, inputs, work, schema, lib, report, progress, jobs, indexed)
        logged = publish(root, inputs, work, drafted, schema, report)
        outdated = {path: list(found) for path, found in work.plan.timeline.outdated.items()}
        wiki_only = indexing is not None and indexed_ahead(indexing, report)
    # The pages go into the index in a process of their own while this one records the compile
    # (coverage, log, state): both read the pages, neither changes what the other reads.
    made = {p.path: p.rows for p in drafted if p.rows is not None}  # chunked as they were written
    pages_only = functools.partial(
        update_index, root, schema.semantic, docs, None, 1, outdated, WIKI_KINDS, made
    )
    with ahead(pages_only, enabled=wiki_only, niceness=0) as paging:
        record(root, inputs, work, drafted, report, logged, 1 if paging is not None else jobs)
        del drafted, work  # the plan and the pages' statements: the index needs neither
        if paging is None or not indexed_ahead(paging, report, PAGES_LATE):
            kinds = WIKI_KINDS if wiki_only else None
            update_index(root, schema.semantic, docs, report, jobs, outdated, kinds, made)


PAGES_LATE = "the pages were indexed after the compile was recorded: indexing them alongside failed"


def indexed_ahead(
    indexing: Ahead,
    report: CompileReport,
    fallback: str = "layer 1 was indexed after the pages: indexing it alongside failed",
) -> bool:
    """Whether the files ``indexing`` brings into the index (layer 1 alongside the plan, the
    pages alongside the compile's record) are in; what that did is added to ``report``. When it
    failed, a note says why (``fallback``: what the caller then does itself)."""
    stats = indexing.result()
    if stats is None:
        report.notes.append(f"{fallback} ({indexing.why})")
        return False
    reported(report, stats)
    return True


def parse_layer1(
    root: Path,
    inputs: Inputs,
    report: CompileReport,
    jobs: int,
    meanwhile: Callable[[], object] | None = None,
) -> tuple[dict[str, SourceDoc], dict[str, str]]:
    """Layer 1 parsed (in ``jobs`` processes when it is large, while this one calls
    ``meanwhile``): {path: document}, and the files that cannot be read, with why (noted in
    ``report``)."""
    skipped: dict[str, str] = {}
    docs_list = load_layer1(root, inputs.files, skipped, jobs, meanwhile)
    inputs.files = {}  # parsed: the bytes are not needed again
    report.unreadable = list(skipped.values())
    return {d.path: d for d in docs_list}, skipped


def settled_index(root: Path, schema: WikiSchema, report: CompileReport, jobs: int) -> None:
    """A compile that changes nothing leaves the search index as the last one left it (search and
    ask bring it up to date by content anyway): only a missing index is built, and a missing or
    damaged query file for the vectors written again."""
    if not (root / INDEX_PATH).is_file():
        update_index(root, schema.semantic, None, report, jobs)
    elif schema.semantic:
        report.notes += [note for note in [mend_query_file(root)] if note]


def read_inputs(root: Path, lib: Librarian) -> Inputs:
    files = read_layer1(root)
    if not files:
        require_sources(root, "compile")
    return Inputs(files, input_digest(root, files, lib), load_state(root), wiki_hashes(root))


def restore_report(report: CompileReport, state: dict) -> None:
    """A no-change compile reports what the last one found, without reading anything else."""
    report.unchanged = state.get("pages", 0)
    report.unplaced = state.get("unplaced", [])
    report.reasons = state.get("reasons", {})
    report.coverage = state.get("coverage", {})


def plan_work(
    root: Path,
    inputs: Inputs,
    docs: dict[str, SourceDoc],
    skipped: dict[str, str],
    schema: WikiSchema,
    lib: Librarian,
    report: CompileReport,
    jobs: Jobs = 1,
) -> Work:
    """Plan every page of ``docs`` (in ``jobs`` processes where the plan reads each document on
    its own; a callable says how many at each such pass), and keep the pages whose fingerprint
    changed (or whose page was edited by hand since the last compile wrote it); a page made from
    a file of ``skipped`` is kept as it is.
    The planner embeds the few texts it compares by meaning itself."""
    docs_list = list(docs.values())
    gc.freeze()
    with stored_in(root / INDEX_PATH):
        the_plan = make_plan(docs_list, schema, jobs)
    gc.freeze()
    report.unplaced, report.reasons = the_plan.unplaced, the_plan.reasons
    report.notes += the_plan.notes
    unanchored = model_written(the_plan, lib.name)
    navs = {spec.path: navigation(the_plan, spec, unanchored) for spec in the_plan.pages}
    existing = managed_pages(root)
    kept = {p for p, meta in existing.items() if set(map(str, meta.get("sources") or ())) & set(skipped)}
    last_written = (inputs.state or {}).get("outputs", {})
    vocabulary = the_plan.vocabulary
    jobs: list[tuple[PageSpec, str, PageJob]] = []
    fingerprints: dict[str, str] = {}
    for spec in the_plan.pages:
        if spec.path in kept:
            continue
        fp = fingerprints[spec.path] = fingerprint(spec, docs, schema, lib, navs[spec.path])
        old = existing.get(spec.path)
        hand_edited = spec.path in last_written and last_written[spec.path] != inputs.written.get(spec.path)
        if old and old["wikic"].get("fingerprint") == fp and spec.path in inputs.written and not hand_edited:
            report.unchanged += 1
            continue
        page_docs = {p: docs[p] for p in spec.sources if p in docs}
        see_also = the_plan.see_also.get(spec.path, ())
        job = PageJob(
            spec, page_docs, the_plan.superseded_by, schema.rules, see_also, vocabulary, navs[spec.path]
        )
        jobs.append((spec, fp, job))
    planned = {s.path for s in the_plan.pages}
    to_remove = sorted(p for p in existing if p not in planned and p not in kept)
    return Work(docs, the_plan, navs, existing, kept, jobs, to_remove, fingerprints)


def dry_run_rows(work: Work, schema: WikiSchema, lib: Librarian) -> list[dict]:
    rows = [_estimate(job, schema, work.existing, lib) for _, _, job in work.jobs]
    return rows + [
        {"page": p, "action": "remove", "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        for p in work.to_remove
    ]


def draft_pages(
    root: Path,
    inputs: Inputs,
    work: Work,
    schema: WikiSchema,
    lib: Librarian,
    report: CompileReport,
    progress: Progress | None,
    jobs: int,
    indexed: dict[str, str] | None = None,
) -> list[PageOut]:
    """Draft every job, verify and finish each draft, and render the pages that keep a verified
    sentence, in plan order, each changed page's text staged beside it (see ``workers``), with
    its search-index rows unless the index holds its bytes already (``indexed``). Nothing is
    published yet."""
    total = len(work.jobs)
    done = [0]

    def advance(n: int) -> None:
        done[0] += n
        if progress:
            progress("compile", done[0], total)

    tasks = [Task(spec, fp, job) for spec, fp, job in work.jobs]
    # Overviews, the glossary and the change list are made from the plan alone, by any backend.
    others = [t for t in tasks if t.spec.type not in DERIVED_TYPES]
    if lib.name != OfflineLibrarian.name and others:
        for task, draft in zip(others, lib.write([t.job for t in others], advance), strict=True):
            task.offline, task.draft = False, draft
    verifier = Verifier(work.docs_list, schema.min_overlap)
    shared = Shared(root, schema, verifier, lib, inputs.written, tasks, indexed or {})
    causes = getattr(lib, "failures", {})
    out: list[PageOut] = []
    try:
        for page in workers.pages(shared, jobs, advance):
            out.append(page)
            merge_counts(report, page.report)
            page.report = CompileReport()
            if page.entry is None:
                report.failed.append(page.path)
                report.causes[page.path] = causes.get(page.path, "no verifiable sentence remained")
            elif page.staged is None:
                report.unchanged += 1
    except BaseException:
        for page in out:
            if page.staged:
                Path(page.staged).unlink(missing_ok=True)
        raise
    report.usage = lib.usage
    report.notes += getattr(lib, "notes", [])  # LLM backends: pages the provider failed on
    return out


@dataclass
class Logged:
    """What ``publish`` leaves ``record`` to write: the log entry ('': nothing to log) and the
    facts the documents state now."""

    entry: str
    facts: dict[str, dict[str, str]]


def publish(
    root: Path,
    inputs: Inputs,
    work: Work,
    pages: list[PageOut],
    schema: WikiSchema,
    report: CompileReport,
) -> Logged:
    """Publish what changed: the pages and ``index.md``. The log entry goes into the compile
    state before any page is moved into place, so a run that dies while publishing is logged by
    the rerun; ``record`` writes it to the log."""
    staged = [p for p in pages if p.staged]
    for page in staged:
        (report.changed if page.existed else report.added).append(page.path)
        report.diffstat.append((page.path, *page.diffstat))
    for path in work.to_remove:
        report.removed.append(path)
        report.diffstat.append((path, *diffstat((root / path).read_text("utf-8"), None)))
    known = current_facts(work.docs_list, work.plan)
    report.fact_changes = fact_changes(read_facts(root), known)
    entry = pending_log(
        root, inputs.state, report, changed_sources(inputs.state, work.docs, report, work.plan)
    )
    for page in staged:
        os.replace(page.staged, root / page.path)
    for path in work.to_remove:
        (root / path).unlink()
    _remove_empty_dirs(root / WIKI)
    drafted = {p.path: p for p in pages if p.entry is not None}
    entries = apply_overrides(
        _index_entries(work.plan, {p: d.entry for p, d in drafted.items()}, work.existing, work.kept),
        load_overrides(root),
    )
    sources = source_counts([d.path for d in work.docs_list])
    report.index_changed = write_index(root, render_index(entries, schema.index_budget, sources))
    return Logged(entry, known)


def record(
    root: Path,
    inputs: Inputs,
    work: Work,
    pages: list[PageOut],
    report: CompileReport,
    logged: Logged,
    jobs: int = 1,
) -> None:
    """After ``publish``: how much of layer 1 the wiki shows (measured in ``jobs`` processes), the
    log entry, and the facts and compile state of a compile that left nothing out."""
    drafted = {p.path: p for p in pages if p.entry is not None}
    report.coverage = measure_coverage(root, work.docs_list, work.plan, drafted, jobs)
    if logged.entry:
        append_log(root, logged.entry)
    if not report.failed and not report.unreadable and not report.skipped:
        write_json_artifact(root / FACTS, {"facts": logged.facts}, STATE_VERSION)
        planned = plan_record(work.plan, work.fingerprints, report.backend, report.model)
        save_state(root, inputs.digest, report, len(work.plan.pages), work.docs, len(work.existing), planned)
    elif logged.entry:
        record_pending(root, inputs.state, None)


def measure_coverage(
    root: Path, docs: list[SourceDoc], the_plan: Plan, drafted: dict[str, PageOut], jobs: int = 1
) -> dict:
    """How much of layer 1 the wiki shows (``coverage``), with a one-line summary: the pages just
    drafted (their cited sentences and cells) and the other planned pages as they are on disk;
    the documents are measured in ``jobs`` processes."""
    from .coverage import Coverage, cited_texts, lines_of, measure

    pairs = [pair for page in drafted.values() for pair in page.statements]
    ids = record_ids(the_plan, docs)
    for spec in the_plan.pages:
        if spec.path not in drafted and (root / spec.path).exists():
            pairs += lines_of(spec.path, (root / spec.path).read_text("utf-8"), ids)
    cited = cited_texts(pairs)

    def part(chunk: Sequence[SourceDoc]) -> Coverage:
        return measure(chunk, cited, the_plan.reasons, the_plan.superseded_by)

    found = Coverage.joined(slices(part, docs, jobs, least=LIGHT))
    return {"summary": found.summary(), **found.as_dict()}


def record_ids(the_plan: Plan, docs: list[SourceDoc]) -> dict[str, str]:
    """A device's or an entry's page → the id of the record it stands for (a cell that lists
    records by id shows their pages' titles: ``draft.as_recorded``)."""
    by_path = {d.path: d for d in docs}
    out: dict[str, str] = {}
    for spec in the_plan.pages:
        if spec.type == "device":
            out[spec.path] = spec.config["device"]["id"]
        elif spec.type == "entity":  # its record, of the documents it is made from
            records = [by_path[p] for p in spec.config["members"] if p in by_path]
            out.update((spec.path, record_id(d)) for d in records if d.title == spec.title)
    return out


def _index_entries(
    the_plan: Plan,
    drafted: dict[str, tuple[str, str, tuple[str, ...]]],
    existing: dict[str, dict],
    kept: set[str] = frozenset(),
) -> list[Entry]:
    """One entry per planned page on disk, and per page kept as it was: from its new draft (its
    title, summary and keywords), else from the frontmatter read earlier."""
    entries = []
    specs = [(s.path, s.type, s.title) for s in the_plan.pages]
    planned = {p for p, _, _ in specs}
    specs += [
        (p, str(existing[p].get("type", "topic")), str(existing[p].get("title", p)))
        for p in sorted(kept - planned)
    ]
    for path, kind, default_title in specs:
        if path in drafted:
            title, summary, kws = drafted[path]
        elif path in existing:
            meta = existing[path]
            title, summary, kws = (
                meta.get("title", default_title),
                meta.get("summary", ""),
                meta.get("keywords", []),
            )
        else:
            continue
        entries.append(Entry(path, kind, str(title), str(summary), tuple(str(k) for k in kws)))
    return entries


def _remove_empty_dirs(folder: Path) -> None:
    if not folder.is_dir():
        return
    for d in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()


def select_jobs(
    jobs: list[tuple[PageSpec, str, PageJob]], the_plan: Plan, pages: list[str] | None, limit: int | None
) -> tuple[list[tuple[PageSpec, str, PageJob]], int]:
    """The jobs ``--page`` names (a wiki path, or a page's file name with or without ``.md``), then
    the first ``--limit`` of them; and how many were left out."""
    chosen = jobs
    if pages is not None:
        wanted: set[str] = set()
        for name in pages:
            match = [
                s.path
                for s in the_plan.pages
                if name.strip("/") in (s.path, s.path.removeprefix(WIKI + "/"), PurePosixPath(s.path).stem)
                or name.strip("/") + ".md" in (s.path, s.path.removeprefix(WIKI + "/"))
            ]
            if not match:
                examples = ", ".join(s.path for s in the_plan.pages[:3])
                raise ConfigError(
                    f"--page {name}: no such page in the plan; name a wiki page such as {examples}"
                )
            wanted.update(match)
        chosen = [j for j in jobs if j[0].path in wanted]
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit {limit}: must be at least 1")
        chosen = chosen[:limit]
    return chosen, len(jobs) - len(chosen)


def _estimate(job: PageJob, schema: WikiSchema, existing: dict, lib: Librarian) -> dict:
    """A dry-run row: the page's prompt (the largest part's) against the model's context, and
    the tokens and cost of writing it."""
    conf = schema.librarian
    estimate = getattr(lib, "estimate", None)
    if estimate is not None:
        row = {**estimate(job), "context_tokens": lib.context_tokens}  # type: ignore[attr-defined]
    else:
        chars = len(job.rules) + sum(len(d.body) for d in job.docs.values())
        tokens_in = chars // 4 + 500
        row = {"tokens_in": tokens_in, "tokens_out": min(conf.max_tokens, max(300, tokens_in // 4))}
    cost = (row["tokens_in"] * conf.price_in_per_mtok + row["tokens_out"] * conf.price_out_per_mtok) / 1e6
    return {
        "page": job.spec.path,
        "action": "change" if job.spec.path in existing else "add",
        "sources": len(job.docs),
        **row,
        "cost_usd": round(cost, 4),
    }


__all__ = ["CompileReport", "compile_wiki"]
