"""``search`` and ``ask`` as the command line runs them: one lookup, its result on stdout, problems
on stderr. Shared by the typer-free path in ``main.py`` and by the typer app in ``app.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def search_command(root: Path, query: str, k: int, json_out: bool) -> None:
    from ..core.fsutil import require_kb
    from ..lookup.backend import llm_model, model_expander
    from ..lookup.search import open_index

    require_kb(root)  # before an index is created in a folder that is no KB
    index, stats = open_index(root)
    if stats.rebuilt:
        note(f"the search index was corrupt: {stats.rebuilt}")
    for problem in stats.skipped:
        note(f"skipped: {problem}")
    try:
        model = llm_model(root, index=index)
        result = index.search(query, k, expander=model_expander(model) if model is not None else None)
        semantic = index.semantic_note
    finally:
        index.close()
    if semantic:
        note(semantic)
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
    from ..core.fsutil import require_kb
    from ..lookup.ask import Lookup
    from ..lookup.backend import llm_model

    require_kb(root)
    lookup = Lookup(root)
    for problem in lookup.problems:
        note(problem)
    try:
        answer = lookup.answer(question, model=llm_model(root, index=lookup.index))
        semantic = lookup.index.semantic_note
    finally:
        lookup.close()
    if semantic:
        note(semantic)
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
