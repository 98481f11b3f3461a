"""The ``wikic`` command line: a thin typer layer over the library. Only this module prints."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from .errors import WikicError

app = typer.Typer(
    help="Compile API knowledge into a cited, incrementally built wiki.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Logs and pipes get 120 columns so report tables are not truncated; terminals keep their width.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 120)


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


def report_table(*columns: str, **kwargs) -> Table:
    """A compact table that fits an 80-column log without truncating its headers."""
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
def init(path: Annotated[Path, typer.Argument(help="Folder to create the knowledge base in.")]) -> None:
    """Scaffold a KB: commented schema files, empty layer folders and a Makefile."""
    from .scaffold import init_kb

    created = run(init_kb, path)
    out.print(
        f"Created a knowledge base in {path} ({len(created)} files). Next: edit schema/sources.yaml, then"
    )
    out.print(f"  cd {path} && wikic fetch && wikic transform && wikic compile")


@app.command()
def fetch(
    source: Annotated[str | None, typer.Option("--source", help="Fetch only this source.")] = None,
) -> None:
    """Pull every configured source into layer 0 (write-once snapshots)."""
    from .config import load_sources
    from .fetch import fetch as do_fetch

    config = run(load_sources, state.root)
    with progress_bar() as bar:
        reports = run(do_fetch, state.root, config, only=source, progress=bar)
    table = report_table(
        "source", "records", "added", "changed", "unchanged", "removed", "pages", "304", "errors", "s"
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
    _report_errors([e for r in reports for e in r.errors])


@app.command()
def transform() -> None:
    """Render layer-0 snapshots into layer-1 Markdown (deterministic, idempotent)."""
    from .config import load_sources
    from .transform import transform as do_transform

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
    from .layer0 import verify as do_verify

    checked, problems = run(do_verify, state.root)
    for p in problems:
        err.print(f"[red]tampered:[/red] {p.path}: {p.reason}", soft_wrap=True)
    if problems:
        err.print(
            f"{len(problems)} of {checked} snapshots failed verification; refetch or restore them from git"
        )
        raise typer.Exit(1)
    out.print(f"{checked} snapshots verified")


@app.command()
def check(
    json_out: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
) -> None:
    """Lint the whole KB (links, citations, staleness, contradictions, integrity); exit 1 on errors."""
    from .lint import check as do_check
    from .lint import format_report

    report = run(do_check, state.root)
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
    from .trace import format_trace
    from .trace import trace as do_trace

    report = run(do_trace, state.root, target)
    if json_out:
        dump_json(report.as_json())
    else:
        out.print(format_trace(report), markup=False, soft_wrap=True, end="")


def _report_errors(errors: list[str]) -> None:
    for e in errors:
        err.print(f"[red]error:[/red] {e}", soft_wrap=True)
    if errors:
        raise typer.Exit(1)


# -- lookup: search, ask, eval, tune-index, mcp (see search.py, ask.py, eval.py, tune.py, mcp_server.py)


def _expander(root: Path):
    """An LLM query expander when an LLM backend is configured with its key, else None."""
    from .ask import llm_model, model_expander

    model = run(llm_model, root)
    return model_expander(model) if model is not None else None


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    k: Annotated[int, typer.Option("--k", min=1, help="Number of results.")] = 10,
    json_out: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Hybrid search over the wiki, index.md and layer-1 sections (BM25 lists fused with RRF)."""
    from .search import open_index

    index, _ = run(open_index, state.root)
    try:
        result = run(index.search, query, k, expander=_expander(state.root))
    finally:
        index.close()
    if json_out:
        dump_json(
            {
                "query": query,
                "expanded": result.expanded,
                "strong_signal": result.strong_signal,
                "results": [h.as_dict() for h in result.hits],
            }
        )
        return
    if not result.hits:
        out.print("no results")
        return
    for n, h in enumerate(result.hits, 1):
        out.print(
            f"{n:>2}. {h.target}  {h.heading or h.title}  ({h.score:.4f})", markup=False, soft_wrap=True
        )
        if h.snippet:
            out.print(f"    {h.snippet}", markup=False, soft_wrap=True)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer from the wiki.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")] = False,
) -> None:
    """Answer from the wiki with file#heading citations, or refuse when the evidence is weak."""
    from .ask import Lookup, llm_model

    model = run(llm_model, state.root)
    lookup = run(Lookup, state.root)
    try:
        answer = run(lookup.answer, question, model=model)
    finally:
        lookup.close()
    if json_out:
        dump_json(answer.as_dict())
        return
    if answer.refused:
        out.print(answer.text)
        return
    for s in answer.sentences:
        where = f" (read in {s.page})" if s.page else ""
        out.print(f"{s.text} " + " ".join(f"[{c}]" for c in s.cites) + where, markup=False, soft_wrap=True)


@app.command("eval")
def eval_cmd(
    questions: Annotated[Path, typer.Argument(help="Question file (DESIGN §8 format).")],
    mode: Annotated[str, typer.Option("--mode", help="index | search | raw.")] = "index",
    k: Annotated[int, typer.Option("--k", min=1, help="Cut-off for recall and MRR.")] = 5,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write summary and cases as JSON.")] = None,
) -> None:
    """Retrieval evaluation: file/section recall@k, MRR, refusals and latency."""
    from .eval import load_questions, run_eval
    from .fsutil import atomic_write

    qs = run(load_questions, user_file(questions))
    report = run(run_eval, state.root, qs, mode, k)
    if out_file:
        atomic_write(out_file, json.dumps(report.as_dict(), ensure_ascii=False, indent=1) + "\n")
    print_eval(report)


def print_eval(report, title: str = "") -> None:
    s = report.summary
    table = report_table("metric", "value", title=title or f"eval ({s['mode']}, {s['questions']} questions)")
    for key, value in s.items():
        if key not in ("mode",):
            table.add_row(key, "—" if value is None else str(value))
    out.print(table)
    for c in report.cases:
        if c.failed:
            why = (
                "not refused"
                if not c.expected
                else ("refused" if c.refused else f"recall {c.file_recall:.2f}")
            )
            out.print(
                f"FAIL {c.id} ({why}): {c.question[:70]} expected {c.expected} got {c.retrieved[:3]}",
                markup=False,
                soft_wrap=True,
            )


@app.command("tune-index")
def tune_index_cmd(
    questions: Annotated[Path, typer.Argument(help="Question file (DESIGN §8 format).")],
    k: Annotated[int, typer.Option("--k", min=1, help="Cut-off for recall.")] = 5,
) -> None:
    """Improve index.md lines from failed eval cases (stored in schema/index-overrides.yaml), re-evaluate."""
    from .ask import llm_model
    from .eval import load_questions
    from .fsutil import atomic_write
    from .tune import tune_index

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
    from .mcp_server import serve

    run(serve, state.root)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted; rerun the command to complete the work")
        sys.exit(130)


def dump_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n")


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
) -> None:
    """Compile layer 1 into the wiki, incrementally; maintain index.md and log.md."""
    from .compile import compile_wiki

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
        )
    if json_out:
        dump_json(report_dict(report))
    elif dry_run:
        print_plan(report)
    else:
        print_compile_report(report)
    if report.failed:
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
    if report.unplaced:
        out.print(
            f"[yellow]{len(report.unplaced)} unplaced source(s):[/yellow] "
            + ", ".join(report.unplaced[:10])
            + (" …" if len(report.unplaced) > 10 else "")
        )
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
