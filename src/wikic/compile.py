"""Compile stage: layer 1 → wiki, incrementally.

The orchestrator reads everything, plans the pages, asks the librarian only for pages whose
fingerprint changed, verifies every citation, and only then writes: pages, index, log.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import frontmatter
import yaml

from . import __version__
from .citations import Verifier
from .draft import Block, Cell, Draft, render_body
from .errors import ConfigError, WikicError
from .fsutil import (
    atomic_write,
    canonical_json,
    kb_lock,
    read_json_artifact,
    remove_stale_temps,
    sha256_tag,
    write_json_artifact,
)
from .index import Entry, append_log, apply_overrides, load_overrides, render_index, write_index
from .layer1 import load_layer1, read_layer1
from .librarian.base import Failure, Librarian, PageJob, Usage
from .librarian.extract import Vocabulary
from .models import SourceDoc
from .plan import PageSpec, Plan
from .plan import plan as make_plan
from .wikischema import WikiSchema, load_wiki_schema

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
    causes: dict[str, str] = field(default_factory=dict)  # failed page → why, and what to change
    skipped: int = 0  # pages to (re)compile left for later by --page or --limit
    sentences: int = 0
    cited: int = 0
    verified: int = 0
    repaired: int = 0
    dropped: int = 0
    citations: int = 0
    unplaced: list[str] = field(default_factory=list)
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
    spec: PageSpec, docs: dict[str, SourceDoc], schema: WikiSchema, lib: Librarian, related: tuple[str, ...]
) -> str:
    inputs = [(p, docs[p].sha256) for p in spec.sources if p in docs]
    return sha256_tag(
        canonical_json([spec.spec_hash, inputs, schema.hash, lib.name, lib.model, __version__, list(related)])
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


def related_pages(plan: Plan) -> dict[str, tuple[str, ...]]:
    """'See also' links: devices ↔ device comparisons; guides → topics sharing their sources."""
    out: dict[str, list[str]] = {p.path: [] for p in plan.pages}
    devices = [p for p in plan.pages if p.type == "device"]
    for comp in (
        p for p in plan.pages if p.type == "comparison" and p.config["comparison"]["of"] == "devices"
    ):
        for dev in devices:
            out[comp.path].append(dev.path)
            out[dev.path].append(comp.path)
    topics = [p for p in plan.pages if p.type == "topic"]
    for guide in (p for p in plan.pages if p.type == "guide"):
        srcs = set(guide.sources)
        out[guide.path] += [t.path for t in topics if srcs & set(t.sources)]
    return {k: tuple(sorted(set(v))) for k, v in out.items()}


def render_page(spec: PageSpec, draft: Draft, fp: str, lib: Librarian) -> str:
    meta = {
        "title": draft.title,
        "type": spec.type,
        "summary": " ".join(draft.summary.split()),
        "keywords": list(draft.keywords),
        "sources": list(spec.sources),
        "wikic": {"fingerprint": fp, "backend": lib.name, "model": lib.model, "version": __version__},
    }
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{head}---\n\n{render_body(draft, spec.path)}"


@dataclass
class _Check:
    blocks: list[Block]
    failures: list[tuple[int, int, Failure]]  # (block index, sentence/cell index, failure)


def verify_blocks(blocks: tuple[Block, ...], verifier: Verifier) -> _Check:
    failures: list[tuple[int, int, Failure]] = []
    for bi, b in enumerate(blocks):
        if b.kind in ("para", "bullets", "note"):
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
        if b.kind in ("para", "bullets", "note"):
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
    job: PageJob, draft: Draft, lib: Librarian, verifier: Verifier, report: CompileReport
) -> Draft | None:
    """Verify, repair (LLM backends) or drop; returns a fully valid draft or None."""
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
    if fill is not None:  # LLM backends: the offline text wherever the model's prose fell short
        draft = fill(job, draft.with_blocks(blocks))
        for key in ("published", "fallback", "set_aside"):
            setattr(report, key, getattr(report, key) + draft.stats.get(key, 0))
        check = verify_blocks(draft.blocks, verifier)
        report.sentences += len(check.failures)
        report.dropped += len(check.failures)
        report.drop_reasons += [f"{job.spec.path}: {f.text[:80]!r}: {f.reason}" for _, _, f in check.failures]
        blocks = drop_failures(check) if check.failures else prune(check.blocks)
    facts, cites = count_facts(blocks)
    if facts == 0:
        return None
    report.citations += cites
    return draft.with_blocks(blocks)


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
        digest = input_digest(root, files, lib)
        state = load_state(root)
        written = _wiki_hashes(root)
        unchanged = state and state.get("digest") == digest and state.get("outputs") == written
        if unchanged and not dry_run and pages is None:
            report.unchanged = state.get("pages", 0)  # nothing read changed and no page was touched
            report.unplaced = state.get("unplaced", [])
            report.seconds = time.perf_counter() - started
            return report
        last_written = (state or {}).get("outputs", {})
        docs_list = load_layer1(root, files)
        docs = {d.path: d for d in docs_list}
        vocabulary = Vocabulary(docs_list)
        the_plan = make_plan(docs_list, schema)
        report.unplaced = the_plan.unplaced
        related = related_pages(the_plan)
        existing = managed_pages(root)
        jobs: list[tuple[PageSpec, str, PageJob]] = []
        for spec in the_plan.pages:
            fp = fingerprint(spec, docs, schema, lib, related[spec.path])
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
                        spec, page_docs, the_plan.superseded_by, schema.rules, related[spec.path], vocabulary
                    ),
                )
            )
        planned = {s.path for s in the_plan.pages}
        to_remove = sorted(p for p in existing if p not in planned)
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

        drafts = lib.write([job for _, _, job in jobs], advance) if jobs else []
        outputs: dict[str, str] = {}
        finals: dict[str, Draft] = {}
        causes = getattr(lib, "failures", {})
        for (spec, fp, job), draft in zip(jobs, drafts, strict=True):
            final = finish_draft(job, draft, lib, verifier, report) if draft is not None else None
            if final is None:
                report.failed.append(spec.path)
                report.causes[spec.path] = causes.get(spec.path, "no verifiable sentence remained")
                continue
            outputs[spec.path] = render_page(spec, final, fp, lib)
            finals[spec.path] = final
        report.usage = lib.usage
        report.notes += getattr(lib, "notes", [])  # LLM backends: pages the provider failed on

        # Everything is gathered; now write pages, then the index, then the log.
        for path, text in outputs.items():
            target = root / path
            old_text = target.read_text("utf-8") if target.exists() else None
            if old_text == text:
                report.unchanged += 1
                continue
            atomic_write(target, text)
            (report.changed if old_text is not None else report.added).append(path)
            report.diffstat.append((path, *diffstat(old_text, text)))
        for path in to_remove:
            target = root / path
            old_text = target.read_text("utf-8")
            target.unlink()
            report.removed.append(path)
            report.diffstat.append((path, *diffstat(old_text, None)))
        _remove_empty_dirs(root / WIKI)
        entries = _index_entries(the_plan, finals, existing)
        entries = apply_overrides(entries, load_overrides(root))
        report.index_changed = write_index(root, render_index(entries, schema.index_budget))
        if report.added or report.changed or report.removed:
            touched = _changed_sources(state, docs, report, the_plan)
            append_log(
                root,
                len(report.added),
                len(report.changed),
                len(report.removed),
                touched,
                _log_details(report),
            )
        if not report.failed and not report.skipped:
            save_state(root, digest, report, len(the_plan.pages), docs)
    report.seconds = time.perf_counter() - started
    return report


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
    root: Path, digest: str, report: CompileReport, pages: int, docs: dict[str, SourceDoc]
) -> None:
    state = {
        "digest": digest,
        "outputs": _wiki_hashes(root),
        "pages": pages,
        "unplaced": report.unplaced,
        "layer1": {p: d.sha256 for p, d in docs.items()},
    }
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


def _log_details(report: CompileReport) -> str:
    lines = [f"- added {p}" for p in report.added] + [f"- changed {p}" for p in report.changed]
    lines += [f"- removed {p}" for p in report.removed]
    lines.append(
        f"- sentences {report.sentences}, verified {report.verified}, repaired {report.repaired}, "
        f"dropped {report.dropped}; backend {report.backend}"
    )
    return "\n".join(lines)


def _index_entries(the_plan: Plan, finals: dict[str, Draft], existing: dict[str, dict]) -> list[Entry]:
    """One entry per planned page on disk: from its new draft, else from the frontmatter read earlier."""
    entries = []
    for spec in the_plan.pages:
        if spec.path in finals:
            d = finals[spec.path]
            title, summary, kws = d.title, d.summary, d.keywords
        elif spec.path in existing:
            meta = existing[spec.path]
            title, summary, kws = (
                meta.get("title", spec.title),
                meta.get("summary", ""),
                meta.get("keywords", []),
            )
        else:
            continue
        entries.append(Entry(spec.path, spec.type, str(title), str(summary), tuple(str(k) for k in kws)))
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
