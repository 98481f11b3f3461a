"""The ``wikic`` console script. ``search`` and ``ask`` are called once per question by agents,
so a well-formed ``wikic [--root DIR] search|ask TEXT [--k N] [--json]`` runs here without
importing typer (whose start-up alone costs more than the lookup); everything else (other
commands, ``--help``, a bad option or value, an error to report) goes to the typer app in
``app.py``, which runs the same two functions.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import WikicError
from .lookup_commands import ask_command, search_command

OPTIONS = {"search": {"--k": int, "--json": bool}, "ask": {"--json": bool}}


def quick(argv: list[str]) -> bool:
    """Run ``[--root DIR] search|ask TEXT [options]`` without typer; False when ``argv`` is
    anything else, or the command fails, so that typer handles it as usual."""
    root = Path(".")
    if len(argv) >= 2 and argv[0] == "--root":
        root, argv = Path(argv[1]), argv[2:]
    elif argv and argv[0].startswith("--root="):
        root, argv = Path(argv[0].split("=", 1)[1]), argv[1:]
    if not argv or argv[0] not in OPTIONS:
        return False
    options = OPTIONS[argv[0]]
    text: str | None = None
    k, json_out = 10, False
    rest = argv[1:]
    while rest:
        item = rest.pop(0)
        name, eq, inline = item.partition("=")
        if options.get(name) is bool and not eq:
            json_out = True
        elif options.get(name) is int:
            raw = inline if eq else (rest.pop(0) if rest else "")
            if not raw.isdigit() or int(raw) < 1:
                return False
            k = int(raw)
        elif item.startswith("-") or text is not None:
            return False
        else:
            text = item
    if text is None:
        return False
    try:
        if argv[0] == "search":
            search_command(root.resolve(), text, k, json_out)
        else:
            ask_command(root.resolve(), text, json_out)
    except WikicError:
        return False  # typer reports it, with its exit code
    return True


def main() -> None:
    if quick(sys.argv[1:]):
        return
    from .app import main as typer_main

    typer_main()
