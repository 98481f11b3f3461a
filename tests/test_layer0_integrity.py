"""Layer-0 integrity: verify catches an edited or deleted manifest, its advice really repairs a
deleted snapshot, and transform never renders a snapshot that is missing, truncated or edited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.core.config import load_sources
from wikic.fetch.layer0 import LAYER0, MANIFEST
from wikic.transform.layer1 import LAYER1
from wikic.transform.run import transform

runner = CliRunner()


@pytest.fixture
def fetched(tree, api) -> Path:
    """Five records fetched twice, r0 changed in between (so it has an older version)."""
    data = [{"id": f"r{i}", "title": f"T{i}", "body": f"Body {i}"} for i in range(5)]
    url = api.add("items", data)
    root = tree(
        {"schema/sources.yaml": {"sources": {"items": {"kind": "http", "url": url, "items": "data"}}}}
    )
    assert fetch(root).exit_code == 0
    data[0]["body"] = "changed"
    assert fetch(root).exit_code == 0
    return root


def verify(root: Path):
    return runner.invoke(app, ["--root", str(root), "verify"])


def manifest_path(root: Path) -> Path:
    return root / LAYER0 / "items" / MANIFEST


def current_snapshot(root: Path, rid: str) -> Path:
    entry = json.loads(manifest_path(root).read_text("utf-8"))["records"][rid]
    return root / entry["snapshot"]


def fetch(root: Path, *args: str):
    return runner.invoke(app, ["--root", str(root), "fetch", *args])


def test_the_advice_for_a_deleted_snapshot_restores_it_byte_for_byte(fetched: Path) -> None:
    path = current_snapshot(fetched, "r3")
    original = path.read_bytes()
    path.unlink()
    result = verify(fetched)
    assert result.exit_code == 1 and "wikic fetch --repair" in result.output
    assert fetch(fetched).exit_code == 0 and not path.exists()  # a plain fetch sees nothing to do
    result = fetch(fetched, "--repair")
    assert result.exit_code == 0 and "restored 1 snapshot" in result.output
    assert path.read_bytes() == original and verify(fetched).exit_code == 0


def test_an_edited_current_snapshot_is_restored_by_repair(fetched: Path) -> None:
    path = current_snapshot(fetched, "r2")
    original = path.read_bytes()
    body = json.loads(original)
    body["record"]["title"] = "Edited"
    path.write_text(json.dumps(body), "utf-8")
    assert verify(fetched).exit_code == 1
    assert fetch(fetched, "--repair").exit_code == 0
    assert path.read_bytes() == original and verify(fetched).exit_code == 0


def test_a_deleted_old_version_cannot_be_refetched_and_verify_says_so(fetched: Path) -> None:
    history = json.loads(manifest_path(fetched).read_text("utf-8"))["records"]["r0"]["history"]
    (fetched / history[0]).unlink()
    result = verify(fetched)
    assert (
        result.exit_code == 1
        and "restore it from git" in result.output
        and "no longer serves" in result.output
    )


def test_a_deleted_manifest_is_caught_and_rebuilt_by_repair(fetched: Path) -> None:
    manifest_path(fetched).unlink()
    result = verify(fetched)
    assert result.exit_code == 1
    assert f"{MANIFEST}: missing, but" in result.output and "wikic fetch --repair" in result.output
    assert fetch(fetched, "--repair").exit_code == 0
    assert verify(fetched).exit_code == 0


def test_an_edited_manifest_is_caught(fetched: Path) -> None:
    data = json.loads(manifest_path(fetched).read_text("utf-8"))
    data["records"]["r1"]["status"] = "removed"  # a record hidden by hand
    manifest_path(fetched).write_text(json.dumps(data, indent=1), "utf-8")
    result = verify(fetched)
    assert result.exit_code == 1 and "edited by hand" in result.output


def test_a_manifest_entry_pointing_elsewhere_is_caught(fetched: Path) -> None:
    data = json.loads(manifest_path(fetched).read_text("utf-8"))
    data["records"]["r4"]["fetched_at"] = "1999-01-01T00:00:00Z"
    data.pop("records_sha256")  # even without its own hash, entries are checked against snapshots
    manifest_path(fetched).write_text(json.dumps(data, indent=1), "utf-8")
    result = verify(fetched)
    assert result.exit_code == 1 and "r4@" in result.output


def test_transform_names_a_missing_truncated_or_edited_snapshot_and_renders_the_rest(fetched: Path) -> None:
    config = load_sources(fetched)
    deleted, truncated, edited = (current_snapshot(fetched, r) for r in ("r2", "r3", "r4"))
    deleted.unlink()
    truncated.write_bytes(truncated.read_bytes()[:40])
    body = json.loads(edited.read_text("utf-8"))
    body["record"]["title"] = "Forged"
    edited.write_text(json.dumps(body), "utf-8")
    result = runner.invoke(app, ["--root", str(fetched), "transform"])
    assert result.exit_code == 1
    out = " ".join(result.output.split())
    assert f"{deleted.relative_to(fetched).as_posix()} is missing" in out
    assert f"{truncated.relative_to(fetched).as_posix()} is unreadable" in out
    assert f"{edited.relative_to(fetched).as_posix()} does not match its hash" in out
    rendered = sorted(p.stem for p in (fetched / LAYER1 / "items").glob("*.md"))
    assert rendered == ["r0", "r1"]
    assert "Forged" not in " ".join(p.read_text("utf-8") for p in (fetched / LAYER1).rglob("*.md"))
    assert fetch(fetched, "--repair").exit_code == 0
    assert all(r.errors == [] for r in transform(fetched, config))
    assert sorted(p.stem for p in (fetched / LAYER1 / "items").glob("*.md")) == ["r0", "r1", "r2", "r3", "r4"]
