"""LLM compile throughput against a fake Anthropic API with fixed latency
(run: ``.venv/bin/python bench/bench_llm.py``).

The example KB's FAQ and spec sources (about 16 pages) are compiled from scratch with the
Anthropic backend, through the real SDK, against a loopback server that answers every call after
a fixed delay (500 ms by default). Each concurrency level is reported next to the sequential
baseline (concurrency 1) measured in the same run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from fakellm import FakeAnthropic  # noqa: E402

from wikic.compile.librarian.anthropic import AnthropicLibrarian  # noqa: E402
from wikic.compile.run import compile_wiki  # noqa: E402
from wikic.compile.schema import load_wiki_schema  # noqa: E402


def make_kb(root: Path) -> Path:
    shutil.copytree(REPO / "schema", root / "schema")
    for source in ("faq", "specs"):
        shutil.copytree(REPO / "layer1_sources" / source, root / "layer1_sources" / source)
    return root


def run(base: Path, fake: FakeAnthropic, concurrency: int) -> dict:
    root = make_kb(base / f"kb-c{concurrency}")
    env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.url}
    lib = AnthropicLibrarian.from_schema(load_wiki_schema(root), env, timeout=30.0, max_retries=2)
    lib.concurrency = concurrency
    started = time.perf_counter()
    report = compile_wiki(root, librarian=lib)
    seconds = time.perf_counter() - started
    pages = len(report.added) + len(report.changed)
    return {
        "concurrency": concurrency,
        "pages": pages,
        "calls": report.usage.calls,
        "seconds": seconds,
        "pages_per_s": pages / seconds,
        "failed": len(report.failed),
        "cache_read": report.usage.cache_read_tokens,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per fake API call")
    parser.add_argument("--concurrency", default="1,8", help="comma-separated levels (first is the baseline)")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    fake = FakeAnthropic(latency=args.latency)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="wikic-bench-llm-") as tmp:
            for c in levels:
                rows.append(run(Path(tmp), fake, c))
    finally:
        fake.close()
    base = rows[0]
    print(f"LLM compile, fake Anthropic API with {args.latency * 1000:.0f} ms per call (real SDK, loopback)")
    print(
        f"{'concurrency':>11} {'pages':>6} {'calls':>6} {'seconds':>8} {'floor s':>8} {'pages/s':>8} "
        f"{'speed-up':>9}"
    )
    for r in rows:
        floor = -(-r["calls"] // r["concurrency"]) * args.latency  # waves of calls × latency
        print(
            f"{r['concurrency']:>11} {r['pages']:>6} {r['calls']:>6} {r['seconds']:>8.2f} {floor:>8.2f} "
            f"{r['pages_per_s']:>8.2f} {r['pages_per_s'] / base['pages_per_s']:>8.1f}x"
        )
    if any(r["failed"] for r in rows):
        print("some pages failed to compile", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
