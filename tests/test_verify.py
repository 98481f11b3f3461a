"""``wikic verify`` through the CLI: recomputes layer-0 hashes and names tampered snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.fetch.layer0 import LAYER0, MANIFEST

runner = CliRunner()


@pytest.fixture
def fetched(tree, api) -> Path:
    data = [{"id": f"r{i}", "title": f"T{i}", "body": f"Body {i}"} for i in range(5)]
    url = api.add("items", data)
    root = tree(
        {"schema/sources.yaml": {"sources": {"items": {"kind": "http", "url": url, "items": "data"}}}}
    )
    result = runner.invoke(app, ["--root", str(root), "fetch"])
    assert result.exit_code == 0, result.output
    data[0]["body"] = "changed"  # a second version of r0, so r0 has a history
    assert runner.invoke(app, ["--root", str(root), "fetch"]).exit_code == 0
    return root


def snapshot_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / LAYER0 / "items").glob("*.json") if p.name != MANIFEST)


def verify(root: Path):
    return runner.invoke(app, ["--root", str(root), "verify"])


def test_verify_passes_on_a_clean_fetch(fetched):
    result = verify(fetched)
    assert result.exit_code == 0, result.output
    assert "6 snapshots verified" in result.output


def test_verify_passes_on_an_empty_kb(tree):
    root = tree({"schema/sources.yaml": {"sources": {}}})
    result = verify(root)
    assert result.exit_code == 0 and "0 snapshots verified" in result.output


def test_hand_edited_record_fails_naming_the_file(fetched):
    path = snapshot_files(fetched)[2]
    body = json.loads(path.read_text("utf-8"))
    body["record"]["title"] = "Edited by hand"
    path.write_text(json.dumps(body, indent=1), "utf-8")
    result = verify(fetched)
    assert result.exit_code == 1
    assert path.relative_to(fetched).as_posix() in result.output
    assert "1 of 6 snapshots failed" in result.output


def test_edited_metadata_fails(fetched):
    path = snapshot_files(fetched)[-1]
    body = json.loads(path.read_text("utf-8"))
    body["url"] = "https://evil.example/"
    path.write_text(json.dumps(body, sort_keys=True, indent=1) + "\n", "utf-8")
    result = verify(fetched)
    assert result.exit_code == 1 and path.name in result.output


def test_edited_old_version_fails(fetched):
    manifest = json.loads((fetched / LAYER0 / "items" / MANIFEST).read_text("utf-8"))
    old = fetched / manifest["records"]["r0"]["history"][0]
    old.write_text(old.read_text("utf-8").replace("Body 0", "Body zero"), "utf-8")
    result = verify(fetched)
    assert result.exit_code == 1 and old.name in result.output


def test_unreadable_snapshot_fails(fetched):
    path = snapshot_files(fetched)[0]
    path.write_text("{ not json", "utf-8")
    result = verify(fetched)
    assert result.exit_code == 1 and path.name in result.output and "not a readable snapshot" in result.output


def test_deleted_snapshot_fails(fetched):
    path = snapshot_files(fetched)[1]
    path.unlink()
    result = verify(fetched)
    assert result.exit_code == 1 and path.name in result.output and "missing" in result.output


def test_renamed_snapshot_fails(fetched):
    path = snapshot_files(fetched)[3]
    path.rename(path.with_name("other@000000000000.json"))
    result = verify(fetched)
    assert result.exit_code == 1 and "other@000000000000.json" in result.output


def test_every_command_here_has_help():
    for command in ("fetch", "transform", "verify"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and len(result.output) > 50
