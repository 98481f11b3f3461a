"""Benchmark of the fetch and transform stages (run: ``.venv/bin/python bench/bench_layers.py``).

10,000 generated records are served over loopback in pages of 100 with ETags. Each figure is printed
next to a baseline measured in the same run:

- fetch: naive sequential unconditional GETs of every page with httpx, one JSON file per record;
- transform: a full re-render (state file and layer-1 folder deleted first);
- no-change reruns of fetch and transform, which must finish in ≤ 1 s and write nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from apiserver import ApiServer  # noqa: E402

from wikic.core.config import load_sources  # noqa: E402
from wikic.fetch.run import fetch  # noqa: E402
from wikic.transform.layer1 import LAYER1  # noqa: E402
from wikic.transform.run import STATE, transform  # noqa: E402

WORDS = (
    "water tank pump sensor soil moisture light schedule basil tomato seed tray nutrient reservoir "
    "refill clean filter app wifi battery led grow plant leaf root harvest timer valve calibrate"
).split()


def make_records(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."

    out = []
    for i in range(n):
        paras = ["\n".join(sentence() for _ in range(3)) for _ in range(rng.randint(2, 4))]
        body = f"{paras[0]}\n\n## Details\n\n{paras[1]}\n\n## Steps\n\n" + "\n\n".join(paras[2:])
        out.append(
            {
                "id": i,
                "title": f"{sentence()[:-1]} #{i}",
                "body": body,
                "html_url": f"https://help.example.com/a/{i}",
                "updated_at": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
                "tags": rng.sample(WORDS, 3),
                "views": rng.randint(0, 10_000),
            }
        )
    return out


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in root.rglob("*")
        if p.is_file() and p.suffix != ".lock"
    }


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.suffix != ".lock"
    }


def written(before: dict, after: dict) -> int:
    return sum(1 for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def timed(fn):
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def naive_fetch(url: str, out: Path) -> int:
    """The baseline: every page, unconditionally, one after another; one file per record."""
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with httpx.Client() as client:
        while url:
            page = client.get(url).json()
            for rec in page["data"]:
                (out / f"{rec['id']}.json").write_text(json.dumps(rec, sort_keys=True, indent=1), "utf-8")
                n += 1
            url = str(httpx.URL(url).join(page["next"])) if page.get("next") else None
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--page-size", type=int, default=100)
    args = ap.parse_args()
    n = args.records
    server = ApiServer()
    rows: list[tuple[str, str, str, str, str]] = []

    def row(stage: str, ours: str, baseline: str, target: str, ok: bool) -> None:
        rows.append((stage, ours, baseline, target, "ok" if ok else "MISS"))

    try:
        url = server.add("articles", make_records(n), page_size=args.page_size, etag=True)
        with tempfile.TemporaryDirectory(prefix="wikic-bench-") as tmp:
            root = Path(tmp) / "kb"
            (root / "schema").mkdir(parents=True)
            sources = {
                "articles": {
                    "kind": "http",
                    "url": url,
                    "items": "data",
                    "pagination": {"style": "next_field"},
                    "body": "body",
                    "url_field": "html_url",
                }
            }
            (root / "schema" / "sources.yaml").write_text(yaml.safe_dump({"sources": sources}), "utf-8")
            config = load_sources(root)

            base_s, base_n = timed(lambda: naive_fetch(url, Path(tmp) / "naive"))
            assert base_n == n
            fetch_s, [rep] = timed(lambda: fetch(root, config))
            assert rep.errors == [] and rep.added == n, rep
            row(
                "fetch (cold)",
                f"{n / fetch_s:,.0f} rec/s",
                f"{base_n / base_s:,.0f} rec/s (naive)",
                "≥ 500 rec/s",
                n / fetch_s >= 500,
            )

            tr_s, [trep] = timed(lambda: transform(root, config))
            assert trep.errors == [] and trep.written == n, trep
            first = tree_bytes(root / LAYER1)
            (root / STATE).unlink()
            shutil.rmtree(root / LAYER1)
            full_s, [frep] = timed(lambda: transform(root, config))
            assert frep.written == n and tree_bytes(root / LAYER1) == first
            row(
                "transform (cold)",
                f"{n / tr_s:,.0f} rec/s",
                f"{n / full_s:,.0f} rec/s (full re-render)",
                "≥ 1,000 rec/s",
                n / tr_s >= 1000,
            )

            before = tree_state(root)
            refetch_s, [rrep] = timed(lambda: fetch(root, config))
            after = tree_state(root)
            w = written(before, after)
            assert rrep.unchanged == n and rrep.not_modified == rep.pages, rrep
            row(
                "fetch (no change)",
                f"{refetch_s:.2f} s, {w} files written",
                f"{base_s:.2f} s (naive refetch)",
                "≤ 1 s, 0 written",
                refetch_s <= 1 and not w,
            )

            before = after
            retr_s, [rtrep] = timed(lambda: transform(root, config))
            w = written(before, tree_state(root))
            assert rtrep.unchanged == n and rtrep.written == 0, rtrep
            row(
                "transform (no change)",
                f"{retr_s:.2f} s, {w} files written",
                f"{full_s:.2f} s (full re-render)",
                "≤ 1 s, 0 written",
                retr_s <= 1 and not w,
            )
    finally:
        server.close()

    header = ("stage", f"wikic ({n:,} records)", "baseline (same run)", "target", "")
    failures = [r[0] for r in rows if r[4] != "ok"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if failures:
        print(f"\nmissed targets: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
