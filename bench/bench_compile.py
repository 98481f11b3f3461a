"""Compile figures: the FarmBot KB (cold, no-op, one changed crop) and 10,000 generated records.

Each figure is printed next to a baseline measured in the same run: a cold compile is the
baseline of a no-change recompile, and the previous release (git tag ``v0.1.0``, run from a
`git archive` of it on a copy of the same layers) is the baseline of a cold compile. Coverage is
printed with them. Nothing here asserts wall-clock limits.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import farmbot_kb  # noqa: E402
from apiserver import ApiServer  # noqa: E402
from conftest import changed_files, snapshot_tree  # noqa: E402

from wikic.compile.run import compile_wiki  # noqa: E402
from wikic.core.config import load_sources  # noqa: E402
from wikic.fetch.run import fetch  # noqa: E402
from wikic.transform.run import transform  # noqa: E402

WORDS = (
    "water tank pump light schedule basil mint seed pod sprout root leaf harvest prune wifi app reset "
    "alert firmware clean algae vinegar filter nutrient dose height stem flower fruit tomato pepper "
    "lettuce kale chard herb germination dome humidity temperature warranty return order shipping"
).split()


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


PREVIOUS = "v0.1.0"
PREVIOUS_COMMIT = "8aa321a"  # the same release, for clones that carry no tags


def previous_release(tmp: Path) -> Path | None:
    """The previous release's source tree, from git; None when this is no git checkout with it."""
    out = tmp / "previous"
    for rev in (PREVIOUS, PREVIOUS_COMMIT):
        archive = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", rev, "src"], capture_output=True, check=False
        )
        if not archive.returncode:
            break
    else:
        return None
    out.mkdir()
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "src"


def cold_cpu(root: Path, src: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of a cold offline compile of ``root`` in a fresh process, with the
    wikic found under ``src`` (this checkout when None)."""
    env = dict(os.environ, PYTHONPATH=str(src or HERE.parent / "src"))
    code = (
        "import sys\nfrom pathlib import Path\n"
        "try:\n    from wikic.compile.run import compile_wiki\n"
        "except ImportError:  # the previous release, before the stage packages\n"
        "    from wikic.compile import compile_wiki\n"
        "compile_wiki(Path(sys.argv[1]))"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(root)], env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def layers_copy(root: Path, dest: Path) -> Path:
    """A KB with ``root``'s schema and layers and no wiki, for a cold compile."""
    for name in ("schema", "layer0_raw", "layer1_sources"):
        shutil.copytree(root / name, dest / name)
    return dest


def coverage_note(report) -> str:
    c = report.coverage
    return f"coverage {c['sentences']:.1%} of sentences, {c['fields']:.1%} of fields" if c else ""


def farmbot(tmp: Path) -> list[tuple[str, str, str]]:
    root = tmp / "farmbot"
    api = ApiServer()
    try:
        farmbot_kb.build_layers(root, api)
        cold, report = timed(lambda: compile_wiki(root))
        before = snapshot_tree(root)
        noop, _ = timed(lambda: compile_wiki(root))
        written = [p for p in changed_files(before, snapshot_tree(root))]
        carrot = next(c for c in api.collections["crops"].records if c["slug"] == "carrot")
        carrot["row_spacing"] = 22
        config = load_sources(root)
        fetch(root, config, sleep=lambda s: None)
        transform(root, config)
        before = snapshot_tree(root)
        change, changed = timed(lambda: compile_wiki(root))
        touched = [p for p in changed_files(before, snapshot_tree(root)) if p.startswith("wiki/")]
    finally:
        api.close()
    counts = (
        f"{len(report.added)} pages, {report.sentences} sentences, {report.verified} verified, "
        f"{report.repaired} repaired, {report.dropped} dropped, {report.citations} citations, "
        f"{len(report.unplaced)} unplaced; {coverage_note(report)}"
    )
    return [
        ("FarmBot cold compile (487 sources)", f"{cold:.2f} s", counts),
        (
            "FarmBot no-change recompile",
            f"{noop:.3f} s, {len(written)} files written",
            f"baseline: cold {cold:.2f} s",
        ),
        (
            "FarmBot after one crop changed",
            f"{change:.2f} s, pages rewritten: {len(changed.changed)}",
            f"wiki files changed: {', '.join(touched)}",
        ),
    ]


def generated(tmp: Path, n: int = 10_000) -> list[tuple[str, str, str]]:
    rng = random.Random(7)
    root = tmp / "generated"
    pages = [
        {
            "id": f"r{i:05d}",
            "title": f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} note {i}",
            "group": f"g{i % 50:02d}",
            "body": "\n\n".join(
                f"## {rng.choice(WORDS).capitalize()} {j}\n\n"
                + " ".join(
                    f"The {rng.choice(WORDS)} {rng.choice(WORDS)} needs {rng.randint(1, 99)} "
                    f"{rng.choice(['ml', 'days', 'hours', 'cm'])} of {rng.choice(WORDS)}."
                    for _ in range(3)
                )
                for j in range(3)
            ),
        }
        for i in range(n)
    ]
    export = root / "export"
    export.mkdir(parents=True)
    size = 500
    for k in range(0, n, size):
        nxt = f"page-{k // size + 2}.json" if k + size < n else None
        (export / f"page-{k // size + 1}.json").write_text(
            json.dumps({"data": pages[k : k + size], "next": nxt})
        )
    (root / "schema").mkdir()
    (root / "schema/sources.yaml").write_text(
        "sources:\n  notes:\n    kind: http\n    url: file:export/page-1.json\n    items: data\n"
        "    pagination: {style: next_field}\n    body: body\n"
    )
    (root / "schema/wiki.yaml").write_text(
        "topics:\n  - source: notes\n    group_by: group\n    max_sources: 25\n"
        "guides:\n  - {id: pumps, title: Pumps, purpose: Pump care., query: pump water tank}\n"
    )
    (root / "schema/librarian.md").write_text((HERE.parent / "schema/librarian.md").read_text())
    config = load_sources(root)
    fetch(root, config)
    transform(root, config)
    rows = []
    previous = previous_release(tmp)
    if previous is not None:  # fresh processes, this version and the previous one, in turn
        now = cold_cpu(layers_copy(root, tmp / "cold-now"))
        then = cold_cpu(layers_copy(root, tmp / "cold-then"), previous)
        rows.append(
            (
                f"{n:,} records: cold compile, fresh process",
                f"{now[0]:.2f} s wall, {now[1]:.2f} s CPU",
                f"{PREVIOUS} on the same layers: {then[0]:.2f} s wall, {then[1]:.2f} s CPU; "
                f"ratio {now[0] / then[0]:.2f}x wall (target ≤ 1x), {now[1] / then[1]:.2f}x CPU",
            )
        )
    else:
        rows.append((f"{n:,} records: previous release", "not measured", f"no git tag {PREVIOUS} here"))
    cold, report = timed(lambda: compile_wiki(root))
    before = snapshot_tree(root)
    noop, _ = timed(lambda: compile_wiki(root))
    written = changed_files(before, snapshot_tree(root))
    return rows + [
        (
            f"{n:,} records: cold compile",
            f"{cold:.2f} s",
            f"{len(report.added)} pages, {report.sentences} sentences; {coverage_note(report)}",
        ),
        (
            f"{n:,} records: no-change recompile",
            f"{noop:.3f} s, {len(written)} files written",
            f"target ≤ 0.3 s, nothing written: {'ok' if noop <= 0.3 and not written else 'MISSED'}; "
            f"baseline: cold {cold:.2f} s",
        ),
    ]


def main() -> None:
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if farmbot_kb.available():
            rows += farmbot(Path(tmp))
        else:
            print("FarmBot corpus not found in ../shared; skipping its figures")
        rows += generated(Path(tmp))
    width = max(len(r[0]) for r in rows)
    for name, figure, note in rows:
        print(f"{name:<{width}}  {figure:<34}  {note}")


if __name__ == "__main__":
    main()
