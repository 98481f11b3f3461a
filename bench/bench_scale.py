"""Scale figures: the whole pipeline on generated help-centre documents, at growing sizes.

For each size, a folder of documents (``scale_docs``) is onboarded as a user would
(``init --from``), then every stage runs in a fresh process: fetch, transform, plan --write,
a cold compile, a no-change compile, check, check of the unchanged KB, and the first and second
search after the compile. Each stage's wall and CPU seconds and its peak resident memory are the
operating system's accounting of that process. Next to them, in the same run, the previous
release (git tag ``v0.1.0``, see ``bench_compile.previous_release``) runs the stages it has on a
copy of the same KB; then the growth of every stage from one size to the next (CPU time and
peak memory), which linear cost keeps near the growth of the data.

    bench/bench_scale.py                      # 2,000 documents (part of `make bench`)
    bench/bench_scale.py --sizes 2000,20000,100000 --previous-up-to 20000   # `make bench-scale`

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_compile import PREVIOUS, previous_release  # noqa: E402
from scale_docs import write_documents  # noqa: E402

QUERY = "reflash the firmware on the raspberry pi"


@dataclass
class Run:
    wall: float
    cpu: float
    peak_mb: float
    ok: bool


# (stage, arguments): what a user runs, in order; the previous release has no plan or init --from
STAGES = (
    ("fetch", ["fetch"]),
    ("transform", ["transform"]),
    ("plan --write", ["plan", "--write"]),
    ("compile (cold)", ["compile"]),
    ("compile (no change)", ["compile"]),
    ("check", ["check"]),
    ("check (unchanged KB)", ["check"]),
    ("search (first after compile)", ["search", QUERY]),
    ("search (second)", ["search", QUERY]),
)
NEWER_KEYS = ("search", "versions", "facts")
PREVIOUS_STAGES = ("fetch", "transform", "compile (cold)", "check", "search (first after compile)")


def run(args: list[str], src: Path, log: Path) -> Run:
    """One wikic command in a fresh process, with the wikic found under ``src``: its own wall and
    CPU seconds and peak memory (``wait4``), and whether it ran (check's exit 1 is a finding)."""
    code = "import sys\nfrom wikic.cli.main import main\nsys.argv[0] = 'wikic'\nsys.exit(main())"
    if not (src / "wikic" / "cli" / "main.py").exists():  # the previous release: one cli module
        code = "import sys\nfrom wikic.cli import main\nsys.argv[0] = 'wikic'\nsys.exit(main())"
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    started = time.perf_counter()
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=out, stderr=out)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss / 1024, proc.returncode in (0, 1))


def pipeline(docs: Path, kb: Path, src: Path, stages: tuple, log: Path) -> dict[str, Run]:
    out = {}
    for name, args in stages:
        out[name] = run(["--root", str(kb), *args], src, log)
        print(f"  ({kb.name}: {name} {fmt(out[name])})", file=sys.stderr, flush=True)  # progress
    return out


def previous(kb: Path, src: Path | None, dest: Path, log: Path) -> dict[str, Run]:
    """The previous release's stages on a copy of the schema ``kb`` was onboarded with."""
    if src is None:
        return {}
    shutil.copytree(kb / "schema", dest / "schema")
    (dest / "schema" / "sources.yaml").write_text(
        (kb / "schema" / "sources.yaml").read_text("utf-8").replace("path: ../", "path: ../../"), "utf-8"
    )
    wiki = yaml.safe_load((kb / "schema" / "wiki.yaml").read_text("utf-8"))
    for key in NEWER_KEYS:  # settings the previous release does not know (it rejects unknown keys)
        wiki.pop(key, None)
    (dest / "schema" / "wiki.yaml").write_text(yaml.safe_dump(wiki, sort_keys=False), "utf-8")
    chosen = tuple((n, a) for n, a in STAGES if n in PREVIOUS_STAGES)
    return pipeline(kb, dest, src, chosen, log)


def measure(
    n: int, tmp: Path, here: Path, prev_src: Path | None, log: Path, semantic: bool = True
) -> tuple[dict[str, Run], dict[str, Run]]:
    docs = tmp / f"docs-{n}"
    write_documents(n, docs)
    kb = tmp / f"kb-{n}"
    init = run(["init", str(kb), "--from", str(docs)], here, log)
    if not init.ok:
        raise SystemExit(f"init --from failed at {n} documents; see {log}")
    if not semantic:
        wiki_yaml = kb / "schema" / "wiki.yaml"
        text = wiki_yaml.read_text("utf-8")
        wiki_yaml.write_text(text.replace("  semantic: true", "  semantic: false", 1), "utf-8")
    now = pipeline(docs, kb, here, STAGES, log)
    then = previous(kb, prev_src, tmp / f"previous-{n}" / "kb", log) if prev_src else {}
    return now, then


def fmt(r: Run | None) -> str:
    if r is None:
        return "—"
    mark = "" if r.ok else " FAILED"
    return f"{r.cpu:7.1f} s CPU {r.wall:7.1f} s wall {r.peak_mb:6.0f} MB{mark}"


def report(n: int, now: dict[str, Run], then: dict[str, Run]) -> None:
    print(f"\n{n:,} documents")
    print(f"  {'stage':<30} {'this version':<38} {PREVIOUS + ' (same documents)':<38}")
    for name, _ in STAGES:
        print(f"  {name:<30} {fmt(now.get(name)):<38} {fmt(then.get(name)) if then else '—'}")


def growth(sizes: list[int], results: dict[int, dict[str, Run]]) -> None:
    for a, b in zip(sizes, sizes[1:]):
        print(f"\ngrowth from {a:,} to {b:,} documents ({b / a:.0f}x the data): CPU time x, peak memory x")
        for name, _ in STAGES:
            ra, rb = results[a].get(name), results[b].get(name)
            if ra and rb and ra.cpu > 0 and ra.peak_mb > 0:
                print(f"  {name:<30} {rb.cpu / ra.cpu:6.1f}x time {rb.peak_mb / ra.peak_mb:6.1f}x memory")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000", help="document counts, comma-separated")
    parser.add_argument(
        "--previous-up-to", type=int, default=20000, help="run the previous release up to this size"
    )
    parser.add_argument(
        "--words-only", action="store_true", help="search.semantic: false (no embedding of layer 1)"
    )
    parser.add_argument("--keep", type=Path, help="build the KBs here and keep them")
    parser.add_argument("--src", type=Path, default=HERE.parent / "src", help="the wikic to measure")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="wikic-bench-scale-") as scratch:
        tmp = args.keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        prev_src = previous_release(Path(scratch))
        log = (args.keep or Path(tempfile.gettempdir())) / "wikic-bench-scale.log"
        log.write_bytes(b"")
        mode = "words only" if args.words_only else "search.semantic on"
        print(
            f"scale bench: sizes {', '.join(f'{n:,}' for n in sizes)}, {mode}; output of every command in {log}"
        )
        results = {}
        for n in sizes:
            prev = prev_src if n <= args.previous_up_to else None
            now, then = measure(n, tmp, args.src.resolve(), prev, log, not args.words_only)
            report(n, now, then)
            results[n] = now
            if args.keep is None:
                for p in tmp.glob(f"*-{n}"):
                    shutil.rmtree(p, ignore_errors=True)
        growth(sizes, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
