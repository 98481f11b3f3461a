"""The ``wikic`` command line: a thin typer layer over the library. Only this module and
``entry.py`` (which runs ``search`` and ``ask`` without typer) print."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import WikicError
from .lookup_commands import ask_command, dump_json, search_command

app = typer.Typer(
    help="Compile API knowledge into a cited, incrementally built wiki.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class LazyConsole:
    """A rich console made on first use: importing rich costs more than a whole ``wikic search``.
    Logs and pipes get 120 columns so report tables are not truncated; terminals keep their width."""

    def __init__(self, stderr: bool = False):
        self.stderr = stderr
        self._console = None

    def __getattr__(self, name: str):
        if self._console is None:
            from rich.console import Console

            stream = sys.stderr if self.stderr else sys.stdout
            self._console = Console(
                stderr=self.stderr, highlight=False, width=None if stream.isatty() else 120
            )
        return getattr(self._console, name)


def escape(text: str) -> str:
    """``text`` with rich markup escaped (rich imported on first use, as by the consoles)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


out = LazyConsole()
err = LazyConsole(stderr=True)


class State:
    root: Path = Path(".")


state = State()


@app.callback()
def _root(
    root: Annotated[Path, typer.Option("--root", help="KB root folder (the one holding schema/).")] = Path(
        "."
    ),
) -> None:
    state.root = root.resolve()


def fail(exc: WikicError) -> typer.Exit:
    err.print(f"[red]error:[/red] {exc}", markup=True, soft_wrap=True)
    return typer.Exit(exc.exit_code)


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Callable[[str, int, int | None], None]]:
    """A rich progress bar with one task per source; yields the callback the library calls."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not enabled or not err.is_terminal,
    )
    tasks: dict[str, int] = {}

    def update(name: str, done: int, total: int | None) -> None:
        if name not in tasks:
            tasks[name] = bar.add_task(name, total=total)
        bar.update(tasks[name], completed=done, total=total)

    with bar:
        yield update


def report_table(*columns: str, **kwargs):
    """A compact table that fits an 80-column log without truncating its headers."""
    from rich import box
    from rich.table import Table

    return Table(*columns, box=box.SIMPLE_HEAD, pad_edge=False, **kwargs)


def run(fn: Callable, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except WikicError as exc:
        raise fail(exc) from None


def user_file(path: Path) -> Path:
    """A file named on the command line: as given (relative to the working directory), or else
    relative to ``--root``, so ``wikic --root kb eval questions.yaml`` finds ``kb/questions.yaml``."""
    if path.is_absolute() or path.exists():
        return path
    inside = state.root / path
    return inside if inside.exists() else path


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Folder to create the knowledge base in.")],
    origins: Annotated[
        list[str] | None,
        typer.Option(
            "--from",
            help="An API's first page (http(s):// or file: URL, or a JSON page file) or a folder of "
            ".md/.json files; repeat for several sources. sources.yaml is written from a sample.",
        ),
    ] = None,
    names: Annotated[
        list[str] | None, typer.Option("--name", help="Source name for the --from in the same position.")
    ] = None,
    headers: Annotated[
        list[str] | None,
        typer.Option("--header", help="'Name: value' sent to the APIs; secrets become ${ENV} placeholders."),
    ] = None,
) -> None:
    """Scaffold a KB: commented schema files, empty layer folders and a Makefile (--from: sources inferred)."""
    if not origins:
        from ..onboard.scaffold import init_kb

        created = run(init_kb, path)
        out.print(
            f"Created a knowledge base in {path} ({len(created)} files). Next: edit schema/sources.yaml, then"
        )
        out.print(f"  cd {path} && wikic fetch && wikic transform && wikic plan --write && wikic compile")
        return
    from ..onboard.infer import onboard

    report = run(onboard, path, origins, names, headers, progress=lambda m: err.print(m, markup=False))
    for s in report.sources:
        out.print(f"{s.name}: {s.kind} source, {s.records} records sampled", markup=False)
    out.print(f"Wrote {path}/schema/sources.yaml ({len(report.created)} files in all).", markup=False)
    for todo in report.todos:
        err.print(f"[yellow]TODO[/yellow] {todo}", soft_wrap=True)
    for var, what in report.env.items():
        out.print(f"  export {var}=...   # {what}", markup=False)
    out.print(f"Next: cd {path} && wikic fetch && wikic transform && wikic plan --write && wikic compile")


@app.command()
def fetch(
    source: Annotated[str | None, typer.Option("--source", help="Fetch only this source.")] = None,
    allow_shrink: Annotated[
        bool,
        typer.Option(
            "--allow-shrink",
            help="Accept a source that lost records (an empty or short page, or more than max_shrink).",
        ),
    ] = False,
    repair: Annotated[
        bool,
        typer.Option("--repair", help="Refetch everything and restore missing or altered current snapshots."),
    ] = False,
) -> None:
    """Pull every configured source into layer 0 (write-once snapshots)."""
    from ..core.config import load_sources
    from ..fetch.run import fetch as do_fetch

    config = run(load_sources, state.root)
    with progress_bar() as bar:
        reports = run(
            do_fetch, state.root, config, only=source, progress=bar, allow_shrink=allow_shrink, repair=repair
        )
    table = report_table(
        "source",
        "records",
        "added",
        "changed",
        "unchanged",
        "removed",
        "pages",
        "304",
        "errors",
        "s",
        caption="304: pages the API answered 'not modified' (nothing downloaded again); s: seconds",
    )
    for r in reports:
        table.add_row(
            r.source,
            str(r.records),
            str(r.added),
            str(r.changed),
            str(r.unchanged),
            str(len(r.removed)),
            str(r.pages),
            str(r.not_modified),
            str(len(r.errors)),
            f"{r.seconds:.2f}",
        )
    out.print(table)
    for r in reports:
        if r.repaired:
            out.print(f"{r.source}: restored {len(r.repaired)} snapshot(s): {', '.join(r.repaired[:5])}")
    _report_errors([e for r in reports for e in r.errors], max((r.exit_code for r in reports), default=0))


@app.command()
def transform() -> None:
    """Render layer-0 snapshots into layer-1 Markdown (deterministic, idempotent)."""
    from ..core.config import load_sources
    from ..transform.run import transform as do_transform

    config = run(load_sources, state.root)
    with progress_bar() as bar:
        reports = run(do_transform, state.root, config, progress=bar)
    table = report_table("source", "written", "unchanged", "deleted", "errors", "s")
    for r in reports:
        table.add_row(
            r.source, str(r.written), str(r.unchanged), str(r.deleted), str(len(r.errors)), f"{r.seconds:.2f}"
        )
    out.print(table)
    _report_errors([e for r in reports for e in r.errors])


@app.command()
def verify() -> None:
    """Recompute layer-0 hashes; exit 1 naming any snapshot edited by hand."""
    from ..fetch.layer0 import verify as do_verify

    checked, problems = run(do_verify, state.root)
    for p in problems:
        err.print(f"[red]tampered:[/red] {p.path}: {p.reason}", soft_wrap=True)
    if problems:
        err.print(
            f"{len(problems)} of {checked} snapshots failed verification (or their manifest did); "
            "each line says how to repair it"
        )
        raise typer.Exit(1)
    out.print(f"{checked} snapshots verified")


@app.command()
def check(
    json_out: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Run every rule, even over a KB unchanged since the last check.")
    ] = False,
) -> None:
    """Lint the whole KB (links, citations, staleness, contradictions, integrity); exit 1 on errors."""
    from ..check.run import check as do_check
    from ..check.run import format_report

    report = run(do_check, state.root, full)
    if json_out:
        dump_json(report.as_json())
    else:
        out.print(format_report(report), markup=False, soft_wrap=True, end="")
    if report.errors:
        raise typer.Exit(1)


@app.command()
def trace(
    target: Annotated[str, typer.Argument(help="A wiki page, optionally with :LINE (e.g. wiki/x.md:12).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the lineage as JSON.")] = False,
) -> None:
    """Lineage of a wiki sentence: citations, layer-1 section, layer-0 snapshot, API URL."""
    from ..check.trace import format_trace
    from ..check.trace import trace as do_trace

    report = run(do_trace, state.root, target)
    if json_out:
        dump_json(report.as_json())
    else:
        out.print(format_trace(report), markup=False, soft_wrap=True, end="")


@app.command("plan")
def plan_cmd(
    kinds: Annotated[
        list[str] | None,
        typer.Argument(help="Kinds to propose: topics devices comparisons guides versions (default: all)."),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Write the proposed kinds into schema/wiki.yaml.")
    ] = False,
    librarian: Annotated[
        str | None,
        typer.Option("--librarian", help="offline | anthropic | openai: an LLM refines names and queries."),
    ] = None,
) -> None:
    """Propose schema/wiki.yaml from layer 1 and print it as a diff; --write writes what you accept."""
    from ..onboard.plan import plan_schema

    model = _plan_model(librarian)
    report = run(plan_schema, state.root, tuple(kinds or ()), write=write, model=model)
    out.print(
        report.diff or "schema/wiki.yaml already matches the proposal", markup=False, soft_wrap=True, end=""
    )
    for note in report.notes:
        err.print(f"[yellow]note:[/yellow] {note}", soft_wrap=True)
    for todo in report.proposal.todos:
        err.print(f"[yellow]TODO[/yellow] {todo}", soft_wrap=True)
    counts = ", ".join(f"{len(v)} {k}" for k, v in report.proposal.items.items())
    done = "written to schema/wiki.yaml" if report.written else "not written (add --write to accept it)"
    by = f", names refined by {report.refined}" if report.refined and not report.notes else ""
    out.print(f"\nproposal: {counts}{by}; {done}", markup=False)


def _plan_model(backend: str | None):
    """The model that refines a plan: the --librarian given, else the schema's, when its key is set."""
    import os

    from ..compile.run import make_librarian
    from ..compile.schema import load_wiki_schema

    if backend in (None, "offline") and not (state.root / "schema" / "wiki.yaml").exists():
        return None
    schema = run(load_wiki_schema, state.root)
    lib = run(make_librarian, schema, backend, dict(os.environ))
    return getattr(lib, "model_api", None)


def _report_errors(errors: list[str], code: int = 0) -> None:
    """Print the errors; exit ``code`` (2: configuration), or 1 when there are errors."""
    for e in errors:
        err.print(f"[red]error:[/red] {e}", soft_wrap=True)
    if errors:
        raise typer.Exit(code or 1)


# -- lookup: search, ask, eval, tune-index, mcp (see search.py, ask.py, eval.py, tune.py, mcp_server.py)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    k: Annotated[int, typer.Option("--k", min=1, help="Number of results.")] = 10,
    json_out: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Hybrid search over the wiki, index.md and layer-1 sections (BM25 lists fused with RRF)."""
    run(search_command, state.root, query, k, json_out)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer from the wiki.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")] = False,
) -> None:
    """Answer from the wiki with file#heading citations, or refuse when the evidence is weak."""
    run(ask_command, state.root, question, json_out)


@app.command("eval")
def eval_cmd(
    questions: Annotated[Path, typer.Argument(help="Question file (DESIGN §8 format).")],
    mode: Annotated[str, typer.Option("--mode", help="index | search | raw.")] = "index",
    k: Annotated[int, typer.Option("--k", min=1, help="Cut-off for recall and MRR.")] = 5,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write summary and cases as JSON.")] = None,
) -> None:
    """Retrieval and answer evaluation: recall@k, MRR, answer accuracy, refusals, latency."""
    from ..core.fsutil import atomic_write
    from ..lookup.eval import load_questions, run_eval

    qs = run(load_questions, user_file(questions))
    report = run(run_eval, state.root, qs, mode, k)
    if out_file:
        atomic_write(out_file, json.dumps(report.as_dict(), ensure_ascii=False, indent=1) + "\n")
    print_eval(report)


def print_eval(report, title: str = "") -> None:
    for text in report.notes:
        err.print(f"[yellow]note:[/yellow] {escape(text)}", soft_wrap=True)
    s = report.summary
    table = report_table("metric", "value", title=title or f"eval ({s['mode']}, {s['questions']} questions)")
    for key, value in s.items():
        if key not in ("mode",):
            table.add_row(key, "—" if value is None else str(value))
    out.print(table)
    if report.by_type:
        columns = [f"file_recall@{report.k}", "answer_accuracy", "correct_refusal", "false_refusal"]
        per_type = report_table("type", "questions", *columns)
        for kind, figures in report.by_type.items():
            per_type.add_row(kind, str(figures["questions"]), *(_figure(figures.get(c)) for c in columns))
        out.print(per_type)
    for c in report.cases:
        if c.failed:
            out.print(
                f"FAIL {c.id} ({'; '.join(c.problems)}): {c.question[:70]} expected {c.expected} "
                f"got {c.retrieved[:3]}",
                markup=False,
                soft_wrap=True,
            )
            if c.answer:
                out.print(f"     answer: {c.answer[:300]}", markup=False, soft_wrap=True)


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


@app.command("tune-index")
def tune_index_cmd(
    questions: Annotated[Path, typer.Argument(help="Question file (DESIGN §8 format).")],
    k: Annotated[int, typer.Option("--k", min=1, help="Cut-off for recall.")] = 5,
) -> None:
    """Improve index.md lines from failed eval cases (stored in schema/index-overrides.yaml), re-evaluate."""
    from ..core.fsutil import atomic_write
    from ..lookup.backend import llm_model
    from ..lookup.eval import load_questions
    from ..lookup.tune import tune_index

    qs = run(load_questions, user_file(questions))
    report = run(tune_index, state.root, qs, k, model=run(llm_model, state.root))
    atomic_write(
        state.root / ".wikic" / "tune-report.json",
        json.dumps(report.as_dict(), ensure_ascii=False, indent=1) + "\n",
    )
    for c in report.changes:
        out.print(
            f"{c.path}: +{', '.join(c.added)} (from {', '.join(c.questions)})", markup=False, soft_wrap=True
        )
    table = report_table("metric", "before", "after")
    after = report.after.summary if report.after else {}
    for key, value in report.before.summary.items():
        if isinstance(value, float):
            table.add_row(key, str(value), str(after.get(key, "—")))
    out.print(table)
    out.print(
        f"{len(report.changes)} index line(s) enhanced in schema/index-overrides.yaml; "
        f"report in .wikic/tune-report.json"
    )


@app.command()
def mcp() -> None:
    """Serve the wiki to agents over MCP (stdio): read_index, read_page, search, ask; pages as resources."""
    from ..lookup.mcp_server import serve

    run(serve, state.root)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted; rerun the command to complete the work")
        sys.exit(130)


@app.command("compile")
def compile_cmd(
    librarian: Annotated[
        str | None,
        typer.Option("--librarian", help="offline | anthropic | openai (default: schema/wiki.yaml)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan with estimated tokens and cost.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    batch: Annotated[
        bool, typer.Option("--batch", help="anthropic: send all pages as one Message Batch (cheaper).")
    ] = False,
    page: Annotated[
        list[str] | None,
        typer.Option(
            "--page", help="Compile only this page (wiki path or name; repeatable), to try a model."
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Compile at most N of the pages that need it.")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Processes making pages (default: one per core)."),
    ] = None,
) -> None:
    """Compile layer 1 into the wiki, incrementally; maintain index.md and log.md."""
    from ..compile.run import compile_wiki

    with progress_bar(not json_out) as bar:
        report = run(
            compile_wiki,
            state.root,
            backend=librarian,
            dry_run=dry_run,
            progress=bar,
            batch=batch,
            pages=page or None,
            limit=limit,
            jobs=jobs,
        )
    if json_out:
        dump_json(report_dict(report))
    elif dry_run:
        print_plan(report)
    else:
        print_compile_report(report)
    for problem in report.unreadable:
        err.print(f"[red]skipped:[/red] {problem}; pages made from it are kept as they were", soft_wrap=True)
    if report.failed or report.unreadable:
        raise typer.Exit(1)


def report_dict(report) -> dict:
    from dataclasses import asdict

    return asdict(report)


def print_plan(report) -> None:
    table = report_table(
        "action", "page", "sources", "parts", "prompt / context", "tokens in", "out", "cost $"
    )
    over = []
    for row in report.plan:
        prompt = ""
        if row.get("context_tokens"):
            prompt = f"{row.get('prompt_tokens', 0):,} / {row['context_tokens']:,}"
        if row.get("problem"):
            prompt = "does not fit"
            over.append(f"{row['page']}: {row['problem']}")
        table.add_row(
            row["action"],
            row["page"],
            str(row.get("sources", "")),
            str(row.get("parts", "")),
            prompt,
            f"{row['tokens_in']:,}",
            f"{row['tokens_out']:,}",
            f"{row['cost_usd']:.4f}",
        )
    out.print(table)
    total = sum(r["cost_usd"] for r in report.plan)
    out.print(
        f"{len(report.plan)} page(s) to write or remove with {report.backend}; estimated cost ${total:.2f}"
        + (f"; {report.skipped} more left for later (--page/--limit)" if report.skipped else "")
    )
    for line in over:
        err.print(f"[red]does not fit:[/red] {escape(line)}", soft_wrap=True)


def print_compile_report(report) -> None:
    for note in report.notes:
        err.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True)
    widest = max((p + m for _, p, m in report.diffstat), default=0)
    for path, plus, minus in report.diffstat:
        scale = min(1.0, 40 / widest) if widest else 1.0
        bar = "[green]" + "+" * round(plus * scale) + "[/green][red]" + "-" * round(minus * scale) + "[/red]"
        out.print(f" {path} | {plus + minus} {bar}", soft_wrap=True)
    if report.diffstat:
        adds = sum(p for _, p, _ in report.diffstat)
        dels = sum(m for _, _, m in report.diffstat)
        n = len(report.diffstat)
        out.print(f" {n} page{'s' if n != 1 else ''} changed, {adds} insertions(+), {dels} deletions(-)")
    u = report.usage
    out.print(
        f"compile ({report.backend}/{report.model}) in {report.seconds:.2f}s\n"
        f"  pages: +{len(report.added)} ~{len(report.changed)} -{len(report.removed)} ={report.unchanged}\n"
        f"  sentences: {report.sentences} cited {report.cited} verified {report.verified} "
        f"repaired {report.repaired} dropped {report.dropped}; citations {report.citations}\n"
        f"  LLM calls {u.calls}; tokens in {u.input_tokens} (cache reads {u.cache_read_tokens}, "
        f"cache writes {u.cache_write_tokens}), out {u.output_tokens}",
        soft_wrap=True,
    )
    if report.index_changed:
        out.print(f"index: {', '.join(report.index_changed)}")
    found = report.search_index
    if found.get("files") or found.get("embedded"):
        out.print(
            f"search index: {found['files']} file(s) indexed again, {found['embedded']} text(s) embedded"
        )
    if report.coverage:
        out.print(f"coverage: {report.coverage['summary']}", soft_wrap=True)
    for path in report.unplaced[:10]:
        out.print(f"[yellow]unplaced:[/yellow] {path}: {report.reasons.get(path, 'no page uses it')}")
    if len(report.unplaced) > 10:
        out.print(f"[yellow]… and {len(report.unplaced) - 10} more unplaced source(s)[/yellow]")
    for reason in report.drop_reasons[:10]:
        err.print(f"[yellow]dropped:[/yellow] {escape(reason)}", soft_wrap=True)
    if report.published or report.fallback:
        out.print(
            f"  model sentences published {report.published}, set aside for the fuller source text "
            f"{report.set_aside}; source sentences kept where the model fell short {report.fallback}"
        )
    if report.skipped:
        out.print(f"  {report.skipped} page(s) that need compiling were left for later (--page/--limit)")
    for path in report.failed:
        cause = report.causes.get(path, "no verifiable sentence remained")
        err.print(
            f"[red]not written:[/red] {escape(path)}: {escape(cause)} "
            "(its old text is kept; a rerun retries it)",
            soft_wrap=True,
        )
