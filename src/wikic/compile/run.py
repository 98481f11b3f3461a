"""Compile stage: layer 1 → wiki, incrementally.

The orchestrator reads everything, plans the pages, asks the librarian only for pages whose
fingerprint changed, verifies every citation, and only then writes: pages, index, log.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath

import frontmatter
import yaml

from .. import __version__
from ..core.errors import ConfigError, WikicError
from ..core.facts import facts
from ..core.fsutil import (
    atomic_write,
    canonical_json,
    kb_lock,
    read_json_artifact,
    remove_stale_temps,
    sha256_tag,
    write_json_artifact,
)
from ..core.models import SourceDoc
from ..transform.layer1 import load_layer1, read_layer1, require_sources
from .citations import Verifier
from .draft import PROSE_KINDS, Block, Cell, Draft, Navigation, Sentence, render_body
from .index import (
    Entry,
    append_log,
    apply_overrides,
    load_overrides,
    log_entry,
    render_index,
    write_index,
)
from .librarian.base import Failure, Librarian, PageJob, Usage
from .librarian.extract import Vocabulary
from .librarian.offline import DERIVED_TYPES, OfflineLibrarian, quantity
from .librarian.offline import write_page as offline_page
from .links import Target
from .pageplan import PageSpec, Plan, section_keys
from .pageplan import plan as make_plan
from .safety import sanitize_draft, suspicious, vet_draft
from .schema import WikiSchema, load_wiki_schema

WIKI = "wiki"
STATE = ".wikic/compile.json"  # derived: lets a no-change compile stop after hashing its inputs
STATE_VERSION = 1
SCHEMA_FILES = ("wiki.yaml", "librarian.md", "index-overrides.yaml")
Progress = Callable[[str, int, int | None], None]


@dataclass
class CompileReport:
    backend: str = ""
    model: str = ""
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)  # pages left unwritten: nothing verifiable remained
    unreadable: list[str] = field(default_factory=list)  # layer-1 files skipped: broken frontmatter
    causes: dict[str, str] = field(default_factory=dict)  # failed page → why, and what to change
    skipped: int = 0  # pages to (re)compile left for later by --page or --limit
    sentences: int = 0
    cited: int = 0
    verified: int = 0
    repaired: int = 0
    dropped: int = 0
    citations: int = 0
    unplaced: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # unplaced path → why no page shows it
    coverage: dict = field(default_factory=dict)  # coverage.Coverage.as_dict() of the wiki on disk
    fact_changes: list[str] = field(default_factory=list)  # facts that differ from the last compile
    drop_reasons: list[str] = field(default_factory=list)
    published: int = 0  # LLM: model sentences on the pages written
    fallback: int = 0  # LLM: source sentences kept where the model's prose was missing or less complete
    set_aside: int = 0  # LLM: verified model sentences replaced by the fuller source text
    index_changed: list[str] = field(default_factory=list)
    diffstat: list[tuple[str, int, int]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    plan: list[dict] = field(default_factory=list)  # dry-run: one row per page to (re)write or remove
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def wrote_anything(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.index_changed)


def fingerprint(
    spec: PageSpec, docs: dict[str, SourceDoc], schema: WikiSchema, lib: Librarian, nav: Navigation
) -> str:
    """Everything a page is made from: its spec, its sources' hashes, the shared schema and rules,
    the backend, the wikic version, and its links to other pages (names, see also, backlinks)."""
    inputs = [(p, docs[p].sha256) for p in spec.sources if p in docs]
    return sha256_tag(
        canonical_json([spec.spec_hash, inputs, schema.hash, lib.name, lib.model, __version__, asdict(nav)])
    )


def managed_pages(root: Path) -> dict[str, dict]:
    """Existing wiki pages written by wikic: {path: frontmatter}."""
    out = {}
    folder = root / WIKI
    if not folder.is_dir():
        return out
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if rel in ("wiki/index.md", "wiki/log.md") or rel.startswith("wiki/index/"):
            continue
        try:
            meta = frontmatter.loads(path.read_text("utf-8")).metadata
        except (ValueError, yaml.YAMLError, UnicodeDecodeError):
            continue
        if isinstance(meta.get("wikic"), dict):
            out[rel] = meta
    return out


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


@dataclass
class _Check:
    blocks: list[Block]
    failures: list[tuple[int, int, Failure]]  # (block index, sentence/cell index, failure)


def verify_blocks(blocks: tuple[Block, ...], verifier: Verifier) -> _Check:
    failures: list[tuple[int, int, Failure]] = []
    for bi, b in enumerate(blocks):
        if b.kind in PROSE_KINDS:
            for si, s in enumerate(b.sentences):
                result = verifier.check(s.text, s.cites)
                if not result.ok:
                    failures.append((bi, si, Failure(s.text, tuple(map(str, s.cites)), result.reason)))
        elif b.kind == "table":
            width = len(b.header)
            for ri, row in enumerate(b.rows):
                for ci, cell in enumerate(row):
                    if cell.cites:
                        result = verifier.check(cell.text, cell.cites)
                        if not result.ok:
                            failures.append(
                                (
                                    bi,
                                    ri * width + ci,
                                    Failure(cell.text, tuple(map(str, cell.cites)), result.reason),
                                )
                            )
    return _Check(list(blocks), failures)


def drop_failures(check: _Check) -> list[Block]:
    """Remove failed sentences (and blank failed table cells), then prune empty sections."""
    bad: dict[int, set[int]] = {}
    for bi, si, _ in check.failures:
        bad.setdefault(bi, set()).add(si)
    kept: list[Block] = []
    for bi, b in enumerate(check.blocks):
        drop = bad.get(bi, set())
        if b.kind in PROSE_KINDS:
            sentences = tuple(s for si, s in enumerate(b.sentences) if si not in drop)
            if sentences:
                kept.append(Block(b.kind, text=b.text, level=b.level, sentences=sentences))
        elif b.kind == "table" and drop:
            width = len(b.header)
            rows = tuple(
                tuple(Cell("—") if ri * width + ci in drop else c for ci, c in enumerate(row))
                for ri, row in enumerate(b.rows)
            )
            kept.append(Block("table", header=b.header, rows=rows))
        else:
            kept.append(b)
    return prune(kept)


def prune(blocks: list[Block]) -> list[Block]:
    """Drop headings with nothing under them (before the next heading of the same or higher level)."""
    out: list[Block] = []
    for i, b in enumerate(blocks):
        if b.kind == "heading":
            has_content = False
            for x in blocks[i + 1 :]:
                if x.kind != "heading":
                    has_content = True
                    break
                if x.level <= b.level:
                    break
            if not has_content:
                continue
        out.append(b)
    return out


def mark_outdated(blocks: list[Block], nav: Navigation) -> list[Block]:
    """A statement a newer source changed is never stated as current: it becomes a dated
    Superseded note that says what holds now and links to it."""
    stale = {" ".join(s.split()): (when, now, href, title) for s, when, now, href, title in nav.outdated}
    if not stale:
        return blocks
    out: list[Block] = []
    for b in blocks:
        if b.kind not in ("para", "bullets", "steps") or not any(
            " ".join(s.text.split()) in stale for s in b.sentences
        ):
            out.append(b)
            continue
        run: list[Sentence] = []
        for s in b.sentences:
            found = stale.get(" ".join(s.text.split()))
            if found is None:
                run.append(s)
                continue
            if run:
                out.append(replace(b, sentences=tuple(run)))
                run = []
            when, now, href, title = found
            out.append(
                Block(
                    "note",
                    text=f"(stated {when}; now {now}, see {{link}}):",
                    sentences=(s,),
                    links=((href, title),),
                )
            )
        if run:
            out.append(replace(b, sentences=tuple(run)))
    return out


def mark_disputes(blocks: list[Block], nav: Navigation) -> list[Block]:
    """After a statement another source disagrees with, a line linking to what that source says,
    for review: both sides stay cited where they are, neither is blended into the other."""
    differ: dict[str, list[tuple[str, str]]] = {}
    for sentence, href, label in nav.disputes:
        differ.setdefault(" ".join(sentence.split()), []).append((href, label))
    if not differ:
        return blocks
    out: list[Block] = []
    for b in blocks:
        out.append(b)
        found = [x for s in b.sentences for x in differ.get(" ".join(s.text.split()), ())]
        if found and b.kind in ("para", "bullets", "steps"):
            out.append(Block("links", text="Sources differ", links=tuple(dict.fromkeys(found))))
    return out


def merge_repeats(blocks: list[Block]) -> list[Block]:
    """No sentence twice on a page: when two sources on it say the same thing, the later copy is
    dropped and its citations join the first (so both sources still reach the page)."""
    first: dict[str, tuple[int, int]] = {}
    extra: dict[tuple[int, int], list] = {}
    drop: set[tuple[int, int]] = set()
    for bi, b in enumerate(blocks):
        if b.kind not in PROSE_KINDS or b.kind == "note":
            continue
        for si, s in enumerate(b.sentences):
            key = " ".join(s.text.split())
            if key in first:
                drop.add((bi, si))
                extra.setdefault(first[key], []).extend(s.cites)
            else:
                first[key] = (bi, si)
    if not drop:
        return blocks
    out = []
    for bi, b in enumerate(blocks):
        if b.kind not in PROSE_KINDS or b.kind == "note":
            out.append(b)
            continue
        sentences = tuple(
            Sentence(s.text, tuple(dict.fromkeys(s.cites + tuple(extra.get((bi, si), ())))))
            for si, s in enumerate(b.sentences)
            if (bi, si) not in drop
        )
        if sentences:
            out.append(replace(b, sentences=sentences))
    return prune(out)


def count_facts(blocks: list[Block] | tuple[Block, ...]) -> tuple[int, int]:
    """(sentences and cited cells, citations) in a draft."""
    facts = cites = 0
    for b in blocks:
        for s in b.sentences:
            facts += 1
            cites += len(s.cites)
        for row in b.rows:
            for c in row:
                if c.cites:
                    facts += 1
                    cites += len(c.cites)
    return facts, cites


def finish_draft(
    job: PageJob,
    draft: Draft,
    lib: Librarian,
    verifier: Verifier,
    report: CompileReport,
    outline: tuple[str, ...] = (),
) -> Draft | None:
    """Sanitise, verify, repair (LLM backends) or drop; returns a fully valid draft or None.

    An LLM backend's verified prose is merged into the offline draft (``fill``), so a page is never
    poorer than offline; what it writes besides its sentences (headings, summary, keywords) is
    held to the sources too, and rebuilt from them where it fails."""
    draft = keep_out_of_lead(sanitize_draft(draft, job.spec.path))
    rejected = draft.stats.get("rejected", [])  # refused by the librarian before verification
    total, _ = count_facts(draft.blocks)
    report.sentences += total + len(rejected)
    report.cited += sum(1 for b in draft.blocks for s in b.sentences if s.cites) + sum(
        1 for b in draft.blocks for r in b.rows for c in r if c.cites
    )
    check = verify_blocks(draft.blocks, verifier)
    first_failures = len(check.failures)
    report.verified += total - first_failures
    repaired = 0
    if check.failures and lib.can_repair:
        fixed = lib.repair(job, draft, [f for _, _, f in check.failures])
        if fixed is not None:
            fixed = keep_out_of_lead(sanitize_draft(fixed, job.spec.path))
            again = verify_blocks(fixed.blocks, verifier)
            passing = count_facts(fixed.blocks)[0] - len(again.failures)
            repaired = max(0, min(first_failures, passing - (total - first_failures)))
            draft, check = fixed, again
    # Whatever was not repaired is dropped, whether the repair left it failing or removed it,
    # so verified + repaired + dropped always equals the sentences drafted.
    report.repaired += repaired
    report.dropped += first_failures - repaired + len(rejected)
    reasons = [(t, why) for t, why in rejected] + [(f.text, f.reason) for _, _, f in check.failures]
    report.drop_reasons += [f"{job.spec.path}: {t[:80]!r}: {why}" for t, why in reasons][:50]
    blocks = drop_failures(check) if check.failures else prune(check.blocks)
    fill = getattr(lib, "fill", None)
    if fill is not None and job.spec.type not in DERIVED_TYPES:  # the offline text where the model fell short
        draft = keep_out_of_lead(fill(job, draft.with_blocks(blocks)))
        for key in ("published", "fallback", "set_aside"):
            setattr(report, key, getattr(report, key) + draft.stats.get(key, 0))
        check = verify_blocks(draft.blocks, verifier)
        report.sentences += len(check.failures)
        report.dropped += len(check.failures)
        report.drop_reasons += [f"{job.spec.path}: {f.text[:80]!r}: {f.reason}" for _, _, f in check.failures]
        blocks = drop_failures(check) if check.failures else prune(check.blocks)
    blocks = mark_disputes(mark_outdated(merge_repeats(blocks), job.nav), job.nav)
    facts, cites = count_facts(blocks)
    if facts == 0:
        return None
    report.citations += cites
    final = draft.with_blocks(blocks)
    if lib.name != OfflineLibrarian.name and job.spec.type not in DERIVED_TYPES:  # those are offline's
        final, notes = vet_draft(final, verifier, job.spec.sources, outline, lambda: offline_page(job))
        report.notes += [f"{job.spec.path}: {n}" for n in notes]
    return final


def keep_out_of_lead(draft: Draft) -> Draft:
    """A page's lead (what comes before its first heading) holds no sentence that instructs the
    reader; such a sentence stays cited where it belongs (moved under the first
    heading when it stood in the lead), never in the opening lines."""
    blocks: list[Block] = []
    moved: list[Sentence] = []
    in_lead = True
    for b in draft.blocks:
        if in_lead and b.kind == "heading":
            in_lead = False
            blocks.append(b)
            if moved:
                blocks.append(Block("para", sentences=tuple(moved)))
            continue
        if in_lead and b.sentences:
            kept = tuple(s for s in b.sentences if not suspicious(s.text))
            moved += [s for s in b.sentences if suspicious(s.text)]
            if len(kept) < len(b.sentences):
                if not kept:
                    continue
                b = Block(b.kind, text=b.text, level=b.level, sentences=kept)
        blocks.append(b)
    return draft.with_blocks(blocks) if moved else draft


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


def diffstat(old: str | None, new: str | None) -> tuple[int, int]:
    a = old.splitlines() if old else []
    b = new.splitlines() if new else []
    plus = minus = 0
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    return plus, minus


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
    with kb_lock(root):
        remove_stale_temps(root / WIKI)
        files = read_layer1(root)
        if not files:
            require_sources(root, "compile")
        digest = input_digest(root, files, lib)
        state = load_state(root)
        written = _wiki_hashes(root)
        unchanged = state and state.get("digest") == digest and state.get("outputs") == written
        if unchanged and not dry_run and pages is None:
            report.unchanged = state.get("pages", 0)  # nothing read changed and no page was touched
            report.unplaced = state.get("unplaced", [])
            report.reasons = state.get("reasons", {})
            report.coverage = state.get("coverage", {})
            report.seconds = time.perf_counter() - started
            return report
        last_written = (state or {}).get("outputs", {})
        skipped: dict[str, str] = {}
        docs_list = load_layer1(root, files, skipped)
        report.unreadable = list(skipped.values())
        docs = {d.path: d for d in docs_list}
        vocabulary = Vocabulary(docs_list)
        the_plan = make_plan(docs_list, schema)
        report.unplaced = the_plan.unplaced
        report.reasons = the_plan.reasons
        report.notes += the_plan.notes
        unanchored = model_written(the_plan, lib.name)
        navs = {spec.path: navigation(the_plan, spec, unanchored) for spec in the_plan.pages}
        existing = managed_pages(root)
        # Pages made from a file that cannot be read stay as they are until it is fixed.
        kept = {p for p, meta in existing.items() if set(map(str, meta.get("sources") or ())) & set(skipped)}
        jobs: list[tuple[PageSpec, str, PageJob]] = []
        for spec in the_plan.pages:
            if spec.path in kept:
                continue
            fp = fingerprint(spec, docs, schema, lib, navs[spec.path])
            old = existing.get(spec.path)
            hand_edited = spec.path in last_written and last_written[spec.path] != written.get(spec.path)
            if old and old["wikic"].get("fingerprint") == fp and spec.path in written and not hand_edited:
                report.unchanged += 1
                continue
            page_docs = {p: docs[p] for p in spec.sources if p in docs}
            jobs.append(
                (
                    spec,
                    fp,
                    PageJob(
                        spec,
                        page_docs,
                        the_plan.superseded_by,
                        schema.rules,
                        the_plan.see_also.get(spec.path, ()),
                        vocabulary,
                        navs[spec.path],
                    ),
                )
            )
        planned = {s.path for s in the_plan.pages}
        to_remove = sorted(p for p in existing if p not in planned and p not in kept)
        partial = pages is not None or limit is not None
        if partial:
            jobs, report.skipped = select_jobs(jobs, the_plan, pages, limit)
            to_remove = []
        if dry_run:
            report.plan = [_estimate(job, schema, existing, lib) for _, _, job in jobs]
            report.plan += [
                {"page": p, "action": "remove", "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
                for p in to_remove
            ]
            report.seconds = time.perf_counter() - started
            return report

        verifier = Verifier(docs_list, schema.min_overlap)
        tick = (lambda n: progress("compile", n, len(jobs))) if progress else None
        done = [0]

        def advance(n: int) -> None:
            done[0] += n
            if tick:
                tick(done[0])

        # Overviews, the glossary and the change list are made from the plan alone, by any backend.
        derived = [job for _, _, job in jobs if job.spec.type in DERIVED_TYPES]
        written = [job for _, _, job in jobs if job.spec.type not in DERIVED_TYPES]
        by_job = dict(zip(map(id, derived), OfflineLibrarian().write(derived, advance), strict=True))
        by_job.update(zip(map(id, written), lib.write(written, advance) if written else [], strict=True))
        drafts = [by_job[id(job)] for _, _, job in jobs]
        outputs: dict[str, str] = {}
        finals: dict[str, Draft] = {}
        causes = getattr(lib, "failures", {})
        for (spec, fp, job), draft in zip(jobs, drafts, strict=True):
            outline = schema.page_types[spec.type].sections if spec.type in schema.page_types else ()
            final = finish_draft(job, draft, lib, verifier, report, outline) if draft is not None else None
            if final is None:
                report.failed.append(spec.path)
                report.causes[spec.path] = causes.get(spec.path, "no verifiable sentence remained")
                continue
            outputs[spec.path] = render_page(spec, final, fp, lib, navs[spec.path])
            finals[spec.path] = final
        report.usage = lib.usage
        report.notes += getattr(lib, "notes", [])  # LLM backends: pages the provider failed on

        # Everything is gathered. The log entry goes into the compile state first, so a run that
        # dies while writing is logged by the rerun; then pages, the index and the log are written.
        writes: dict[str, str] = {}
        for path, text in outputs.items():
            old_text = (root / path).read_text("utf-8") if (root / path).exists() else None
            if old_text == text:
                report.unchanged += 1
                continue
            writes[path] = text
            (report.changed if old_text is not None else report.added).append(path)
            report.diffstat.append((path, *diffstat(old_text, text)))
        for path in to_remove:
            report.removed.append(path)
            report.diffstat.append((path, *diffstat((root / path).read_text("utf-8"), None)))
        known = current_facts(docs_list, the_plan)
        report.fact_changes = fact_changes(read_facts(root), known)
        entry = pending_log(root, state, report, _changed_sources(state, docs, report, the_plan))
        for path, text in writes.items():
            atomic_write(root / path, text)
        for path in to_remove:
            (root / path).unlink()
        _remove_empty_dirs(root / WIKI)
        entries = _index_entries(the_plan, finals, existing, kept)
        entries = apply_overrides(entries, load_overrides(root))
        report.index_changed = write_index(root, render_index(entries, schema.index_budget))
        report.coverage = measure_coverage(root, docs_list, the_plan, finals)
        if entry:
            append_log(root, entry)
        if not report.failed and not report.unreadable and not report.skipped:
            write_json_artifact(root / FACTS, {"facts": known}, STATE_VERSION)
            save_state(root, digest, report, len(the_plan.pages), docs, len(existing))
        elif entry:
            record_pending(root, state, None)
    report.seconds = time.perf_counter() - started
    return report


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


def input_digest(root: Path, files: dict[str, bytes], lib: Librarian) -> str:
    """Everything a compile reads: layer-1 bytes, the schema files, backend, model and version."""
    schema_files = [(name, _file_hash(root / "schema" / name)) for name in SCHEMA_FILES]
    layer1 = [(rel, sha256_tag(data)) for rel, data in files.items()]
    return sha256_tag(canonical_json([layer1, schema_files, lib.name, lib.model, __version__]))


def _file_hash(path: Path) -> str | None:
    try:
        return sha256_tag(path.read_bytes())
    except FileNotFoundError:
        return None


def _wiki_hashes(root: Path) -> dict[str, str]:
    folder = root / WIKI
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): sha256_tag(p.read_bytes())
        for p in sorted(folder.rglob("*.md"))
        if p.name != "log.md" or p.parent != folder
    }


def load_state(root: Path) -> dict | None:
    """What the last compile read and wrote, or None (absent, unreadable or another version)."""
    try:
        return read_json_artifact(root / STATE, STATE_VERSION)
    except WikicError:
        return None


def save_state(
    root: Path,
    digest: str,
    report: CompileReport,
    pages: int,
    docs: dict[str, SourceDoc],
    pages_before: int = 0,
) -> None:
    """What this compile read and wrote, and how many pages the wiki had before and after it."""
    after = pages_before + len(report.added) - len(report.removed)
    state = {
        "digest": digest,
        "outputs": _wiki_hashes(root),
        "pages": pages,
        "unplaced": report.unplaced,
        "reasons": report.reasons,
        "coverage": report.coverage,
        "layer1": {p: d.sha256 for p, d in docs.items()},
        "wiki_pages": {"before": pages_before, "after": after},
    }
    write_json_artifact(root / STATE, state, STATE_VERSION)


def pending_log(root: Path, state: dict | None, report: CompileReport, sources: list[str]) -> str:
    """The log entry for this compile, merged with the one a run that died before logging left
    in the state, recorded as pending before anything is written; '' when there is nothing to log.
    """
    pending = (state or {}).get("pending_log") or {}
    log = root / WIKI / "log.md"
    if pending.get("entry") and log.exists() and pending["entry"].rstrip() in log.read_text("utf-8"):
        pending = {}  # that run got as far as its log entry
    added = list(dict.fromkeys([*pending.get("added", []), *report.added]))
    changed = [p for p in dict.fromkeys([*pending.get("changed", []), *report.changed]) if p not in added]
    removed = [p for p in dict.fromkeys([*pending.get("removed", []), *report.removed]) if p not in added]
    if not (added or changed or removed):
        return ""
    counts = [report.sentences, report.verified, report.repaired, report.dropped]
    counts = [a + b for a, b in zip(counts, pending.get("counts", [0, 0, 0, 0]))]
    names = sorted(set(sources) | set(pending.get("sources", [])))
    facts_changed = list(dict.fromkeys([*pending.get("facts", []), *report.fact_changes]))
    details = [f"- fact {c}" for c in facts_changed[:LOGGED_FACTS]]
    if len(facts_changed) > LOGGED_FACTS:
        details.append(f"- … and {len(facts_changed) - LOGGED_FACTS} more changed facts")
    details += [f"- added {p}" for p in added] + [f"- changed {p}" for p in changed]
    details += [f"- removed {p}" for p in removed]
    details.append(
        f"- sentences {counts[0]}, verified {counts[1]}, repaired {counts[2]}, "
        f"dropped {counts[3]}; backend {report.backend}"
    )
    entry = log_entry(len(added), len(changed), len(removed), names, "\n".join(details))
    record_pending(
        root,
        state,
        {
            "entry": entry,
            "added": added,
            "changed": changed,
            "removed": removed,
            "counts": counts,
            "sources": names,
            "facts": facts_changed,
        },
    )
    return entry


def record_pending(root: Path, state: dict | None, pending: dict | None) -> None:
    """Store (or, with None, clear) the pending log entry; the state no longer vouches for the
    wiki, so the next compile does not take the no-change shortcut."""
    state = {k: v for k, v in (state or {}).items() if k not in ("schema_version", "pending_log")}
    state["digest"] = None
    if pending:
        state["pending_log"] = pending
    write_json_artifact(root / STATE, state, STATE_VERSION)


def _changed_sources(
    state: dict | None, docs: dict[str, SourceDoc], report: CompileReport, plan: Plan
) -> list[str]:
    """Source names for the log: those whose layer-1 files changed since the last compile, or,
    without a record of it, those feeding the pages this compile wrote."""
    if state and isinstance(state.get("layer1"), dict):
        before: dict[str, str] = state["layer1"]
        paths = {p for p in docs if before.get(p) != docs[p].sha256} | (set(before) - set(docs))
        return sorted({p.split("/")[1] for p in paths if p.count("/") >= 2})
    written = set(report.added + report.changed)
    return sorted({docs[p].source for s in plan.pages if s.path in written for p in s.sources if p in docs})


FACTS = ".wikic/facts.json"  # derived: the facts the last compile showed, to log what changed
LOGGED_FACTS = 50


def current_facts(docs: list[SourceDoc], the_plan: Plan) -> dict[str, dict[str, str]]:
    """{layer-1 path: {field label: value}} of the facts every current source shows, plus, under
    the path of a change statement, the changes it states ('Low-water alert …': '20% → 15%')."""
    out = {d.path: {f.label: f.value for f in facts(d)} for d in docs if d.path not in the_plan.superseded_by}
    for c in the_plan.timeline.changes:
        s = c.statement
        out.setdefault(s.doc.path, {})[f"change: {s.doc.title}"] = (
            f"{quantity(c.old, c.unit)} → {quantity(c.new, c.unit)}"
        )
    return out


def read_facts(root: Path) -> dict[str, dict[str, str]] | None:
    try:
        data = read_json_artifact(root / FACTS, STATE_VERSION)
    except WikicError:
        return None
    return data.get("facts") if isinstance(data, dict) and isinstance(data.get("facts"), dict) else None


def fact_changes(before: dict | None, now: dict[str, dict[str, str]]) -> list[str]:
    """What changed, fact by fact, since the last compile ('crops/carrot: Row spacing 20 → 22');
    nothing on a first compile."""
    if before is None:
        return []
    out = []
    for path in sorted(set(before) | set(now)):
        old, new = before.get(path, {}), now.get(path, {})
        name = path.removeprefix("layer1_sources/").removesuffix(".md")
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                if key.startswith("change: ") and key in new:
                    out.append(f"{name}: {key[8:]}: {new[key]} (stated as a change)")
                elif not key.startswith("change: "):
                    out.append(f"{name}: {key} {old.get(key, '(none)')} → {new.get(key, '(none)')}")
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
