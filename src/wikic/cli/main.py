"""The ``wikic`` console script. ``search`` and ``ask`` are called once per question by agents,
so a well-formed ``wikic [--root DIR] search|ask TEXT [--k N] [--json]`` runs here without
importing typer (whose start-up alone costs more than the lookup); everything else (other
commands, ``--help``, a bad option or value, an error to report) goes to the typer app in
``cli.py``, which runs the same two functions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import WikicError


def search_command(root: Path, query: str, k: int, json_out: bool) -> None:
    from ..lookup.backend import llm_model, model_expander
    from ..lookup.search import open_index
    from ..transform.layer1 import require_kb

    require_kb(root)  # before an index is created in a folder that is no KB
    index, stats = open_index(root)
    if stats.rebuilt:
        note(f"the search index was corrupt: {stats.rebuilt}")
    for problem in stats.skipped:
        note(f"skipped: {problem}")
    try:
        model = llm_model(root, index=index)
        result = index.search(query, k, expander=model_expander(model) if model is not None else None)
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
    lines = [] if result.hits else ["no results"]
    for n, h in enumerate(result.hits, 1):
        lines.append(f"{n:>2}. {h.target}  {h.heading or h.title}  ({h.score:.4f})")
        if h.snippet:
            lines.append(f"    {h.snippet}")
    sys.stdout.write("".join(line + "\n" for line in lines))


def ask_command(root: Path, question: str, json_out: bool) -> None:
    from ..lookup.ask import Lookup
    from ..lookup.backend import llm_model
    from ..transform.layer1 import require_kb

    require_kb(root)
    lookup = Lookup(root)
    for problem in lookup.problems:
        note(problem)
    try:
        answer = lookup.answer(question, model=llm_model(root, index=lookup.index))
    finally:
        lookup.close()
    if json_out:
        dump_json(answer.as_dict())
        return
    if answer.refused:
        sys.stdout.write(answer.text + "\n")
        return
    for s in answer.sentences:
        where = f" (read in {s.page})" if s.page else ""
        sys.stdout.write(f"{s.text} " + " ".join(f"[{c}]" for c in s.cites) + where + "\n")


def note(text: str) -> None:
    """A problem worth knowing that does not stop the command, on stderr."""
    sys.stderr.write(f"note: {text}\n")


def dump_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n")


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
