"""The ``wikic`` command line: a thin typer layer over the library. Only this module prints."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
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
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


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


def run(fn: Callable, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except WikicError as exc:
        raise fail(exc) from None


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
    table = Table(
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
    table = Table("source", "written", "unchanged", "deleted", "errors", "s")
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


def _report_errors(errors: list[str]) -> None:
    for e in errors:
        err.print(f"[red]error:[/red] {e}", soft_wrap=True)
    if errors:
        raise typer.Exit(1)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted; rerun the command to complete the work")
        sys.exit(130)


def dump_json(data: object) -> None:
    out.print_json(json.dumps(data, ensure_ascii=False))
