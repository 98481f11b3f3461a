"""``wikic transform``: layer-0 snapshots → deterministic layer-1 Markdown with frontmatter."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import frontmatter
import pytest
import yaml
from conftest import changed_files, snapshot_tree

from wikic.core.config import load_sources
from wikic.fetch.layer0 import LAYER0, MANIFEST
from wikic.fetch.run import fetch
from wikic.transform.layer1 import LAYER1, load_layer1
from wikic.transform.run import STATE, TransformReport, dump_frontmatter, transform


def kb(tree, sources: dict[str, Any], files: dict[str, Any] | None = None, name: str = "kb") -> Path:
    return tree({"schema/sources.yaml": {"sources": sources}, **(files or {})}, name)


def fetch_and_transform(root: Path, allow_shrink: bool = False) -> list[TransformReport]:
    config = load_sources(root)
    for r in fetch(root, config, sleep=lambda s: None, environ={}, allow_shrink=allow_shrink):
        assert r.errors == [], r.errors
    return transform(root, config)


def read(root: Path, rel: str) -> frontmatter.Post:
    return frontmatter.loads((root / LAYER1 / rel).read_text("utf-8"))


ARTICLE = {
    "id": 42,
    "title": "  Watering   your\nplants ",
    "body": "Intro line.\n\n## Step one\n\nFill the tank.",
    "html_url": "https://help.example.com/a/42",
    "updated_at": "2024-03-01T10:00:00Z",
    "tags": ["water", "tank"],
    "views": 17,
    "draft": False,
    "nested": {"skip": "me"},
    "source": "shadowed",
}


def article_source(url: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "http", "url": url, "items": "data", "body": "body", "url_field": "html_url", **extra}


def test_frontmatter_fields(tree, api):
    url = api.add("articles", [ARTICLE])
    root = kb(tree, {"articles": article_source(url)})
    [report] = fetch_and_transform(root)
    assert (report.written, report.errors) == (1, [])
    post = read(root, "articles/42.md")
    m = post.metadata
    assert m["title"] == "Watering your plants"
    assert (m["source"], m["id"], m["url"]) == ("articles", "42", "https://help.example.com/a/42")
    assert m["updated_at"] == "2024-03-01T10:00:00Z"
    assert m["tags"] == ["water", "tank"] and m["views"] == 17 and m["draft"] is False
    assert m["record_source"] == "shadowed" and m["record_id"] == 42
    assert "nested" not in m and "body" not in m
    assert m["generated_by"] == "wikic"
    manifest = json.loads((root / LAYER0 / "articles" / MANIFEST).read_text("utf-8"))
    entry = manifest["records"]["42"]
    assert m["layer0"] == {"path": entry["snapshot"], "sha256": entry["sha256"]}
    assert (root / m["layer0"]["path"]).exists()
    assert post.content.startswith("# Watering your plants\n\nIntro line.\n\n## Step one")


def test_url_defaults_to_the_page_url(tree, api):
    url = api.add("items", [{"id": "a", "title": "A", "body": "x"}])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    fetch_and_transform(root)
    assert read(root, "items/a.md").metadata["url"] == url


def test_heading_matching_title_is_not_duplicated(tree, api):
    url = api.add("items", [{"id": "a", "title": "Setup", "body": "# Setup\n\nDo it."}])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    fetch_and_transform(root)
    assert read(root, "items/a.md").content == "# Setup\n\nDo it."


def test_body_from_template(tree, api):
    url = api.add("plants", [{"id": "basil", "name": "Basil", "spread": 30, "companions": ["tomato"]}])
    template = "## Growing {{ name }}\n\nSpread: {{ spread }} cm ({{ id }}, {{ title }}).\n{% for c in companions %}- {{ c }}\n{% endfor %}"
    root = kb(
        tree,
        {"plants": {"kind": "http", "url": url, "items": "data", "title": "name", "template": "plant.md.j2"}},
        {"schema/templates/plant.md.j2": template},
    )
    [report] = fetch_and_transform(root)
    assert report.errors == []
    post = read(root, "plants/basil.md")
    assert post.content == "# Basil\n\n## Growing Basil\n\nSpread: 30 cm (basil, Basil).\n- tomato"
    assert post.metadata["title"] == "Basil" and "name" not in post.metadata


def test_default_rendering(tree, api):
    rec = {
        "id": "x1",
        "title": "Sprout",
        "price": 9.5,
        "colors": ["red", "blue"],
        "waterproof": True,
        "manual": "Line one.\nLine two.",
        "empty": "",
        "meta": {"a": 1},
    }
    url = api.add("items", [rec])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data"}})
    fetch_and_transform(root)
    body = read(root, "items/x1.md").content
    assert body == (
        "# Sprout\n\n## Details\n\n- **Colors:** red, blue\n- **Price:** 9.5\n- **Waterproof:** yes\n\n"
        "## Manual\n\nLine one.\nLine two."
    )


def test_a_line_that_ends_no_sentence_is_its_own_paragraph_in_default_rendering(tree, api):
    """A crop's description opens with its variety's name on a line of its own ('Green Griller
    Zucchini'): read as one paragraph, it ran into the first sentence of the text."""
    wrapped = (
        "An old manual wrapped at a fixed width fills each line to about\n"
        "Sixty characters, whatever the sentence; a capital after a break\n"
        "Is no new paragraph there."
    )
    rec = {
        "id": "z",
        "title": "Zucchini",
        "description": "Green Griller Zucchini\nAs the name suggests, it is made for the grill.",
        "notes": "Leeks need rich soil\nLeeks like aged manure.\n- a list item\n- Another item",
        "manual": wrapped,
    }
    url = api.add("items", [rec])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data"}})
    fetch_and_transform(root)
    body = read(root, "items/z.md").content
    assert "Green Griller Zucchini\n\nAs the name suggests" in body
    assert "Leeks need rich soil\n\nLeeks like aged manure.\n- a list item\n- Another item" in body
    assert wrapped in body  # text wrapped at a width is one paragraph as before


def test_liquid_cleanup_keeps_callout_text(tree, api):
    body = (
        'Before.\n\n{% include youtube.html id="abc" %}\n\n'
        '{%\ninclude callout.html\ntype="warning"\ntitle="Mind the gap"\ncontent="Keep 5% of the tank \\"empty\\".\n\nSecond paragraph."\n%}\n\n'
        '{%\ninclude callout.html\ntype="success"\ntitle="Title only"\n%}\n\n'
        '{% include callout.html content=\'Single quoted content.\' type="info" title="" %}\n\n'
        '{% include gallery.html images="\n![a](a.png)\n" %}\n\nAfter {{ site.name }}.'
    )
    url = api.add("items", [{"id": "a", "title": "Callouts", "body": body}])
    root = kb(
        tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body", "cleanups": ["liquid"]}}
    )
    fetch_and_transform(root)
    text = read(root, "items/a.md").content
    assert "{%" not in text and "%}" not in text and "{{" not in text
    assert (
        "**Mind the gap**" in text and 'Keep 5% of the tank "empty".' in text and "Second paragraph." in text
    )
    assert "**Title only**" in text
    assert "Single quoted content." in text and "****" not in text
    assert "youtube" not in text and "Before." in text and "After" in text


def test_custom_cleanup(tree, api):
    url = api.add("items", [{"id": "a", "title": "T", "body": "keep SECRET-123 keep"}])
    cleanup = [{"pattern": "SECRET-\\d+", "replace": "[redacted]"}]
    root = kb(
        tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body", "cleanups": cleanup}}
    )
    fetch_and_transform(root)
    assert "keep [redacted] keep" in read(root, "items/a.md").content


def test_output_is_byte_identical_across_separate_trees(tree, api):
    data = [dict(ARTICLE, id=i, title=f"Title {i} é 日本") for i in range(20)]
    url = api.add("articles", data, page_size=100)
    roots = [kb(tree, {"articles": article_source(url, cleanups=["liquid"])}, name=n) for n in ("one", "two")]
    for root in roots:
        fetch_and_transform(root)
    a, b = ({p.relative_to(r).as_posix(): p.read_bytes() for p in (r / LAYER1).rglob("*.md")} for r in roots)
    assert len(a) == 20 and a == b


def test_rerun_writes_nothing(tree, api):
    data = [dict(ARTICLE, id=i) for i in range(10)]
    url = api.add("articles", data, etag=True)
    root = kb(tree, {"articles": article_source(url)})
    fetch_and_transform(root)
    before = snapshot_tree(root)
    [report] = fetch_and_transform(root)
    assert (report.written, report.unchanged, report.deleted) == (0, 10, 0)
    assert changed_files(before, snapshot_tree(root)) == []


def test_rerun_after_lost_state_writes_nothing(tree, api):
    url = api.add("articles", [dict(ARTICLE, id=i) for i in range(3)])
    root = kb(tree, {"articles": article_source(url)})
    fetch_and_transform(root)
    (root / STATE).unlink()
    before = snapshot_tree(root)
    [report] = transform(root, load_sources(root))
    assert report.written == 0
    assert changed_files(before, snapshot_tree(root)) == [STATE]


def test_changed_record_rewrites_one_file(tree, api):
    data = [dict(ARTICLE, id=i) for i in range(5)]
    url = api.add("articles", data)
    root = kb(tree, {"articles": article_source(url)})
    fetch_and_transform(root)
    before = snapshot_tree(root)
    data[2]["body"] = "New body."
    [report] = fetch_and_transform(root)
    assert (report.written, report.unchanged) == (1, 4)
    layer1 = [c for c in changed_files(before, snapshot_tree(root)) if c.startswith(LAYER1)]
    assert layer1 == [f"{LAYER1}/articles/2.md"]


def test_edited_generated_file_is_restored(tree, api):
    url = api.add("articles", [dict(ARTICLE, id=1)])
    root = kb(tree, {"articles": article_source(url)})
    fetch_and_transform(root)
    path = root / LAYER1 / "articles/1.md"
    good = path.read_bytes()
    path.write_bytes(good.replace(b"Fill the tank.", b"Edited."))
    [report] = transform(root, load_sources(root))
    assert report.written == 1 and path.read_bytes() == good


def test_removed_record_file_is_deleted(tree, api):
    data = [dict(ARTICLE, id=i) for i in range(3)]
    url = api.add("articles", data)
    root = kb(tree, {"articles": article_source(url)})
    fetch_and_transform(root)
    del data[1]
    [report] = fetch_and_transform(root, allow_shrink=True)  # one of three: past max_shrink
    assert report.deleted == 1
    assert sorted(p.name for p in (root / LAYER1 / "articles").iterdir()) == ["0.md", "2.md"]


def test_hand_maintained_file_is_never_touched(tree, api):
    data = [dict(ARTICLE, id=i) for i in range(2)]
    url = api.add("articles", data)
    hand = "---\ntitle: Mine\n---\n\n# Mine\n\nWritten by a person.\n"
    root = kb(
        tree,
        {"articles": article_source(url)},
        {f"{LAYER1}/articles/1.md": hand, f"{LAYER1}/articles/notes.md": hand, f"{LAYER1}/specs/x.md": hand},
    )
    [report] = fetch_and_transform(root)
    assert report.written == 1
    assert len(report.errors) == 1 and "hand-maintained" in report.errors[0] and "1.md" in report.errors[0]
    for rel in ("articles/1.md", "articles/notes.md", "specs/x.md"):
        assert (root / LAYER1 / rel).read_text("utf-8") == hand
    del data[:]  # every record removed: generated files go, hand-maintained stay
    fetch_and_transform(root, allow_shrink=True)
    assert sorted(p.name for p in (root / LAYER1 / "articles").iterdir()) == ["1.md", "notes.md"]
    assert (root / LAYER1 / "articles/1.md").read_text("utf-8") == hand


def test_missing_title_names_source_record_and_field_others_written(tree, api):
    data = [
        {"id": "ok", "title": "Fine", "body": "x"},
        {"id": "bad", "body": "y"},
        {"id": "ok2", "title": "Also", "body": "z"},
    ]
    url = api.add("items", data)
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    [report] = fetch_and_transform(root)
    assert report.written == 2 and len(report.errors) == 1
    msg = report.errors[0]
    assert "source 'items'" in msg and "record 'bad'" in msg and "'title'" in msg
    assert sorted(p.name for p in (root / LAYER1 / "items").iterdir()) == ["ok.md", "ok2.md"]


def test_template_error_names_record_and_field_others_written(tree, api):
    data = [{"id": "a", "title": "A", "spec": {"w": 1}}, {"id": "b", "title": "B"}]
    url = api.add("items", data)
    root = kb(
        tree,
        {"items": {"kind": "http", "url": url, "items": "data", "template": "t.md.j2"}},
        {"schema/templates/t.md.j2": "Weight: {{ spec.w }} kg\n"},
    )
    [report] = fetch_and_transform(root)
    assert report.written == 1 and len(report.errors) == 1
    msg = report.errors[0]
    assert "source 'items'" in msg and "record 'b'" in msg and "spec" in msg and "t.md.j2" in msg
    assert (root / LAYER1 / "items/a.md").exists()


def test_template_syntax_error_names_template_line(tree, api):
    url = api.add("items", [{"id": "a", "title": "A"}])
    root = kb(
        tree,
        {"items": {"kind": "http", "url": url, "items": "data", "template": "t.md.j2"}},
        {"schema/templates/t.md.j2": "ok\n{% if %}\n"},
    )
    [report] = fetch_and_transform(root)
    assert "t.md.j2 line 2" in report.errors[0]


def test_failed_record_keeps_last_good_rendering(tree, api):
    data = [{"id": "a", "title": "A", "body": "good"}]
    url = api.add("items", data)
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    fetch_and_transform(root)
    good = (root / LAYER1 / "items/a.md").read_bytes()
    data[0] = {"id": "a", "body": "no title now"}
    [report] = fetch_and_transform(root)
    assert len(report.errors) == 1
    assert (root / LAYER1 / "items/a.md").read_bytes() == good
    [again] = transform(root, load_sources(root))
    assert len(again.errors) == 1  # the error is reported again, not hidden by the state file


def test_template_change_rerenders(tree, api):
    url = api.add("items", [{"id": "a", "title": "A"}])
    root = kb(
        tree,
        {"items": {"kind": "http", "url": url, "items": "data", "template": "t.md.j2"}},
        {"schema/templates/t.md.j2": "one\n"},
    )
    fetch_and_transform(root)
    (root / "schema/templates/t.md.j2").write_text("two\n")
    [report] = transform(root, load_sources(root))
    assert report.written == 1 and read(root, "items/a.md").content.endswith("two")


def test_layer1_parses_back(tree, api):
    url = api.add("articles", [ARTICLE])
    root = kb(tree, {"articles": article_source(url)})
    fetch_and_transform(root)
    [doc] = load_layer1(root)
    assert (doc.source, doc.id, doc.key, doc.title) == ("articles", "42", "42", "Watering your plants")
    assert [s.anchor for s in doc.sections] == ["watering-your-plants", "step-one"]


def test_files_source_transform(tree):
    root = kb(
        tree,
        {"hb": {"kind": "files", "path": "hb"}},
        {"hb/guide/setup.md": "---\ntitle: Setup\n---\nPlug it in.\n"},
    )
    fetch_and_transform(root)
    files = [p.relative_to(root / LAYER1).as_posix() for p in (root / LAYER1).rglob("*.md")]
    assert len(files) == 1 and files[0].startswith("hb/guide/setup")
    doc = load_layer1(root)[0]
    assert doc.id == "guide/setup.md" and "Plug it in." in doc.body


def test_files_without_a_title_take_their_first_h1_else_their_file_name(tree):
    root = kb(
        tree,
        {"docs": {"kind": "files", "path": "docs"}},
        {
            "docs/returns.md": "Intro line.\n\n# Returning a garden\n\nYou have 60 days.\n",
            "docs/shipping_and-delivery.md": "Orders ship in 2 days.\n\n## Costs\n\nFree over $50.\n",
            "docs/titled.md": "---\ntitle: Given title\n---\n# Other heading\n\nText.\n",
        },
    )
    fetch_and_transform(root)
    titles = {d.id: d.title for d in load_layer1(root)}
    assert titles == {
        "returns.md": "Returning a garden",
        "shipping_and-delivery.md": "Shipping and delivery",
        "titled.md": "Given title",
    }


def test_http_records_without_a_title_are_still_reported(tree, api):
    url = api.add("items", [{"id": 1, "body": "# Heading\n\ntext"}])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    config = load_sources(root)
    fetch(root, config, sleep=lambda s: None)
    [report] = transform(root, config)
    assert any("missing title field" in e for e in report.errors)


@pytest.mark.parametrize("hostile", ["../../escape", "a/b", ".."])
def test_hostile_ids_stay_inside_layer1_source_folder(tree, api, hostile):
    url = api.add("items", [{"id": hostile, "title": "T", "body": "b"}])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    fetch_and_transform(root)
    [path] = list((root / LAYER1).rglob("*.md"))
    assert path.parent == root / LAYER1 / "items"


AWKWARD = {
    "title": "Quotes \"double\" and 'single': colon # hash",
    "plain": "Watering your plants",
    "unicode": "Grüße 日本語 🌱",
    "looks_like": ["yes", "no", "null", "1e3", "0x10", "2024-01-01", "~", "- dash", "", " padded "],
    "multiline": "line one\nline two\n",
    "control": "tab\there\x85nel\u2028ls",
    "numbers": [0, -1, 1.5, 1e-05, 10**20],
    "flags": [True, False, None],
    "long": "word " * 300,
    "layer0": {"path": "layer0_raw/a/x@0123.json", "sha256": "sha256:" + "0" * 64},
}


@pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML built without libyaml")
def test_frontmatter_bytes_do_not_depend_on_libyaml():
    # Known exception: characters outside the BMP (emoji) are escaped by the pure-Python emitter only,
    # so a machine without libyaml would write such titles differently (still the same YAML value).
    bmp = {**AWKWARD, "unicode": "Grüße 日本語"}
    assert dump_frontmatter(bmp, yaml.CSafeDumper) == dump_frontmatter(bmp, yaml.SafeDumper)
    assert yaml.safe_load(dump_frontmatter(AWKWARD)) == AWKWARD
    assert yaml.safe_load(dump_frontmatter(AWKWARD, yaml.SafeDumper)) == AWKWARD


def test_generated_files_follow_the_umask(tree, api):
    url = api.add("items", [{"id": "a", "title": "A", "body": "b"}])
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data", "body": "body"}})
    fetch_and_transform(root)
    old = os.umask(0)
    os.umask(old)
    for path in [root / LAYER1 / "items/a.md", *(root / LAYER0 / "items").iterdir()]:
        assert path.stat().st_mode & 0o777 == 0o666 & ~old, path


def test_a_new_default_rendering_renders_each_record_again(tree, api, monkeypatch):
    """A KB transformed before a change to the default rendering kept the old files: its snapshots
    were unchanged, so nothing was rendered again (the zucchini's sub-title stayed run in)."""
    import wikic.transform.run as run

    url = api.add(
        "items", [{"id": "z", "title": "Zucchini", "notes": "Green Griller\nAs named, it grills well."}]
    )
    root = kb(tree, {"items": {"kind": "http", "url": url, "items": "data"}})
    fetch_and_transform(root)
    monkeypatch.setattr(run, "paragraphs", lambda text: text.upper())
    fetch_and_transform(root)
    assert "AS NAMED" not in read(root, "items/z.md").content  # the same rendering version: kept
    monkeypatch.setattr(run, "RENDERING", run.RENDERING + 1)
    fetch_and_transform(root)
    assert "AS NAMED, IT GRILLS WELL." in read(root, "items/z.md").content
