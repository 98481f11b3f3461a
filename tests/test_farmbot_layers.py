"""The real FarmBot corpus through the loopback API: fetch + transform end to end (never copied here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import changed_files, snapshot_tree
from farmbot_kb import CORPUS, available, serve, write_schema

from wikic.core.config import load_sources
from wikic.fetch.layer0 import LAYER0
from wikic.fetch.run import fetch
from wikic.transform.layer1 import LAYER1, load_layer1
from wikic.transform.run import transform

pytestmark = pytest.mark.skipif(
    not available(),
    reason=f"FarmBot corpus not found at {CORPUS} (it lives in ../shared, outside the repository)",
)


def run(root: Path) -> None:
    config = load_sources(root)
    for report in fetch(root, config, sleep=lambda s: None, environ={"FARMBOT_TOKEN": "t0k3n"}):
        assert report.errors == [], report.errors
    for report in transform(root, config):
        assert report.errors == [], report.errors


@pytest.fixture
def farm(tmp_path, api):
    root = tmp_path / "kb"
    write_schema(root, serve(api, token="t0k3n"), token_env="FARMBOT_TOKEN")
    return root, api.collections["articles"].records, api.collections["crops"].records


def test_farmbot_fetch_transform_end_to_end(farm, api):
    root, articles, crops = farm
    assert (len(articles), len(crops)) == (239, 248)
    run(root)
    files = sorted((root / LAYER1).rglob("*.md"))
    assert len(files) == 487
    assert len(list((root / LAYER1 / "articles").glob("*.md"))) == 239
    assert len(list((root / LAYER1 / "crops").glob("*.md"))) == 248
    texts = {p.relative_to(root).as_posix(): p.read_text("utf-8") for p in files}
    assert not [rel for rel, text in texts.items() if "{%" in text]
    docs = {d.ref: d for d in load_layer1(root)}
    basil = (
        docs["crops:basil"]
        if "crops:basil" in docs
        else next(d for d in docs.values() if d.source == "crops")
    )
    assert basil.title and basil.meta["url"].startswith("http://127.0.0.1")
    article = docs[f"articles:{articles[0]['id']}"]
    assert article.meta["url"] == articles[0]["html_url"] and article.sections

    # a second run changes no file
    before = snapshot_tree(root)
    run(root)
    assert changed_files(before, snapshot_tree(root)) == []

    # one changed record: exactly one new snapshot and one changed layer-1 file
    crops[7]["description"] = "Changed on the server."
    run(root)
    diff = changed_files(before, snapshot_tree(root))
    new_snapshots = [d for d in diff if d.startswith(f"{LAYER0}/crops/") and "@" in d]
    layer1 = [d for d in diff if d.startswith(LAYER1)]
    assert len(new_snapshots) == 1 and new_snapshots[0].startswith(f"{LAYER0}/crops/{crops[7]['slug']}@")
    assert layer1 == [f"{LAYER1}/crops/{crops[7]['slug']}.md"]
    assert set(diff) - set(new_snapshots) - set(layer1) <= {
        f"{LAYER0}/crops/_manifest.json",
        ".wikic/transform.json",
    }
