"""Shared fixtures: a loopback paged API, a temp-tree KB builder, and a guard against real network use."""

from __future__ import annotations

import fcntl
import gc
import os
import shutil
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from apiserver import ApiServer  # noqa: E402

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOOPBACK:
        raise RuntimeError(f"tests must not touch the network: connect to {address!r}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


REPO = Path(__file__).resolve().parents[1]

# A worker lives for the whole run and keeps what it imported (the SDKs' models, the test modules)
# and what it built: at the default thresholds the collector walks that heap every few tests. Less
# often, for the test processes only (the commands the tests start keep the defaults).
gc.set_threshold(10_000, 20, 100)


def pytest_configure(config: pytest.Config) -> None:
    """The suite's workers already fill the cores: a compile runs in its worker (and in the
    commands a test starts) unless the test asks for processes (``jobs=``), which test_scale
    compares. (Set here, not on import: the benchmarks import this module and compile as a user
    would, one process per core.)"""
    os.environ.setdefault("WIKIC_JOBS", "1")


EXAMPLE_PARTS = ("schema", "layer0_raw", "layer1_sources", "wiki", "examples")


def copy_example(dest: Path) -> Path:
    """A copy of the repository's example KB (schema, layers, compiled wiki, examples); tests never
    change the repository's own."""
    for name in EXAMPLE_PARTS:
        shutil.copytree(REPO / name, dest / name)
    return dest


def _share_query_file(src: str, dst: str) -> None:
    """``copytree``'s copy, except that the query embedding (17 MB, only ever replaced whole) is a
    hard link: the suite copies compiled KBs a hundred times, and the disk deletes slowly."""
    if os.path.basename(src) == "embedding.bin":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def copy_kb(src: Path, dest: Path, symlinks: bool = False) -> Path:
    """A copy of a KB with its compile state, to change without touching the original."""
    return Path(shutil.copytree(src, dest, symlinks=symlinks, copy_function=_share_query_file))


@pytest.fixture
def example_kb(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "example")


def _compile_example(root: Path) -> None:
    from wikic.compile.run import compile_wiki

    copy_example(root)
    assert not compile_wiki(root).failed


@pytest.fixture(scope="session")
def compiled_example_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``example_kb`` compiled, once per run (workers share it). Read-only."""
    return shared_build(tmp_path_factory, "example-compiled-once", _compile_example)


@pytest.fixture
def compiled_example(compiled_example_once: Path, tmp_path: Path) -> Path:
    """``example_kb`` after a compile, with that compile's state (``.wikic``: the search index,
    the query embedding, what ``check`` reuses): for a test whose compile is only its set-up."""
    return copy_kb(compiled_example_once, tmp_path / "example")


@pytest.fixture
def unbuilt_example(example_kb: Path) -> Path:
    """The example KB with an empty wiki, so a compile writes every page."""
    shutil.rmtree(example_kb / "wiki")
    return example_kb


@pytest.fixture
def fake() -> Iterator[Any]:
    """A fake Anthropic Messages API on 127.0.0.1 (see ``fakellm``); a test module may define its
    own ``fake`` (the OpenAI one, say) instead."""
    from fakellm import FakeAnthropic

    server = FakeAnthropic()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def api() -> Iterator[ApiServer]:
    """A real HTTP server on 127.0.0.1 (ephemeral port) serving paged JSON collections."""
    server = ApiServer()
    try:
        yield server
    finally:
        server.close()


Tree = Callable[[dict[str, Any]], Path]


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    """Build a temp KB from ``{relative path: content}``; dict/list contents are written as YAML.

    Calling it again with the same fixture adds files to the same root; pass ``root=`` as a key
    ``"__root__"`` to build a second, separate tree.
    """

    def build(files: dict[str, Any], name: str = "kb") -> Path:
        root = tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            elif isinstance(content, (dict, list)):
                path.write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True), "utf-8")
            else:
                path.write_text(content, "utf-8")
        return root

    return build


def snapshot_tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``root`` (lock files aside) as {relative path: (mtime_ns, bytes)}."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix != ".lock":
            out[path.relative_to(root).as_posix()] = (path.stat().st_mtime_ns, path.read_bytes())
    return out


def changed_files(before: dict[str, tuple[int, bytes]], after: dict[str, tuple[int, bytes]]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@pytest.fixture(scope="session")
def farmbot_compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The FarmBot corpus fetched over loopback, transformed and compiled offline, once per run.

    Read-only: tests that change anything copy it first.
    """
    return shared_build(tmp_path_factory, "farmbot-compiled", _build_farmbot, farmbot=True)


@pytest.fixture(scope="session")
def farmbot_planned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The FarmBot corpus onboarded with no configuration (``init --from``, ``plan --write``) and
    compiled offline, once per run. Read-only."""
    return shared_build(tmp_path_factory, "farmbot-planned", _onboard_farmbot, farmbot=True)


def shared_build(tmp_path_factory: pytest.TempPathFactory, name: str, build, farmbot: bool = False) -> Path:
    """``build(root)`` run once per test run: parallel workers (pytest-xdist) share one build,
    made by whichever asks first. ``farmbot``: it needs the FarmBot corpus (skipped without it)."""
    from farmbot_kb import available

    if farmbot and not available():
        pytest.skip("FarmBot corpus not found in ../shared/corpora/farmbot")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # all workers' parent
    home = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait for the build, then read it
        if not (home / "built").exists():
            shutil.rmtree(home, ignore_errors=True)  # a build a failed worker left half done
            home.mkdir()
            build(home / "kb")
            (home / "built").touch()
    return home / "kb"


def _build_farmbot(root: Path) -> None:
    from farmbot_kb import build_layers

    from wikic.compile.run import compile_wiki

    server = ApiServer()
    try:
        build_layers(root, server)
    finally:
        server.close()
    report = compile_wiki(root, jobs=3)  # a pool, whatever the machine: test_scale compares one process
    assert not report.failed, report.failed
    _keep_report(root, report)


def _onboard_farmbot(root: Path) -> None:
    """``init --from`` both collections, fetch, transform and ``plan --write`` as a user types
    them; then the compile, whose report ``farmbot_planned_report`` reads."""

    from farmbot_kb import serve
    from typer.testing import CliRunner

    from wikic.cli.app import app
    from wikic.compile.run import compile_wiki

    server = ApiServer()
    try:
        urls = serve(server)
        for args in (
            ["init", str(root), "--from", urls["articles"], "--from", urls["crops"]],
            ["--root", str(root), "fetch"],
            ["--root", str(root), "transform"],
            ["--root", str(root), "plan", "--write"],
        ):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, (args, result.output)
    finally:
        server.close()
    _keep_report(root, compile_wiki(root))


REPORTED = ("failed", "dropped", "unplaced", "reasons", "sentences", "verified", "citations", "coverage")


def _keep_report(root: Path, report: Any) -> None:
    """What a shared build's compile reported, beside it, for the ``*_report`` fixtures."""
    import json

    summary = {k: getattr(report, k) for k in REPORTED}
    (root.parent / "report.json").write_text(json.dumps(summary), "utf-8")


def _report(root: Path) -> dict[str, Any]:
    import json

    return json.loads((root.parent / "report.json").read_text("utf-8"))


@pytest.fixture(scope="session")
def farmbot_compiled_report(farmbot_compiled: Path) -> dict[str, Any]:
    """What the compile of ``farmbot_compiled`` reported (``REPORTED``)."""
    return _report(farmbot_compiled)


@pytest.fixture(scope="session")
def farmbot_planned_report(farmbot_planned: Path) -> dict[str, Any]:
    """What the compile of ``farmbot_planned`` reported: failed pages, sentences dropped, the
    sources left unplaced and why (``REPORTED``)."""
    return _report(farmbot_planned)
