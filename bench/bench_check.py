"""Benchmark of ``wikic check`` on the FarmBot KB (run: ``.venv/bin/python bench/bench_check.py``).

The FarmBot corpus in ../shared is served over loopback, fetched, transformed and compiled offline
into a temporary KB. ``check`` must be fast enough for a pre-commit hook: the target is ≤ 2 s.
Figures are printed next to a baseline measured in the same run: the time to just read and parse
every layer-1 source and wiki page (frontmatter, sections and cited statements), which any lint
over the whole KB has to pay. A per-rule breakdown shows where the rest goes.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from apiserver import ApiServer  # noqa: E402
from farmbot_kb import available, build_layers  # noqa: E402

from wikic.check import run as lint  # noqa: E402
from wikic.compile.run import compile_wiki  # noqa: E402
from wikic.transform.layer1 import load_layer1  # noqa: E402

TARGET_S = 2.0


def timed(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def parse_everything(root: Path) -> int:
    docs = load_layer1(root)
    pages = lint.wiki_pages(root)
    return len(docs) + sum(len(p.statements) for p in pages)


def rule_breakdown(root: Path) -> list[tuple[str, float, int]]:
    started = time.perf_counter()
    claims = lint.Claims()
    kb = lint.gather(root, readers=(claims.add,))
    rows = [("gather (layer 1, plan, page frontmatter)", time.perf_counter() - started, 0)]
    spent = dict.fromkeys(lint.PAGE_RULES, 0.0)
    found = dict.fromkeys(lint.PAGE_RULES, 0)
    started = time.perf_counter()
    for page in kb.read_pages():
        kb.note(page)
        for rule in lint.PAGE_RULES:
            begun = time.perf_counter()
            found[rule] += len(list(rule(kb, page)))
            spent[rule] += time.perf_counter() - begun
    walk = time.perf_counter() - started - sum(spent.values())
    rows.append(("walk the pages (read, statements, links)", walk, 0))
    rows += [(rule.__name__, spent[rule], found[rule]) for rule in lint.PAGE_RULES]
    for rule in (*lint.KB_RULES, functools.partial(lint.rule_contradictions, claims=claims)):
        started = time.perf_counter()
        n = len(list(rule(kb)))
        rows.append((getattr(rule, "__name__", "rule_contradictions"), time.perf_counter() - started, n))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure (median reported)")
    args = parser.parse_args()
    if not available():
        print("FarmBot corpus not found in ../shared/corpora/farmbot; nothing to measure")
        return 0
    with tempfile.TemporaryDirectory(prefix="wikic-bench-check-") as tmp:
        root = Path(tmp) / "kb"
        server = ApiServer()
        try:
            build_layers(root, server)
        finally:
            server.close()
        compile_wiki(root)

        base_s, items = timed(lambda: parse_everything(root), args.runs)
        check_s, report = timed(lambda: lint.check(root), args.runs)
        assert isinstance(report, lint.CheckReport)

        print(
            f"FarmBot KB: {report.sources} layer-1 sources, {report.pages} wiki pages, "
            f"{report.statements} cited statements; median of {args.runs} runs"
        )
        print(f"{'figure':<40} {'seconds':>8}")
        print(f"{'baseline: parse sources and pages':<40} {base_s:>8.3f}   ({items} items)")
        verdict = "ok" if check_s <= TARGET_S else "OVER TARGET"
        print(f"{'wikic check (all rules)':<40} {check_s:>8.3f}   target ≤ {TARGET_S:.1f} s: {verdict}")
        print(f"{'  check / baseline':<40} {check_s / base_s:>8.1f}x")
        print(
            f"findings: {len(report.errors)} error(s), {len(report.warnings)} warning(s)\n\nper rule (one run):"
        )
        for name, seconds, n in rule_breakdown(root):
            print(f"  {name:<38} {seconds:>8.3f}   {n} finding(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
