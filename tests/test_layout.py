"""The folder list is the pipeline: one package per stage, and no stage imports a later one."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import wikic

SRC = Path(wikic.__file__).parent
STAGES = ["core", "fetch", "transform", "compile", "check", "lookup", "onboard", "cli"]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("wikic",) + (parts[:-1] if parts[-1] == "__init__" else parts))
        out[name] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every wikic module ``name`` imports, at the top or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {t for t in found if t.startswith("wikic")}


def _stage(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_the_top_level_holds_only_the_stage_packages():
    rooms = sorted(p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert rooms == sorted(STAGES)
    loose = sorted(p.name for p in SRC.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]


def test_no_stage_imports_a_later_one():
    modules = _modules()
    backward = []
    for name, path in modules.items():
        stage = _stage(name)
        for target in _imports(name, path):
            other = _stage(target)
            if stage and other and STAGES.index(other) > STAGES.index(stage):
                backward.append(f"{name} imports {target}")
    assert backward == []


def test_no_import_cycle_between_modules():
    modules = _modules()
    graph = {
        name: {t for t in _imports(name, path) if t in modules and t != name}
        for name, path in modules.items()
    }
    # a package's __init__ is imported with each of its modules; count only real module edges
    graph = {n: {t for t in ts if modules[t].name != "__init__.py"} for n, ts in graph.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert cycles == []


def test_importing_a_stage_loads_no_later_stage():
    """Each package and module imported alone, in a fresh interpreter: nothing of a later stage
    is loaded at import time."""
    names = [
        m.name for m in pkgutil.walk_packages(wikic.__path__, "wikic.") if not m.name.endswith("__main__")
    ]
    names.sort(key=lambda n: STAGES.index(n.split(".")[1]))  # earlier stages first: nothing masks them
    code = (
        "import importlib, sys\n"
        f"STAGES = {STAGES!r}\n"
        "bad = []\n"
        f"for name in {names!r}:\n"
        "    before = set(sys.modules)\n"
        "    importlib.import_module(name)\n"
        "    stage = name.split('.')[1]\n"
        "    for m in sorted(set(sys.modules) - before):\n"
        "        parts = m.split('.')\n"
        "        if parts[0] == 'wikic' and len(parts) > 1 and parts[1] in STAGES and stage in STAGES:\n"
        "            if STAGES.index(parts[1]) > STAGES.index(stage):\n"
        "                bad.append(name + ' loads ' + m)\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for name in names:  # and each imports cleanly on its own
        importlib.import_module(name)
