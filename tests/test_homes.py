"""One home per source: every layer-1 source is shown whole on one page, its fields as a cited fact
list, with defaults that place everything and a coverage report that says so."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from wikic.check.run import check
from wikic.cli.app import app
from wikic.compile.pageplan import plan
from wikic.compile.run import compile_wiki
from wikic.compile.schema import load_wiki_schema
from wikic.core.config import load_sources
from wikic.fetch.run import fetch
from wikic.onboard.scaffold import init_kb
from wikic.transform.layer1 import load_layer1
from wikic.transform.run import transform

runner = CliRunner()

STEPS = "\n".join(f"{n}. Step number {n} of the assembly, done carefully." for n in range(1, 13))
GUIDE = f"""---
title: Assembling the frame
category: assembly
---

# Assembling the frame

Read every step before you start. The frame takes about two hours to assemble.

## Steps

{STEPS}

## Parts

- Four aluminium extrusions, each one metre long
- Sixteen M5 screws with matching nuts

| Part | Count |
|---|---|
| Extrusion | 4 |
| Screw | 16 |

```
G0 X10 Y20
```

> Keep the screws loose until the frame is square.

### Checking the frame is square

Measure both diagonals; they should match within two millimetres.
"""


def _kb(tmp_path: Path, files: dict[str, str | dict], wiki: dict | None = None) -> Path:
    root = tmp_path / "kb"
    init_kb(root)
    (root / "schema" / "sources.yaml").write_text("sources: {}\n", "utf-8")
    if wiki is not None:
        (root / "schema" / "wiki.yaml").write_text(yaml.safe_dump(wiki, sort_keys=False), "utf-8")
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict):
            meta, body = dict(content), content.get("body", "")
            meta.pop("body", None)
            content = "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n" + body
        path.write_text(content, "utf-8")
    return root


def _page_of(root: Path, doc_path: str) -> str:
    the_plan = plan(load_layer1(root), load_wiki_schema(root))
    return (root / the_plan.homes[doc_path]).read_text("utf-8")


def test_a_source_is_rendered_whole_in_source_order_on_its_home(tmp_path: Path) -> None:
    root = _kb(tmp_path, {"layer1_sources/docs/frame.md": GUIDE})
    report = compile_wiki(root)
    assert report.unplaced == []
    page = _page_of(root, "layer1_sources/docs/frame.md")
    steps = [line for line in page.split("\n") if "Step number" in line]
    assert len(steps) == 12  # a section with 12 steps keeps all of them, numbered, in order
    assert [s.split(".", 1)[0] for s in steps] == [str(n) for n in range(1, 13)]
    assert all("layer1_sources/docs/frame.md#steps" in s for s in steps)
    for text in (
        "Read every step before you start.",
        "The frame takes about two hours to assemble.",
        "- Four aluminium extrusions, each one metre long",
        "| Screw | 16 [docs/frame]",
        "G0 X10 Y20",
        "Keep the screws loose until the frame is square.",
        "### Checking the frame is square",
    ):
        assert text in page, text
    order = [page.index(x) for x in ("Read every step", "Step number 1 ", "Four aluminium", "Measure both")]
    assert order == sorted(order)
    assert report.coverage["sentences"] == 1.0 and report.coverage["fields"] == 1.0


def test_fields_become_a_cited_fact_list_and_unknown_values_stay_out(tmp_path: Path) -> None:
    part = {
        "title": "Gantry plate",
        "weight_kg": 1.5,
        "height_cm": 20,
        "colors": ["black", "silver"],
        "spread": 0,  # zero means unknown: never shown as a fact
        "notes": "",
        "slug": "gantry-plate",  # bookkeeping
        "image": "/img/gantry.png",
    }  # a source with only fields
    blurb = {
        "title": "Seed trough",
        "description": "A seed trough holds loose seeds for the needle. It sits on the gantry.",
    }  # a source with only a description
    root = _kb(tmp_path, {"layer1_sources/parts/gantry.md": part, "layer1_sources/parts/trough.md": blurb})
    report = compile_wiki(root)
    assert report.unplaced == []
    page = _page_of(root, "layer1_sources/parts/gantry.md")
    for fact in ("| Weight (kg) | 1.5 ", "| Height (cm) | 20 ", "| Colors | black, silver "):
        line = next(x for x in page.split("\n") if x.startswith(fact))
        assert "(../../layer1_sources/parts/gantry.md" in line  # cited
    for hidden in ("Spread", "Notes", "Slug", "gantry.png"):
        assert hidden not in page.split("---", 2)[2]
    trough = _page_of(root, "layer1_sources/parts/trough.md")
    assert "A seed trough holds loose seeds for the needle." in trough
    assert check(root).errors == []


def test_check_compares_a_published_fact_with_its_frontmatter(tmp_path: Path) -> None:
    part = {"title": "Gantry plate", "weight_kg": 1.5, "height_cm": 20, "length_cm": 30, "width_cm": 8}
    root = _kb(tmp_path, {"layer1_sources/parts/gantry.md": part})
    compile_wiki(root)
    home = root / plan(load_layer1(root), load_wiki_schema(root)).homes["layer1_sources/parts/gantry.md"]
    # 20 occurs in the document, so only the comparison with the field itself catches this edit
    home.write_text(home.read_text("utf-8").replace("| Length (cm) | 30 ", "| Length (cm) | 20 "), "utf-8")
    errors = [f for f in check(root).errors if f.rule == "unsupported-citation"]
    assert len(errors) == 1 and "length_cm: '30'" in errors[0].message


def test_fact_fields_to_show_or_hide_are_configurable(tmp_path: Path) -> None:
    part = {"title": "Gantry plate", "weight_kg": 1.5, "height_cm": 20, "internal_code": "GX-7"}
    wiki = yaml.safe_load(
        (Path(__file__).parents[1] / "src/wikic/onboard/kb_template/schema/wiki.yaml").read_text()
    )
    wiki["facts"] = {"hide": ["internal_code"]}
    root = _kb(tmp_path, {"layer1_sources/parts/gantry.md": part}, wiki)
    compile_wiki(root)
    page = _page_of(root, "layer1_sources/parts/gantry.md")
    assert "GX-7" not in page and "| Weight (kg) | 1.5 " in page


def test_defaults_place_every_source_of_a_fresh_kb(tmp_path: Path) -> None:
    docs = {
        f"layer1_sources/{src}/{n}.md": {
            "title": f"{src} {n}",
            "kind": kind,
            "body": f"Text {n} about {kind} things.",
        }
        for src, kinds in (("faq", ["setup", "billing"]), ("notes", ["a", "b"]))
        for n, kind in enumerate(kinds * 3)
    }
    docs["layer1_sources/notes/empty.md"] = {"title": "Empty", "body": "![only a picture](x.png)\n"}
    root = _kb(tmp_path, docs)  # the wiki.yaml that `wikic init` writes: no topic rule at all
    report = compile_wiki(root)
    assert report.unplaced == ["layer1_sources/notes/empty.md"]
    assert report.reasons["layer1_sources/notes/empty.md"] == "no text and no fields to show"
    assert report.coverage["sentences"] == 1.0
    found = [f for f in check(root).warnings if f.rule == "uncovered-source"]
    assert [f.path for f in found] == ["layer1_sources/notes/empty.md"] and "no text" in found[0].message
    titles = {
        yaml.safe_load(p.read_text("utf-8").split("---")[1])["title"] for p in root.glob("wiki/topics/*.md")
    }
    assert {"Setup", "Billing"} <= titles  # grouped by the field that best splits the source


def test_a_folder_of_plain_markdown_compiles_with_no_schema_edits(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    assert runner.invoke(app, ["init", str(root)]).exit_code == 0
    docs = tmp_path / "handbook"
    docs.mkdir()
    (docs / "returns.md").write_text("# Returning a garden\n\nYou have 60 days to return a garden.\n")
    (docs / "shipping.md").write_text(
        "Orders ship within two days of payment.\n\n## Costs\n\nShipping is free.\n"
    )
    (root / "schema" / "sources.yaml").write_text(
        "sources:\n  handbook:\n    kind: files\n    path: ../handbook\n    glob: '*.md'\n", "utf-8"
    )
    for command in ("fetch", "transform", "compile", "check"):
        result = runner.invoke(app, ["--root", str(root), command])
        assert result.exit_code == 0, (command, result.output)
    text = "\n".join(p.read_text("utf-8") for p in root.glob("wiki/topics/*.md"))
    for sentence in (
        "You have 60 days to return a garden.",
        "Orders ship within two days",
        "Shipping is free.",
    ):
        assert sentence in text
    assert "## Returning a garden" in text and "## Shipping" in text


def test_template_tags_comments_scripts_and_wiki_links_are_cleaned_by_default(tmp_path: Path, api) -> None:
    body = (
        'Before. {% include callout.html type="info" title="Mind the gap" content="Leave 2 cm." %}\n\n'
        "<!-- internal note -->\nAttach the [[Seed Injector]] now. {{ page.title }}\n\n"
        "<style>.box { color: red; }</style>\n"
    )
    url = api.add("articles", [{"id": 1, "title": "Tools", "body": body}])
    root = _kb(tmp_path, {})
    source = {"kind": "http", "url": url, "items": "data", "body": "body"}
    (root / "schema" / "sources.yaml").write_text(yaml.safe_dump({"sources": {"articles": source}}), "utf-8")
    config = load_sources(root)
    fetch(root, config, sleep=lambda s: None)
    transform(root, config)
    layer1 = (root / "layer1_sources/articles/1.md").read_text("utf-8")
    assert "**Mind the gap** Leave 2 cm." in layer1 and "page.title" in layer1
    for raw in ("{%", "{{", "internal note", "color: red"):
        assert raw not in layer1
    compile_wiki(root)
    page = _page_of(root, "layer1_sources/articles/1.md")
    assert "Attach the Seed Injector now." in page and "[[" not in page

    source["cleanups"] = []  # turned off: the text is kept as the API sent it
    (root / "schema" / "sources.yaml").write_text(yaml.safe_dump({"sources": {"articles": source}}), "utf-8")
    transform(root, load_sources(root))
    assert "{% include callout.html" in (root / "layer1_sources/articles/1.md").read_text("utf-8")


def test_compile_and_check_report_coverage_per_source(tmp_path: Path) -> None:
    root = _kb(tmp_path, {"layer1_sources/docs/frame.md": GUIDE})
    result = runner.invoke(app, ["--root", str(root), "compile"])
    assert result.exit_code == 0
    assert "coverage: 100.0% of " in result.output and "0 unplaced source(s)" in result.output
    again = runner.invoke(app, ["--root", str(root), "compile"])  # a no-change run still says it
    assert "coverage: 100.0% of " in again.output
    data = json.loads(runner.invoke(app, ["--root", str(root), "check", "--json"]).output)
    assert data["coverage"]["sentences"] == 1.0
    assert data["coverage"]["per_source"]["docs"]["sentences"] >= 12
    # a sentence removed from its home is a coverage gap, named in the report
    home = next((root / "wiki").rglob("frame.md"), None) or next(
        p for p in (root / "wiki/topics").glob("*.md") if "Assembling the frame" in p.read_text("utf-8")
    )
    home.write_text("\n".join(x for x in home.read_text("utf-8").split("\n") if "two hours" not in x))
    data = json.loads(runner.invoke(app, ["--root", str(root), "check", "--json"]).output)
    assert data["coverage"]["sentences"] < 1.0
    assert any("two hours" in m["text"] for m in data["coverage"]["missing"])
