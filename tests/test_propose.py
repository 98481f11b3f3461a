"""``wikic plan``: wiki.yaml proposed from layer 1, reviewed as a diff, written kind by kind."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from conftest import REPO, Tree
from fakellm import Brain, FakeAnthropic, FakeOpenAI
from farmbot_kb import FIXTURE
from typer.testing import CliRunner

from wikic.check.run import check
from wikic.cli.app import app
from wikic.compile.librarian.extract import has_quotable
from wikic.compile.run import compile_wiki
from wikic.onboard.plan import KINDS, plan_schema, propose
from wikic.onboard.scaffold import replace_block, top_level_blocks
from wikic.transform.layer1 import load_layer1

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def schema_of(root: Path) -> dict:
    return yaml.safe_load((root / "schema" / "wiki.yaml").read_text("utf-8"))


def by_id(items: list[dict]) -> dict[str, dict]:
    return {i["id"]: i for i in items}


@pytest.fixture
def farm(farmbot_planned: Path) -> Path:
    """The FarmBot API onboarded with init --from, fetched, transformed, planned with --write and
    compiled (shared by the run; read-only)."""
    return farmbot_planned


def test_farmbot_plan_finds_the_models_comparisons_and_guides(farm: Path) -> None:
    schema = schema_of(farm)
    devices = by_id(schema["devices"])
    models = {"farmbot-express", "farmbot-express-xl", "farmbot-genesis", "farmbot-genesis-xl"}
    assert len(models & set(devices)) >= 3
    assert "Express XL" in devices["farmbot-express"]["exclude"]  # the near-name is kept apart
    # named in two documents' tables and nowhere else: a page of a line, which 'Genesis' says
    assert "farmbot-genesis-xl" not in devices and "exclude" not in devices["farmbot-genesis"]
    (table,) = [c for c in schema["comparisons"] if c["of"] == "devices"]
    assert table["purpose"].startswith(
        "The FarmBot Express, FarmBot Express XL and FarmBot Genesis side by side: "
    )
    assert "Express (XL)" in devices["farmbot-express-xl"]["match"]  # an alias the tables use
    assert "exclude" not in devices["farmbot-express-xl"]
    comparisons = schema["comparisons"]
    (models_table,) = [c for c in comparisons if c["of"] == "devices"]
    assert {"Max Plant Height", "Width", "Length", "Area"} <= set(models_table["fields"])
    crops = [c for c in comparisons if c["of"] == "crops"]
    assert crops and all({"spread", "row_spacing"} <= set(c["fields"]) for c in crops)
    # 'Full Shade' crops have no value for those fields: compile would write no page, so plan
    # does not propose one
    assert {c["where"]["sun_requirements"] for c in crops} == {"Partial Sun"}
    assert len(schema["guides"]) >= 3
    assert {"troubleshooting-guide", "maintenance-and-care", "getting-started-guide"} <= {
        g["id"] for g in schema["guides"]
    }
    # a guide is never named after a bare common word ('Getting started: Axis')
    assert all(len(g["title"].split(": ", 1)[-1].split()) > 1 for g in schema["guides"] if ": " in g["title"])
    assert {(t["source"], t.get("group_by")) for t in schema["topics"]} == {
        ("articles", "section"),
        ("crops", "sun_requirements"),
    }
    text = (farm / "schema" / "wiki.yaml").read_text("utf-8")
    assert "# a row of measured values in" in text and "# listed beside Express in a table" in text


def test_farmbot_compile_places_every_source_with_something_to_quote(
    farm: Path, farmbot_planned_report: dict
) -> None:
    kb, report = farm, SimpleNamespace(**farmbot_planned_report)
    assert report.failed == [] and report.dropped == 0
    docs = {d.path: d for d in load_layer1(kb)}
    assert len(docs) == 487
    # only records with no text and no field worth showing are left (crops whose fields are all 0)
    assert report.unplaced and all(
        report.reasons[p] == "no text and no fields to show" for p in report.unplaced
    )
    assert all(not has_quotable(docs[p]) or docs[p].source == "crops" for p in report.unplaced)
    schema = schema_of(kb)  # plan proposes nothing compile leaves out
    for kind, folder in (("devices", "devices"), ("guides", "guides"), ("comparisons", "comparisons")):
        missing = [i["id"] for i in schema[kind] if not (kb / "wiki" / folder / f"{i['id']}.md").exists()]
        assert not missing, (kind, missing)
    express = (kb / "wiki" / "comparisons" / "farmbot-models-compared.md").read_text("utf-8")
    assert re.search(r"\| \[?FarmBot Express\]?(?:\([^)]*\))? \|.*\| 0\.5m \[articles/4635009\]", express)
    assert check(kb).errors == []


def test_the_hand_written_farmbot_schema_is_what_the_proposal_is_measured_against(farm: Path) -> None:
    """Every device, comparison row set and topic field of the hand-written fixture is proposed."""
    fixture = yaml.safe_load((FIXTURE / "wiki.yaml").read_text("utf-8"))
    proposed = schema_of(farm)
    assert {d["id"] for d in fixture["devices"]} <= {d["id"] for d in proposed["devices"]}
    hand = {str(c["where"]) for c in fixture["comparisons"] if c["of"] == "crops"}
    found = {str(c["where"]) for c in proposed["comparisons"] if c["of"] == "crops"}
    # the fixture compares full-shade crops by their sowing method; the numbers plan compares
    # crops by are all 0 for them, so compile would write no page and plan proposes none
    assert found <= hand and hand - found == {str({"sun_requirements": "Full Shade"})}
    assert {t["group_by"] for t in fixture["topics"]} == {t["group_by"] for t in proposed["topics"]}


PROPOSAL = """
import json, sys
from pathlib import Path
from wikic.onboard.plan import propose
from wikic.transform.layer1 import load_layer1
proposal = propose(load_layer1(Path(sys.argv[1])))
print(json.dumps({k: [[i.data, i.seen, i.todo] for i in v] for k, v in proposal.items.items()}))
"""


def test_the_proposal_is_the_same_whatever_the_hash_seed(farm: Path) -> None:
    """The maintenance guide's evidence named 'replace' under one hash seed and 'maintain' under
    another: words tied in count ranked in a set's order. A proposal is the same under any seed."""
    seen = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", PROPOSAL, str(farm)], env=env, capture_output=True, text=True, check=True
        )
        seen.append(json.loads(proc.stdout))
    assert seen[0] == seen[1], [k for k in seen[0] if seen[0][k] != seen[1][k]]


def test_the_heuristics_name_nothing_from_the_corpora() -> None:
    code = (REPO / "src" / "wikic" / "onboard" / "plan.py").read_text("utf-8").lower()
    for word in ("farmbot", "express", "genesis", "crop", "verdant", "sprout", "grove", "canopy", "plant"):
        assert not re.search(rf"\b{word}", code), word


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "example"
    for name in ("schema", "layer0_raw", "layer1_sources", "examples"):
        shutil.copytree(REPO / name, root / name)
    return root


def test_the_example_schema_is_regenerated_to_an_equivalent_one(example: Path) -> None:
    before = schema_of(example)
    report = plan_schema(example, write=True)
    assert report.written and report.diff.startswith("--- schema/wiki.yaml\n+++ schema/wiki.yaml (proposed)")
    after = schema_of(example)
    strip = [{k: d[k] for k in ("id", "title", "sources", "match")} for d in before["devices"]]
    assert sorted(strip, key=lambda d: d["id"]) == after["devices"]
    (planters,) = [c for c in after["comparisons"] if c["of"] == "devices"]
    # every measured field the hand-written comparison has; its app features (a list of words,
    # which the planner does not compare) are a person's addition
    assert set(planters["fields"]) == set(before["comparisons"][0]["fields"]) - {"app_features"}
    hand = {c["where"]["category"] for c in before["comparisons"] if c["of"] == "plants"}
    assert hand <= {c["where"]["category"] for c in after["comparisons"] if c["of"] == "plants"}
    # what a table of records compares reads as a phrase ('… of the herb plants', not '… of the
    # plants whose category is herb'), its fields joined by 'and'
    herbs = next(c for c in after["comparisons"] if c.get("where") == {"category": "herb"})
    assert herbs["purpose"].endswith(" of the herb plants.") and " and " in herbs["purpose"], herbs
    topics = {t["source"]: t for t in after["topics"]}
    assert topics["faq"]["group_by"] == "category" and topics["plants"]["group_by"] == "category"
    assert topics["plants"]["mentions"] == 2 and "specs" not in topics  # spec pages live on device pages
    assert after["versions"] == []  # every chain is already stated by supersedes
    assert (after["librarian"], after["index"], after["page_types"]) == (
        before["librarian"],
        before["index"],
        before["page_types"],
    )
    assert (
        by_id(after["guides"])["troubleshooting-guide"]["title"] == "Troubleshooting guide"
    )  # not the topic's
    report = compile_wiki(example)
    assert report.failed == [] and report.dropped == 0 and report.unplaced == []
    findings = check(example).findings
    assert [f for f in findings if f.severity == "error" or f.rule == "duplicate-page"] == []
    again = plan_schema(example)
    assert again.diff == "" and not again.written  # deterministic: nothing left to change


def test_write_replaces_only_the_kinds_named(example: Path) -> None:
    original = (example / "schema" / "wiki.yaml").read_text("utf-8")
    result = invoke("--root", str(example), "plan", "devices", "versions", "--write")
    assert result.exit_code == 0, result.output
    assert "written to schema/wiki.yaml" in result.output
    new = (example / "schema" / "wiki.yaml").read_text("utf-8")
    old_blocks, new_blocks = dict(top_level_blocks(original)), dict(top_level_blocks(new))
    for key, block in old_blocks.items():
        if key not in ("devices", "versions"):
            assert new_blocks[key] == block, key  # comments and all, untouched
    assert "versions" in new_blocks and "a spec page (specs:grove-6)" in new_blocks["devices"]
    shown = invoke("--root", str(example), "plan", "guides")
    assert shown.exit_code == 0 and "not written" in shown.output
    assert (example / "schema" / "wiki.yaml").read_text("utf-8") == new
    assert shown.output.count("\n@@") >= 1 and "+  - id: troubleshooting" in shown.output


def test_blocks_keep_their_comments_and_new_kinds_are_appended() -> None:
    text = "# head\na: 1\n\n# about b\nb:\n  - x\n# about c\nc: {k: v}\n"
    assert top_level_blocks(text)[0] == ("a", "# head\na: 1\n\n")  # a comment above a key is its own
    assert [k for k, _ in top_level_blocks(text)] == ["a", "b", "c"]
    assert replace_block(text, "b", "b: []\n") == "# head\na: 1\n\nb: []\n# about c\nc: {k: v}\n"
    assert replace_block(text, "d", "d: 2") == text + "d: 2\n"


def test_plan_errors_exit_2(tmp_path: Path, tree: Tree) -> None:
    root = tree({"schema/wiki.yaml": "topics: []\n", "schema/librarian.md": "rules\n"})
    result = invoke("--root", str(root), "plan")
    assert (
        result.exit_code == 2
        and "no documents; run 'wikic fetch' and 'wikic transform' first" in result.output
    )
    (root / "layer1_sources" / "notes").mkdir(parents=True)
    (root / "layer1_sources" / "notes" / "a.md").write_text("---\ntitle: A\n---\n\nText here.\n", "utf-8")
    result = invoke("--root", str(root), "plan", "gadgets")
    assert result.exit_code == 2 and "unknown kind(s) gadgets" in result.output


def spec_table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| Model | Range | Weight |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def test_devices_come_from_tables_of_measured_values_in_any_corpus(tree: Tree) -> None:
    """A made-up drone maker: two models with a 'Pro' variant, compared in tables of two documents."""
    table = spec_table(
        [("Kestrel 2", "8 km", "0.9 kg"), ("Kestrel 2 Pro", "15 km", "1.1 kg"), ("Osprey", "20 km", "2 kg")]
    )
    files = {
        "layer1_sources/docs/compare.md": f"---\ntitle: Which drone?\n---\n\n## Models\n\n{table}\n",
        "layer1_sources/docs/specs.md": f"---\ntitle: Specifications\n---\n\n## Table\n\n{table}\n",
    }
    for i in range(4):
        files[f"layer1_sources/docs/note-{i}.md"] = (
            f"---\ntitle: Flight note {i}\n---\n\n## Notes\n\nThe Kestrel 2 and the Kestrel 2 Pro fold flat. "
            f"The Osprey carries a camera. Skyline Kestrel 2 owners fly it daily.\n"
        )
    root = tree(files)
    proposal = propose(load_layer1(root))
    devices = {i.data["id"]: i.data for i in proposal.items["devices"]}
    assert set(devices) == {"kestrel-2", "kestrel-2-pro", "osprey"}
    assert devices["kestrel-2"]["exclude"] == ["Kestrel 2 Pro"] and "exclude" not in devices["osprey"]
    (table_item,) = [i.data for i in proposal.items["comparisons"] if i.data["of"] == "devices"]
    assert table_item["fields"] == ["Range", "Weight"]
    assert "Model" not in devices and not proposal.todos


def test_a_variant_is_proposed_right_after_its_model(tree: Tree) -> None:
    """Models proposed by evidence came out 'Express, Genesis, Express XL, Genesis XL', and the
    comparison split each pair; a variant follows the model its name contains."""
    rows = [
        ("Kestrel 2", "8 km", "0.9 kg"),
        ("Osprey", "20 km", "2 kg"),
        ("Kestrel 2 Pro", "15 km", "1.1 kg"),
    ]
    files = {  # the variant is in two tables of three: the least evidenced
        f"layer1_sources/docs/{name}.md": f"---\ntitle: {name}\n---\n\n## Models\n\n{spec_table(shown)}\n"
        for name, shown in (("compare", rows), ("specs", rows), ("range", rows[:2]))
    }
    for i in range(4):
        files[f"layer1_sources/docs/note-{i}.md"] = (
            f"---\ntitle: Flight note {i}\n---\n\n## Notes\n\nThe Osprey carries a camera. The Kestrel 2 is light.\n"
        )
    # named in its two tables only, the variant would be a page of a line: its model's page says it
    ids = [i.data["id"] for i in propose(load_layer1(tree(files))).items["devices"]]
    assert ids == ["kestrel-2", "osprey"]
    files["layer1_sources/docs/note-0.md"] += "The Kestrel 2 Pro folds flat.\n"
    ids = [i.data["id"] for i in propose(load_layer1(tree(files))).items["devices"]]
    assert ids == ["kestrel-2", "kestrel-2-pro", "osprey"]


class PlanBrain(Brain):
    """Answers a plan refinement by renaming every item it is shown; pages as the base brain does."""

    def answer(self, user: str, fault: str = "") -> dict[str, Any]:
        if not user.startswith("# Plan to refine"):
            return super().answer(user, fault)
        items = []
        for kind, ident in re.findall(r"^## (\w+) (\S+)$", user, re.M):
            item = {
                "kind": kind,
                "id": ident,
                "title": f"Refined {ident}",
                "purpose": f"Why {ident} matters.",
            }
            if kind == "guides":
                item["query"] = f"refined query for {ident}"
            if kind == "topics":
                item["group_titles"] = {"herb": "Kitchen herbs", "no-such-group": "Ignored"}
            items.append(item)
        items.append({"kind": "devices", "id": "invented-device", "title": "Not proposed"})
        return {"items": items}


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_an_llm_refines_names_purposes_and_queries_only(
    example: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    fake = FakeAnthropic() if backend == "anthropic" else FakeOpenAI()
    fake.brain = PlanBrain()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
    try:
        offline = plan_schema(example).proposal
        result = invoke("--root", str(example), "plan", "--librarian", backend, "--write")
    finally:
        fake.close()
    assert result.exit_code == 0, result.output
    assert "names refined by" in result.output
    after = schema_of(example)
    guides = by_id(after["guides"])
    assert guides["troubleshooting-guide"]["title"] == "Refined troubleshooting-guide"
    assert guides["troubleshooting-guide"]["query"] == "refined query for troubleshooting-guide"
    # the structure is the offline one: same ids, match names, fields and rows
    for kind in ("devices", "comparisons", "guides"):
        assert [i["id"] for i in after[kind]] == [i.data["id"] for i in offline.items[kind]]
    assert [d["match"] for d in after["devices"]] == [i.data["match"] for i in offline.items["devices"]]
    assert after["devices"][0]["title"].startswith("Refined ")
    plants = next(t for t in after["topics"] if t["source"] == "plants")
    assert plants["titles"] == {"herb": "Kitchen herbs"}
    assert "title and purpose by" in (example / "schema" / "wiki.yaml").read_text("utf-8")
    assert "invented-device" not in str(after)
    (request,) = [r for r in fake.requests if "refine_plan" in str(r["body"])]
    assert "# Plan to refine" in str(request["body"])


def test_a_failing_model_leaves_the_offline_proposal(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeAnthropic()
    fake.script(*["500"] * 10)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    try:
        result = invoke("--root", str(example), "plan", "guides", "--librarian", "anthropic")
        fake.faults.clear()
        fake.brain = Brain()  # a page-writing answer is no refinement
        shapeless = invoke("--root", str(example), "plan", "guides", "--librarian", "anthropic")
    finally:
        fake.close()
    assert result.exit_code == 0 and "could not refine the proposal" in result.output
    assert "+  - id: troubleshooting" in result.output and "Refined" not in result.output
    assert shapeless.exit_code == 0 and "no 'items' list" in shapeless.output


def test_every_kind_is_rendered_even_when_empty(tree: Tree) -> None:
    root = tree(
        {
            "layer1_sources/notes/a.md": "---\ntitle: A note\n---\n\nA sentence of prose here.\n",
            "schema/librarian.md": "rules\n",
        }
    )
    report = plan_schema(root)
    for kind in KINDS:
        assert f"\n{kind}:" in report.proposed
    assert "devices: []   # nothing found to propose" in report.proposed
    assert "+topics:" in report.diff


def test_a_hyphenated_subject_word_is_named_as_its_headings_write_it(tree: Tree) -> None:
    """Words split at hyphens and in link text ('Z-Axis', '[Wi-Fi](…)') name a guide's subject as
    written, instead of failing the whole proposal."""
    files = {}
    for i in range(5):
        files[f"layer1_sources/docs/z-{i}.md"] = (
            f"---\ntitle: Motor note {i}\n---\n\n## Z-Axis setup\n\nMount the motor bracket first.\n\n"
            f"## Setting up [Wi-Fi](https://example.com/wireless-{i})\n\nJoin the network from the app.\n"
        )
    for i in range(5):
        files[f"layer1_sources/docs/pump-{i}.md"] = (
            f"---\ntitle: Pump note {i}\n---\n\n## Pump setup\n\nPrime the pump before use.\n"
        )
    for i in range(20):
        files[f"layer1_sources/docs/other-{i}.md"] = (
            f"---\ntitle: Planting note {i}\n---\n\n## Seeds\n\nSow the seeds in spring.\n"
        )
    proposal = propose(load_layer1(tree(files)))
    titles = [i.data["title"] for i in proposal.items["guides"]]
    assert "Getting started: Z-Axis" in titles, titles
    assert not any("wireless" in t.lower() or "https" in t.lower() for t in titles), titles


def test_a_guide_query_takes_a_word_from_each_document_not_from_one_with_many_headings() -> None:
    """One article's headings about resets ('Soft reset', 'Option 1: hard reset', 'Hard reset
    steps' …) no longer fill a troubleshooting guide's query: each matched document gives its own
    best word, so the guide draws on several of them."""
    from collections import Counter

    from wikic.onboard.plan import _query

    texts = [
        "Soft reset Option 1: hard reset Option 2: hard reset Hard reset steps Isolated reset mode",
        "Connectivity diagnosis codes",
        "Troubleshooting water pressure",
        "Camera troubleshooting calibration",
    ]
    df = Counter({"reset": 3, "hard": 2, "codes": 1, "pressure": 1, "camera": 2, "soft": 1, "isolated": 1})
    words = _query(["troubleshooting"], texts, df, 100, n=5).split()
    assert words[0] == "troubleshooting"
    for text in texts[1:]:  # a word of each of the other documents
        assert set(text.lower().split()) & set(words), (text, words)
    assert len({"soft", "hard", "isolated", "option", "steps", "mode"} & set(words)) <= 1, words


def test_a_document_filed_under_an_intent_s_word_is_material_for_its_guide() -> None:
    """An FAQ filed under 'troubleshooting' whose title is a question without that word ('Why
    are the leaves pale?') is counted for the troubleshooting guide, and its title lends the
    query words."""
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc
    from wikic.onboard.plan import Corpus, propose_guides

    def doc(n: int, title: str, category: str) -> SourceDoc:
        body = f"# {title}\n\nSome text about it.\n"
        meta = {"category": category}
        return SourceDoc(
            "faq",
            str(n),
            str(n),
            f"layer1_sources/faq/{n}.md",
            title,
            meta,
            body,
            "",
            tuple(split_sections(body)),
        )

    docs = [
        doc(1, "Why are the leaves pale?", "troubleshooting"),
        doc(2, "Why is the pump noisy?", "troubleshooting"),
    ]
    docs += [doc(3, "Why does the light blink?", "troubleshooting"), doc(4, "How big is the tank?", "specs")]
    (guide, *_) = [i for i in propose_guides(Corpus(docs, {})) if "troubleshooting" in i.data["query"]]
    assert guide.seen.startswith("3 documents with troubleshooting words")
    assert {"pale", "pump", "blink"} & set(guide.data["query"].split())


def test_a_guide_titled_like_a_page_the_planner_makes_is_renamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subject guide 'Troubleshooting: Handling' beside the topic the planner splits by subject,
    'Troubleshooting: handling': two pages with one title (check's duplicate-page, right after
    plan --write and compile). The guide becomes '… guide', its id with it."""
    from wikic.compile.pageplan import PageSpec, Plan
    from wikic.onboard import plan as onboard
    from wikic.onboard.plan import Item, Proposal, drop_unplanned

    def spec(kind: str, slug: str, title: str, n: int) -> PageSpec:
        return PageSpec(kind, slug, title, f"wiki/{kind}s/{slug}.md", tuple(f"l/{i}.md" for i in range(n)))

    pages = [
        spec("topic", "troubleshooting-handling", "Troubleshooting: handling", 9),
        spec("guide", "troubleshooting-handling", "Troubleshooting: Handling", 3),
        spec("guide", "troubleshooting-gantry", "Troubleshooting: Gantry", 3),
    ]
    monkeypatch.setattr(onboard, "plan", lambda docs, schema, jobs=1: Plan(pages, [], {}))
    guides = [
        Item({"id": "troubleshooting-handling", "title": "Troubleshooting: Handling"}, "4 documents"),
        Item({"id": "troubleshooting-gantry", "title": "Troubleshooting: Gantry"}, "4 documents"),
    ]
    proposal = Proposal({"guides": guides})
    assert drop_unplanned(proposal, [], None) == []
    assert [(g.data["id"], g.data["title"]) for g in proposal.items["guides"]] == [
        ("troubleshooting-handling-guide", "Troubleshooting: Handling guide"),
        ("troubleshooting-gantry", "Troubleshooting: Gantry"),
    ]
    assert proposal.items["guides"][0].seen.endswith("'guide' added to the title, which another page has")
