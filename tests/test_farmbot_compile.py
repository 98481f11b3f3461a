"""The FarmBot corpus (487 sources served on loopback) compiled with the offline librarian."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apiserver import ApiServer
from conftest import changed_files, copy_kb, snapshot_tree
from farmbot_kb import available, serve, write_schema
from wikiasserts import assert_every_fact_cited, assert_reachable_from_index, front_matter, page_types, pages

from wikic.compile.run import compile_wiki
from wikic.core.config import load_sources
from wikic.fetch.run import fetch
from wikic.transform.run import transform

pytestmark = pytest.mark.skipif(
    not available(), reason="FarmBot corpus not found in ../shared/corpora/farmbot"
)


@pytest.fixture
def farm(farmbot_compiled: Path, tmp_path: Path) -> Path:
    """A copy of the shared build: the corpus fetched over loopback, transformed and compiled."""
    return copy_kb(farmbot_compiled, tmp_path / "farm")


def test_farmbot_compiles_into_a_cited_navigable_wiki(
    farm: Path, farmbot_compiled_report: dict, api: ApiServer
) -> None:
    first = farmbot_compiled_report  # what the first compile of ``farm`` reported
    assert first["failed"] == [] and first["dropped"] == 0
    assert first["verified"] == first["sentences"] > 1000
    assert assert_every_fact_cited(farm) == first["citations"]
    assert page_types(farm) == {
        "topic",
        "device",
        "guide",
        "comparison",
        "glossary",
        "entity",
        "directory",
    }
    assert_reachable_from_index(farm)
    devices = {p for p in pages(farm) if p.startswith("wiki/devices/")}
    assert {"wiki/devices/farmbot-express.md", "wiki/devices/farmbot-genesis.md"} <= devices
    express = (farm / "wiki/devices/farmbot-express.md").read_text("utf-8")
    assert "| Max Plant Height | 0.5m [articles/4635009]" in express
    # Every layer-1 source is used by a page or reported unplaced (image-only pages quote nothing).
    used = set()
    for text in pages(farm).values():
        if text.startswith("---"):
            used |= set(front_matter(text).get("sources") or [])
    all_sources = {p.relative_to(farm).as_posix() for p in (farm / "layer1_sources").rglob("*.md")}
    assert len(all_sources) == 487
    assert all_sources == used | set(first["unplaced"])

    # A no-change recompile writes nothing and makes no LLM call.
    before = snapshot_tree(farm)
    again = compile_wiki(farm)
    assert not again.wrote_anything and again.usage.calls == 0
    assert changed_files(before, snapshot_tree(farm)) == []

    # Changing one crop on the API rewrites only the pages that cite it (plus the index line). The
    # corpus is served again here: the build's server is gone.
    write_schema(farm, serve(api))
    crops = api.collections["crops"].records
    carrot = next(c for c in crops if c["slug"] == "carrot")
    carrot["row_spacing"] = 22
    config = load_sources(farm)
    fetch(farm, config, sleep=lambda s: None)
    transform(farm, config)
    citing = {
        p for p, t in pages(farm).items() if "layer1_sources/crops/carrot.md" in t and p != "wiki/index.md"
    }
    before = snapshot_tree(farm)
    report = compile_wiki(farm)
    changed = {p for p in changed_files(before, snapshot_tree(farm)) if p.startswith("wiki/")}
    assert citing and set(report.changed) == citing
    assert changed - {"wiki/index.md", "wiki/log.md"} == citing
    assert json.dumps(report.added) == "[]" and report.removed == []
    # Coverage read from the pages left as they were equals coverage from fresh drafts.
    assert report.coverage["sentences"] == first["coverage"]["sentences"] and report.coverage["missing"] == []
    # The log says which fact changed, not only which pages.
    assert re.search(
        r"^- fact crops/carrot: Row spacing \S+ → 22$", (farm / "wiki/log.md").read_text("utf-8"), re.M
    )
    assert report.fact_changes == [
        c for c in report.fact_changes if c.startswith("crops/carrot: Row spacing")
    ]
