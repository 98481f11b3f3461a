"""Benchmark of ``compile`` and ``check`` on hostile 80 KB sources (run: ``.venv/bin/python
bench/bench_hostile.py``).

Each KB holds one layer-1 file of 80 KB: nested brackets (which once took 52 s to compile and
57 s to check), lone brackets, image brackets, angle brackets, emphasis marks, one long word,
and, as the baseline measured in the same run, 80 KB of plain prose. Each input is compiled
cold and checked; the figures are medians of ``--runs`` runs. The target is linear work: each
hostile file within 2 s, and close to the prose baseline.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from wikic.check.run import check
from wikic.compile.run import compile_wiki

REPO = Path(__file__).resolve().parents[1]
SIZE = 80_000
PROSE = "The pump of the garden runs for five minutes every half hour while the light is on. "
INPUTS = {
    "prose (baseline)": PROSE * (SIZE // len(PROSE)),
    "nested brackets": "[" * (SIZE // 2) + "x" + "](y)" * (SIZE // 8),
    "open brackets": "[" * SIZE,
    "image brackets": "![" * (SIZE // 2),
    "angle brackets": "<" * SIZE,
    "emphasis marks": "*_" * (SIZE // 2),
    "one long word": "a" * SIZE,
}


def kb(root: Path, text: str) -> Path:
    (root / "schema").mkdir(parents=True)
    shutil.copy(REPO / "schema" / "librarian.md", root / "schema" / "librarian.md")
    (root / "schema" / "wiki.yaml").write_text(yaml.safe_dump({"topics": [{"source": "faq"}]}), "utf-8")
    folder = root / "layer1_sources" / "faq"
    folder.mkdir(parents=True)
    (folder / "hostile.md").write_text(f"---\ntitle: Hostile\n---\n\n# Hostile\n\n{text}\n", "utf-8")
    return root


def measure(text: str, runs: int) -> tuple[float, float]:
    compiles, checks = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            root = kb(Path(tmp) / "kb", text)
            started = time.perf_counter()
            compile_wiki(root)
            compiles.append(time.perf_counter() - started)
            started = time.perf_counter()
            check(root)
            checks.append(time.perf_counter() - started)
    return statistics.median(compiles), statistics.median(checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures = {name: measure(text, args.runs) for name, text in INPUTS.items()}
    base_compile, base_check = figures["prose (baseline)"]
    print(f"{'80 KB layer-1 file':<20} {'compile s':>10} {'check s':>9} {'vs prose':>10}")
    for name, (c, k) in figures.items():
        ratio = max(c / base_compile, k / base_check)
        print(f"{name:<20} {c:>10.2f} {k:>9.2f} {ratio:>9.1f}×")


if __name__ == "__main__":
    main()
