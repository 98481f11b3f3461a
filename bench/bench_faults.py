"""The fault matrix and the adversarial LLM (run: ``.venv/bin/python bench/bench_faults.py``).

Fault matrix (``tests/faultmatrix.py``): each scenario breaks a fresh copy of a small KB (a bad API
answer, a deleted or forged file, a wrong configuration), runs the commands an operator would,
and the repair wikic advises. A scenario survives when every command ends with a documented exit
code (0, 1 or 2) and a message, never a traceback; data lost counts the snapshots, current
records, layer-1 files and wiki pages of the intact KB that are missing or altered at the end.

Adversarial LLM (``tests/adversarial.py``): the example KB compiled through the real anthropic SDK
against a fake API whose model writes, next to each genuine quote, a negated copy, a number swap,
an appended clause, raw HTML, and injected headings, summaries and keywords. The table counts per
category what the compile caught and what reached a page; the genuine quotes are the baseline.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from adversarial import run_adversary  # noqa: E402
from apiserver import ApiServer  # noqa: E402
from conftest import copy_example  # noqa: E402
from faultmatrix import API, SCENARIOS, build_base, run_scenario, serve  # noqa: E402


def fault_matrix(tmp: Path) -> int:
    api = ApiServer()
    serve(api)
    base = tmp / "base"
    started = time.perf_counter()
    try:
        build_base(base, api)
        outcomes = [run_scenario(s, base, tmp / "work" / f"{i:02d}", api) for i, s in enumerate(SCENARIOS)]
    finally:
        api.close()
    print(f"{'scenario':<44} {'exit codes':<16} {'survived':<9} {'data lost'}")
    for o in outcomes:
        print(
            f"{o.name:<44} {' '.join(map(str, o.codes)):<16} {'yes' if o.survived else 'NO':<9} {len(o.lost)}"
        )
        if o.problem:
            print(f"    {o.problem.splitlines()[-1][:150]}")
    survived = sum(o.survived for o in outcomes)
    lost = sum(len(o.lost) for o in outcomes)
    api_n = len(API)
    print(
        f"\nfault matrix: {len(outcomes)} scenarios ({api_n} API faults, {len(outcomes) - api_n} local), "
        f"{survived} survived, {lost} files or records lost; {time.perf_counter() - started:.1f} s"
    )
    return 0 if survived == len(outcomes) and not lost else 1


def adversary(tmp: Path) -> int:
    root = copy_example(tmp / "example")
    shutil.rmtree(root / "wiki")
    started = time.perf_counter()
    result = run_adversary(root)
    print(result.table())
    r = result.compile
    print(
        f"\ncompile: {len(r.added)} pages, {r.sentences} sentences, {r.verified} verified, {r.repaired} repaired, "
        f"{r.dropped} dropped; {len([n for n in r.notes if 'not supported by' in n])} headings or summaries "
        f"rebuilt; {time.perf_counter() - started:.1f} s"
    )
    return 0 if all(published == 0 for *_, published in result.rows) else 1


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="wikic-bench-faults-") as tmp:
        print("== fault matrix ==")
        failed = fault_matrix(Path(tmp))
        print("\n== adversarial LLM (example KB) ==")
        failed |= adversary(Path(tmp))
    return failed


if __name__ == "__main__":
    sys.exit(main())
