"""Compile stage: layer 1 → wiki, incrementally.

The orchestrator reads everything, plans the pages, asks the librarian only for pages whose
fingerprint changed, verifies every citation, and only then writes: pages, index, log.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

import yaml

from .. import __version__
from ..core.errors import ConfigError
from ..core.fsutil import (
    atomic_write,
    canonical_json,
    kb_lock,
    remove_stale_temps,
    sha256_tag,
    write_json_artifact,
)
from ..core.models import SourceDoc
from ..transform.layer1 import load_layer1, read_layer1, require_sources
from .citations import Verifier
from .draft import Draft, Navigation, render_body
from .finish import finish_draft
from .index import (
    Entry,
    append_log,
    apply_overrides,
    load_overrides,
    render_index,
    write_index,
)
from .librarian.base import Librarian, PageJob
from .librarian.offline import DERIVED_TYPES, OfflineLibrarian, quantity
from .links import Target
from .pageplan import PageSpec, Plan, section_keys
from .pageplan import plan as make_plan
from .report import CompileReport, diffstat
from .schema import WikiSchema, load_wiki_schema
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
    read_facts,
    record_pending,
    save_state,
    wiki_hashes,
)

WIKI = "wiki"
Progress = Callable[[str, int, int | None], None]


def fingerprint(
    spec: PageSpec, docs: dict[str, SourceDoc], schema: WikiSchema, lib: Librarian, nav: Navigation
) -> str:
    """Everything a page is made from: its spec, its sources' hashes, the shared schema and rules,
    the backend, the wikic version, and its links to other pages (names, see also, backlinks)."""
    inputs = [(p, docs[p].sha256) for p in spec.sources if p in docs]
    return sha256_tag(
        canonical_json([spec.spec_hash, inputs, schema.hash, lib.name, lib.model, __version__, asdict(nav)])
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
    mentions = []
    for doc, found in sorted((spec.config.get("mentions") or {}).items()):
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
    paths = {key.partition("#")[0] for key in section_keys(spec)}
    for d in plan.disputes:
        for this, other, choice in ((d.a, d.b, d.choice_b), (d.b, d.a, d.choice_a)):
            target = plan.target(other.doc.path, other.anchor)
            if this.doc.path in paths and target is not None and target.path != spec.path:
                title = plan.titles.get(target.path, target.path)
                disputes.append((this.text, href(target), f"{choice} in {title}"))
    return Navigation(
        outdated=tuple(dict.fromkeys(outdated)),
        disputes=tuple(dict.fromkeys(disputes)),
        names=tuple((tuple(k), h) for k, h in names),
        homes=tuple((k, h, t) for k, (h, t) in homes.items()),
        see_also=tuple((p, plan.titles[p]) for p in plan.see_also.get(spec.path, ())),
        backlinks=tuple((p, plan.titles[p]) for p in plan.backlinks.get(spec.path, ())),
        mentions=tuple(mentions),
    )


def render_page(spec: PageSpec, draft: Draft, fp: str, lib: Librarian, nav: Navigation) -> str:
    meta = {
        "title": draft.title,
        "type": spec.type,
        "summary": " ".join(draft.summary.split()),
        "keywords": list(draft.keywords),
        "sources": list(spec.sources),
        "wikic": {"fingerprint": fp, "backend": lib.name, "model": lib.model, "version": __version__},
    }
    head = yaml.dump(meta, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{head}---\n\n{render_body(draft, spec.path, nav)}"


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter where PyYAML has it


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

    @property
    def docs_list(self) -> list[SourceDoc]:
        return list(self.docs.values())


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
) -> CompileReport:
    """Compile layer 1 into the wiki. ``pages`` (wiki paths or page names) and ``limit`` (the
    first N pages that need it) compile a subset, to try a model or a prompt on a few pages; the
    other pages are left as they are, and nothing is removed."""
    started = time.perf_counter()
    report = CompileReport()
    schema = load_wiki_schema(root)
    lib = librarian or make_librarian(schema, backend, environ, report, batch)
    report.backend, report.model = lib.name, lib.model
    with kb_lock(root), _long_lived():
        remove_stale_temps(root / WIKI)
        inputs = read_inputs(root, lib)
        if inputs.unchanged and not dry_run and pages is None:
            restore_report(report, inputs.state)
        else:
            work = plan_work(root, inputs, schema, lib, report)
            if pages is not None or limit is not None:
                work.jobs, report.skipped = select_jobs(work.jobs, work.plan, pages, limit)
                work.to_remove = []
            if dry_run:
                report.plan = dry_run_rows(work, schema, lib)
            else:
                finals, outputs = draft_pages(work, schema, lib, report, progress)
                publish(root, inputs, work, finals, outputs, schema, report)
    report.seconds = time.perf_counter() - started
    return report


@contextmanager
def _long_lived() -> Iterator[None]:
    """What a compile reads and plans lives until it ends: ``plan_work`` moves it out of the
    garbage collector's sight (``gc.freeze``), so that its passes over the objects a page makes
    do not walk the whole KB again and again; it is handed back when the compile ends."""
    try:
        yield
    finally:
        gc.unfreeze()


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


def plan_work(root: Path, inputs: Inputs, schema: WikiSchema, lib: Librarian, report: CompileReport) -> Work:
    """Parse layer 1, plan every page, and keep the jobs whose fingerprint changed (or whose page
    was edited by hand since the last compile wrote it)."""
    skipped: dict[str, str] = {}
    docs_list = load_layer1(root, inputs.files, skipped)
    report.unreadable = list(skipped.values())
    docs = {d.path: d for d in docs_list}
    gc.freeze()
    the_plan = make_plan(docs_list, schema)
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
    for spec in the_plan.pages:
        if spec.path in kept:
            continue
        fp = fingerprint(spec, docs, schema, lib, navs[spec.path])
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
    return Work(docs, the_plan, navs, existing, kept, jobs, to_remove)


def dry_run_rows(work: Work, schema: WikiSchema, lib: Librarian) -> list[dict]:
    rows = [_estimate(job, schema, work.existing, lib) for _, _, job in work.jobs]
    return rows + [
        {"page": p, "action": "remove", "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        for p in work.to_remove
    ]


def draft_pages(
    work: Work, schema: WikiSchema, lib: Librarian, report: CompileReport, progress: Progress | None
) -> tuple[dict[str, Draft], dict[str, str]]:
    """Draft every job, verify and finish each draft, and render the pages that keep a verified
    sentence: ({path: final draft}, {path: page text}). Nothing is written yet."""
    verifier = Verifier(work.docs_list, schema.min_overlap)
    total = len(work.jobs)
    done = [0]

    def advance(n: int) -> None:
        done[0] += n
        if progress:
            progress("compile", done[0], total)

    # Overviews, the glossary and the change list are made from the plan alone, by any backend.
    all_jobs = [job for _, _, job in work.jobs]
    derived = [job for job in all_jobs if job.spec.type in DERIVED_TYPES]
    others = [job for job in all_jobs if job.spec.type not in DERIVED_TYPES]
    by_job = dict(zip(map(id, derived), OfflineLibrarian().write(derived, advance), strict=True))
    by_job.update(zip(map(id, others), lib.write(others, advance) if others else [], strict=True))
    finals: dict[str, Draft] = {}
    outputs: dict[str, str] = {}
    causes = getattr(lib, "failures", {})
    for spec, fp, job in work.jobs:
        draft = by_job[id(job)]
        outline = schema.page_types[spec.type].sections if spec.type in schema.page_types else ()
        final = finish_draft(job, draft, lib, verifier, report, outline) if draft is not None else None
        if final is None:
            report.failed.append(spec.path)
            report.causes[spec.path] = causes.get(spec.path, "no verifiable sentence remained")
            continue
        outputs[spec.path] = render_page(spec, final, fp, lib, work.navs[spec.path])
        finals[spec.path] = final
    report.usage = lib.usage
    report.notes += getattr(lib, "notes", [])  # LLM backends: pages the provider failed on
    return finals, outputs


def publish(
    root: Path,
    inputs: Inputs,
    work: Work,
    finals: dict[str, Draft],
    outputs: dict[str, str],
    schema: WikiSchema,
    report: CompileReport,
) -> None:
    """Write what changed. Everything is gathered first; the log entry goes into the compile
    state before any page, so a run that dies while writing is logged by the rerun."""
    writes: dict[str, str] = {}
    for path, text in outputs.items():
        old_text = (root / path).read_text("utf-8") if (root / path).exists() else None
        if old_text == text:
            report.unchanged += 1
            continue
        writes[path] = text
        (report.changed if old_text is not None else report.added).append(path)
        report.diffstat.append((path, *diffstat(old_text, text)))
    for path in work.to_remove:
        report.removed.append(path)
        report.diffstat.append((path, *diffstat((root / path).read_text("utf-8"), None)))
    known = current_facts(work.docs_list, work.plan)
    report.fact_changes = fact_changes(read_facts(root), known)
    entry = pending_log(
        root, inputs.state, report, changed_sources(inputs.state, work.docs, report, work.plan)
    )
    for path, text in writes.items():
        atomic_write(root / path, text)
    for path in work.to_remove:
        (root / path).unlink()
    _remove_empty_dirs(root / WIKI)
    entries = apply_overrides(
        _index_entries(work.plan, finals, work.existing, work.kept), load_overrides(root)
    )
    report.index_changed = write_index(root, render_index(entries, schema.index_budget))
    report.coverage = measure_coverage(root, work.docs_list, work.plan, finals)
    if entry:
        append_log(root, entry)
    if not report.failed and not report.unreadable and not report.skipped:
        write_json_artifact(root / FACTS, {"facts": known}, STATE_VERSION)
        save_state(root, inputs.digest, report, len(work.plan.pages), work.docs, len(work.existing))
    elif entry:
        record_pending(root, inputs.state, None)


def measure_coverage(root: Path, docs: list[SourceDoc], the_plan: Plan, drafts: dict[str, Draft]) -> dict:
    """How much of layer 1 the wiki shows (``coverage``), with a one-line summary: the pages just
    drafted (their cited sentences and cells) and the other planned pages as they are on disk."""
    from .coverage import cited_texts, lines_of, measure

    pairs = [pair for d in drafts.values() for pair in statements_of(d.blocks)]
    for spec in the_plan.pages:
        if spec.path not in drafts and (root / spec.path).exists():
            pairs += lines_of(spec.path, (root / spec.path).read_text("utf-8"))
    found = measure(docs, cited_texts(pairs), the_plan.reasons, the_plan.superseded_by)
    return {"summary": found.summary(), **found.as_dict()}


def statements_of(blocks) -> list[tuple[str, list[str]]]:
    """(text, cited layer-1 paths) of every cited sentence and table cell of a draft."""
    out = [(s.text, [c.path for c in s.cites]) for b in blocks for s in b.sentences if s.cites]
    out += [(c.text, [x.path for x in c.cites]) for b in blocks for row in b.rows for c in row if c.cites]
    return out


def _index_entries(
    the_plan: Plan, finals: dict[str, Draft], existing: dict[str, dict], kept: set[str] = frozenset()
) -> list[Entry]:
    """One entry per planned page on disk, and per page kept as it was: from its new draft, else
    from the frontmatter read earlier."""
    entries = []
    specs = [(s.path, s.type, s.title) for s in the_plan.pages]
    planned = {p for p, _, _ in specs}
    specs += [
        (p, str(existing[p].get("type", "topic")), str(existing[p].get("title", p)))
        for p in sorted(kept - planned)
    ]
    for path, kind, default_title in specs:
        if path in finals:
            d = finals[path]
            title, summary, kws = d.title, d.summary, d.keywords
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
