"""A newcomer's path, from the README alone: the own-data commands work as pasted in a fresh
shell, ``make demo`` builds the example KB for real, a copied KB is not stale."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
needs_venv = pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="runs the commands of a virtualenv")


def fresh_shell_env() -> dict[str, str]:
    """What a new terminal has: no virtualenv active, no wikic on the path."""
    return {"HOME": os.environ.get("HOME", "/tmp"), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def scratch_checkout(tmp_path: Path, *parts: str) -> Path:
    """A folder with what the README's commands need from a clone, and this run's virtualenv as
    ``.venv`` (older than pyproject.toml would make ``make venv`` install it again)."""
    root = tmp_path / "clone"
    root.mkdir()
    for name in ("Makefile", "pyproject.toml", *parts):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / name)
    (root / ".venv").symlink_to(VENV)
    os.utime(root / "pyproject.toml", (0, 0))
    return root


@needs_venv
def test_the_readme_own_data_section_works_as_pasted_in_a_fresh_shell(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    section = readme[readme.index("## From your own data") :]
    script = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    assert script.startswith("make venv && . .venv/bin/activate")
    root = scratch_checkout(tmp_path, "examples")
    proc = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=root,
        env=fresh_shell_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "0 error(s)" in proc.stdout and (root / "kb" / "wiki" / "index.md").is_file()


@needs_venv
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_compiles_for_real_in_a_scratch_copy_and_explains_its_figures(tmp_path: Path) -> None:
    root = scratch_checkout(tmp_path, "schema", "examples")
    shutil.copytree(REPO / "layer1_sources" / "specs", root / "layer1_sources" / "specs")
    proc = subprocess.run(
        ["make", "demo"], cwd=root, env=fresh_shell_env(), capture_output=True, text=True, timeout=600
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert re.search(r"pages: \+\d{2,} ~0 -0 =0", out)  # every page written, none merely kept
    assert re.search(r"sentences: (\d+) cited \1 verified", out) and "0 error(s)" in out
    assert "304: pages the API answered 'not modified'" in out and "s: seconds" in out
    assert "+added ~changed -removed =unchanged" in out
    assert not (root / "wiki").exists() and (root / ".wikic" / "demo" / "wiki" / "index.md").is_file()


def test_a_copied_kb_is_not_stale(example_kb: Path, tmp_path: Path) -> None:
    """``cp -r`` of a compiled KB (its ``.wikic`` state too), checked in a new process."""
    subprocess.run(
        [sys.executable, "-m", "wikic", "--root", str(example_kb), "compile"], check=True, capture_output=True
    )
    copy = shutil.copytree(example_kb, tmp_path / "copy", symlinks=True)
    proc = subprocess.run(
        [sys.executable, "-m", "wikic", "--root", str(copy), "check", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert not [e for e in json.loads(proc.stdout)["errors"] if e["rule"] == "stale-page"]


PLAN_FINGERPRINTS = """
import json, sys
from pathlib import Path
from wikic.compile.pageplan import plan
from wikic.compile.run import fingerprint, navigation
from wikic.compile.schema import load_wiki_schema
from wikic.compile.librarian.offline import OfflineLibrarian
from wikic.transform.layer1 import load_layer1
root = Path(sys.argv[1])
docs = load_layer1(root)
schema = load_wiki_schema(root)
the_plan = plan(docs, schema)
by_path = {d.path: d for d in docs}
print(json.dumps({s.path: fingerprint(s, by_path, schema, OfflineLibrarian, navigation(the_plan, s))
                  for s in the_plan.pages}))
"""


def test_the_plan_is_the_same_whatever_the_hash_seed(farmbot_compiled: Path) -> None:
    """Why a copied KB was stale: each process orders sets by its own hash seed, and a float sum
    over a set ranked 'see also' ties differently, so check's fingerprints differed from those
    compile wrote. Every page's fingerprint is now the same under any seed: the ones the shared
    build's compile recorded (under this run's random seed) and those planned under two others."""
    record = json.loads((farmbot_compiled / ".wikic/compile.json").read_text("utf-8"))
    seen = [{path: fp for path, (fp, _) in record["plan"]["pages"].items()}]
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-c", PLAN_FINGERPRINTS, str(farmbot_compiled)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        seen.append(json.loads(proc.stdout))
    assert all(s == seen[0] for s in seen[1:]), [p for p in seen[0] if any(s[p] != seen[0][p] for s in seen)]
