"""Matching by meaning (``search.semantic``) on and off, side by side in one run on the FarmBot KB:
file_recall@5 and the answer figures on the dev questions (and on any question file named in
``WIKIC_EXTRA_QUESTIONS``, ':'-separated) in search and index mode, the size of the search index,
the cold compile (fresh processes, in turn), and ``wikic search`` as a fresh process next to
``python -c pass``. The two KBs are made from the same layers, one with ``search: {semantic:
false}`` in its ``wiki.yaml``. Reported, never asserted."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import farmbot_kb  # noqa: E402
import yaml  # noqa: E402
from apiserver import ApiServer  # noqa: E402
from bench_cli import interleaved, wikic_command  # noqa: E402
from bench_compile import cold_cpu, layers_copy  # noqa: E402

from wikic.compile.searchindex.store import DB_PATH, SETTLED  # noqa: E402
from wikic.core.embedding import QUERY_ASSETS  # noqa: E402
from wikic.lookup.ask import Lookup  # noqa: E402
from wikic.lookup.eval import load_questions, run_eval  # noqa: E402

COMPILES = 2  # cold compiles of each, in turn
COLUMNS = ("file_recall@5", "section_recall@5", "mrr", "answer_accuracy", "correct_refusal", "false_refusal")


def switched_off(root: Path) -> Path:
    with (root / "schema" / "wiki.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\nsearch:\n  semantic: false\n")
    return root


def compiles(layers: Path, tmp: Path) -> tuple[dict[str, list[tuple[float, float]]], dict[str, Path]]:
    """Cold compiles of the layers with the switch on and off, in fresh processes, in turn; the
    last KB of each is kept for the other figures."""
    times: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
    kept: dict[str, Path] = {}
    for n in range(COMPILES):
        for name in times:
            root = layers_copy(layers, tmp / f"{name}-{n}")
            if name == "off":
                switched_off(root)
            times[name].append(cold_cpu(root))
            if name in kept:
                shutil.rmtree(kept[name])
            kept[name] = root
    return times, kept


def recall(kbs: dict[str, Path], files: list[Path]) -> list[str]:
    lines = []
    for path in files:
        questions = load_questions(path)
        lines.append(f"{path.name}: {len(questions)} questions")
        lines.append(f"{'':18}" + "".join(f"{c:>17}" for c in COLUMNS))
        for mode in ("search", "index"):
            for name, root in kbs.items():
                lookup = Lookup(root)
                try:
                    s = run_eval(root, questions, mode, 5, lookup=lookup).summary
                finally:
                    lookup.close()
                figures = "".join(f"{s.get(c) if s.get(c) is not None else '—':>17}" for c in COLUMNS)
                lines.append(f"{mode + ', ' + name:18}{figures}")
    return lines


def latency(kbs: dict[str, Path], tmp: Path) -> list[str]:
    questions = [q["question"] for q in yaml.safe_load(farmbot_kb.QUESTIONS.read_text())["questions"]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    wikic = wikic_command()
    time.sleep(SETTLED + 0.5)  # the files settled, as between a compile and the questions
    runs = interleaved(
        {
            "python -c pass": [[sys.executable, "-c", "pass"]],
            **{
                f"wikic search, {name}": [[*wikic, "--root", str(root), "search", q] for q in questions]
                for name, root in kbs.items()
            },
        },
        env,
        tmp,
    )
    base = runs["python -c pass"]
    lines = [f"{'':24} {'median ms':>10} {'x pass':>8} {'CPU ms':>8} {'CPU x pass':>11}"]
    for name, values in runs.items():
        walls = [w for w, _ in values]
        ratio = statistics.median(w / b for (w, _), (b, _) in zip(values, base))
        cpu = statistics.median(c for _, c in values)
        cpu_ratio = statistics.median(c / max(b, 1e-3) for (_, c), (_, b) in zip(values, base))
        lines.append(f"{name:24} {statistics.median(walls):10.1f} {ratio:8.1f} {cpu:8.1f} {cpu_ratio:11.1f}")
    return lines


def size(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.1f} MB" if path.exists() else "none"


def main() -> int:
    if not farmbot_kb.available():
        print("FarmBot corpus not found in ../shared; skipping")
        return 0
    files = farmbot_kb.question_files()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        api = ApiServer()
        try:
            farmbot_kb.build_layers(tmp / "layers", api)
        finally:
            api.close()
        times, kbs = compiles(tmp / "layers", tmp)
        print(
            f"FarmBot (487 sources), search.semantic on and off; cold compile: {COMPILES} fresh processes each, in turn"
        )
        for name, values in times.items():
            wall, cpu = statistics.median(w for w, _ in values), statistics.median(c for _, c in values)
            print(
                f"  compile, {name:3}: {wall:6.2f} s wall, {cpu:6.2f} s CPU; search index {size(kbs[name] / DB_PATH)}, "
                f"query file {size(kbs[name] / QUERY_ASSETS)}"
            )
        print()
        print("\n".join(recall(kbs, files)))
        print()
        print("\n".join(latency(kbs, tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
