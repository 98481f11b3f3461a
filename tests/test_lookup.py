"""ask, eval and tune-index on the example KB, on FarmBot (the retrieval quality gates), and with a
scripted model for the LLM paths."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.compile.librarian.model import MockModel
from wikic.lookup.ask import REFUSAL, Lookup
from wikic.lookup.eval import load_questions, run_eval
from wikic.lookup.fuse import files_first
from wikic.lookup.tune import tune_index

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import farmbot_kb  # noqa: E402


@pytest.fixture
def example(example_kb: Path) -> Path:
    return example_kb


@pytest.fixture
def farmbot(farmbot_compiled: Path) -> Path:
    return farmbot_compiled  # read-only: the retrieval gates only query it


def test_ask_answers_with_citations_or_refuses(example):
    with_lookup = Lookup(example)
    try:
        answer = with_lookup.answer("How long does a full water tank last?")
        assert not answer.refused and answer.sentences
        for s in answer.sentences:
            assert s.cites and all(c.startswith("layer1_sources/") and "#" in c for c in s.cites)
        assert any(s.page.startswith("wiki/") for s in answer.sentences)
        refused = with_lookup.answer("Does the Sprout 3 work with Apple HomeKit?")
        assert refused.refused and refused.text == REFUSAL and not refused.sentences
    finally:
        with_lookup.close()


def test_ask_states_what_holds_now_not_a_superseded_version(example):
    lookup = Lookup(example)
    try:
        assert "layer1_sources/faq/return-policy-2025.md" in lookup.superseded
        found = lookup.retrieve("What is the return policy?", "search", k=8)
        answer = lookup.answer("What is the return policy?", "search")
    finally:
        lookup.close()
    assert any(r.startswith("layer1_sources/faq/return-policy-2025.md") for r in found.refs)  # retrieved
    cites = [c for s in answer.sentences for c in s.cites]
    assert cites and not any(c.split("#")[0] in lookup.superseded for c in cites)  # but not stated
    assert any(c.startswith("layer1_sources/faq/return-policy-2026.md") for c in cites)


def test_ask_states_nothing_a_newer_source_changed_and_where_each_line_was_read(compiled_example):
    """'you have 45 days from delivery' (a 2025 post that the 2026 policy changed: the wiki shows it
    in a Superseded note) is no line of the answer; each line says the heading that shows its
    section, not a 'Filed under' table citing every entry of the page."""
    lookup = Lookup(compiled_example)
    try:
        changed = " ".join(lookup.outdated.get("layer1_sources/blog/returns-45-days.md", ()))
        assert "45 days from delivery" in changed
        answer = lookup.answer("What is the return policy?")
        alert = lookup.answer("When does the low-water alert trigger?")
    finally:
        lookup.close()
    # 'Until now, the low-water alert triggered once, when the tank reached 20%.' tells the past
    assert "15%" in alert.sentences[0].text or "15%" in alert.sentences[1].text
    assert not any(s.text.startswith("Until now") for s in alert.sentences)
    said = " ".join(s.text for s in answer.sentences)
    assert "within 60 days of delivery" in said and "45 days from delivery" not in said
    # the 2025 post's 'Starting today, we are changing our return policy.' announced the old change;
    # nor does an answer say who wrote a post ('Author: Hannah Lindqvist')
    assert "Starting today" not in said and "Author:" not in said
    assert "From today, gardens delivered on or after 15 January 2026" in said  # the current post's
    pages = [s.page for s in answer.sentences]
    assert pages and all(p.startswith("wiki/") and not p.endswith("#filed-under") for p in pages), pages


def test_a_section_is_read_in_the_heading_that_shows_it() -> None:
    from wikic.lookup.fuse import read_in
    from wikic.lookup.search import Hit

    ref = "layer1_sources/faq/a.md#what-is-it"
    table = Hit("page", "wiki/topics/t.md", "filed-under", "Filed under", "T", 1.0, "", (ref,))
    shown = Hit("page", "wiki/topics/t.md", "what-is-it-2026-01-15", "What is it?", "T", 0.5, "", (ref,))
    other = "layer1_sources/faq/b.md#x"
    assert read_in([table, shown]) == {ref: shown.target}
    best = Hit("page", "wiki/p.md", "x-y", "X", "P", 1.0, "", (other,))
    assert read_in([best, table])[other] == "wiki/p.md#x-y"  # no heading shows it: the best citing it


def _source(title: str, body: str, meta: str = "") -> str:
    return f"---\ntitle: {title}\n{meta}---\n\n# {title}\n\n{body}\n"


def test_search_links_entities_the_wiki_has_entries_for(tree):
    """A question naming a crop by an alias only its source's metadata knows ('Karotte') reaches the
    sections the wiki files under that crop, even raw BM25 now that aliases are searched with their
    source; and a name as common as 'pump' is not treated as an entity."""
    files = {
        "layer1_sources/crops/carrot.md": _source(
            "Carrot",
            "## Sowing\n\nThin the seedlings to 3cm apart once they are 8cm high.",
            "common_names: [Karotte]\n",
        ),
        "wiki/topics/crops.md": (
            "---\ntitle: Crops\ntype: topic\n---\n\n# Crops\n\n## Carrot\n\n### Sowing\n\n"
            "Thin the seedlings to 3cm apart once they are 8cm high. "
            "[crops/carrot](../../layer1_sources/crops/carrot.md#sowing)\n\n## Pump\n\n"
            "Pull the pump out to clean it. [faq/pump-0](../../layer1_sources/faq/pump-0.md#cleaning)\n"
        ),
    }
    for i in range(6):
        files[f"layer1_sources/faq/pump-{i}.md"] = _source(
            f"Pump {i}", f"## Cleaning\n\nPull out the pump {i} and leave a gap so the extra water drains."
        )
    for i in range(30):  # enough documents for a name in one of them to be rare
        files[f"layer1_sources/faq/light-{i}.md"] = _source(
            f"Light {i}", f"## Schedule\n\nLight {i} runs 16 hours."
        )
    root = tree(files)
    question = "When do I pull out the extra Karotte sprouts, and what gap should I leave?"
    lookup = Lookup(root)
    try:
        raw = lookup.retrieve(question, "raw", k=10).refs
        found = lookup.retrieve(question, "search", k=3).refs
        linked = lookup.entity_refs("pull the pump out of the karotte bed", {})
    finally:
        lookup.close()
    assert "layer1_sources/crops/carrot.md#sowing" in raw  # the alias is indexed with its source
    assert any(r.startswith("layer1_sources/crops/carrot.md#") for r in found)
    assert linked == ["layer1_sources/crops/carrot.md#sowing"]


def test_a_list_of_links_to_other_articles_is_never_retrieved_as_an_answer(tree):
    """A help center's 'What's next?' names the article that answers ('Log limits') but answers
    nothing: it was the second hit for 'a cap on log messages' and pushed the answer out of the
    first five. Every mode leaves it out."""
    files = {
        "layer1_sources/articles/logs.md": _source(
            "Jobs and Logs",
            "## Log limits\n\nFarmBot OS sends at most 10 log messages per minute to the app.",
        ),
        "layer1_sources/articles/photos.md": _source(
            "Photos",
            "## Taking photos\n\nOpen the camera panel.\n\n## What's next?\n\n"
            " * [Log limits and log messages](logs.md)\n * [Read log messages](logs.md)\n",
        ),
    }
    for i in range(8):
        files[f"layer1_sources/articles/other-{i}.md"] = _source(f"Other {i}", f"## Part {i}\n\nText {i}.")
    root = tree(files)
    lookup = Lookup(root)
    try:
        found = {m: lookup.retrieve("Is there a cap on log messages?", m, k=5) for m in ("raw", "search")}
    finally:
        lookup.close()
    for mode, got in found.items():
        assert got.refs[0] == "layer1_sources/articles/logs.md#log-limits", mode
        assert not any(r.endswith("#whats-next") for r in got.ranked), mode


def _entry_and_topic_kb(tree) -> Path:
    """A KB with a page per crop (type ``entity``), one a mushroom whose name holds 'cap' and whose
    text mentions logs, and topic pages on the app, one of them on the limits of its log messages:
    words such as 'app', 'log' and 'message' are common in it, 'cap' is rare."""
    files: dict[str, str] = {}
    index = ["# Wiki index", ""]

    def page(rel: str, title: str, kind: str, keywords: str, sections: dict[str, tuple[str, str]]) -> None:
        body = "".join(
            f"## {heading}\n\n{text} [{ref}](../../layer1_sources/{ref}.md#{heading.lower().replace(' ', '-')})\n\n"
            for heading, (text, ref) in sections.items()
        )
        files[f"wiki/{rel}"] = f"---\ntitle: {title}\ntype: {kind}\n---\n\n# {title}\n\n{body}"
        summary = f"{title}: " + ", ".join(h.lower() for h in sections)
        index.append(f"- [{title}]({rel}) — {summary}. *Keywords:* {keywords}")

    def source(ref: str, title: str, sections: dict[str, str], meta: str = "") -> None:
        files[f"layer1_sources/{ref}.md"] = _source(
            title, "\n\n".join(f"## {h}\n\n{t}" for h, t in sections.items()), meta
        )

    mushroom = "Cinnamon Caps are small orange mushrooms with flaky caps that grow on inoculated logs."
    source(
        "crops/cinnamon-cap",
        "Cinnamon Cap Mushroom",
        {"Description": mushroom},
        "common_names: [brick top]\n",
    )
    page(
        "entries/cinnamon-cap.md",
        "Cinnamon Cap Mushroom",
        "entity",
        "cinnamon cap mushroom, brick top",
        {"Description": (mushroom, "crops/cinnamon-cap")},
    )
    for crop in ("Basil", "Carrot", "Spinach", "Tomato", "Kale", "Leek", "Beet", "Chard"):
        text = f"{crop} grows in full sun and is sown a few centimetres deep in spring."
        ref = f"crops/{crop.lower()}"
        source(ref, crop, {"Description": text})
        page(f"entries/{crop.lower()}.md", crop, "entity", crop.lower(), {"Description": (text, ref)})
    limits = (
        "The bot sends at most 250 log messages an hour to the app; the app drops the messages past"
        " that number until the next hour begins."
    )
    jobs = {"Jobs": "The jobs panel lists what the bot is doing now.", "Log limits": limits}
    source("articles/jobs", "Jobs and logs", jobs)
    page(
        "topics/jobs.md",
        "Jobs and logs",
        "topic",
        "jobs, limits",
        {h: (t, "articles/jobs") for h, t in jobs.items()},
    )
    for panel in ("Farm events", "Sequences", "Photos", "Sensors", "Tools", "Settings"):
        text = f"The {panel.lower()} panel of the app shows the log messages the bot sends about its {panel.lower()}."
        ref = f"articles/{panel.lower().replace(' ', '-')}"
        source(ref, panel, {"Panel": text})
        page(
            f"topics/{ref.split('/')[1]}.md",
            panel,
            "topic",
            f"{panel.lower()}, app, log messages",
            {"Panel": (text, ref)},
        )
    files["wiki/index.md"] = "\n".join(index) + "\n"
    return tree(files)


def test_an_entry_page_is_opened_when_the_question_names_it_not_on_a_shared_word(tree):
    """A reference entry's own page is short: one word of its name that the question uses in
    another sense ('cap' of Cinnamon Cap Mushroom, for a cap on log messages) ranks it first by
    its index line and its text, though it is about something else. The index leads to it when
    the question names the entry (its title or an alias), and the answer comes from the page
    that is about the question."""
    root = _entry_and_topic_kb(tree)
    entry = "wiki/entries/cinnamon-cap.md"
    lookup = Lookup(root)
    try:
        cap = lookup.retrieve(
            "Is there some cap on how many log messages my bot can send to the app?", "index"
        )
        named = lookup.retrieve("What do brick top mushrooms grow on?", "index")
        entities = lookup.index.entities()
    finally:
        lookup.close()
    assert entry not in cap.pages[:1], cap.pages
    assert cap.ranked[0] == "layer1_sources/articles/jobs.md#log-limits", cap.ranked
    assert entry in named.pages[:1], named.pages  # named by an alias: opened first
    # the page is one entry, known by its title and its source's aliases, not by its headings
    assert entities.named_in("brick top or cinnamon cap mushrooms") == [
        ("cinnamon", "cap", "mushroom"),
        ("brick", "top"),
    ]
    assert entities.refs[("brick", "top")] == {"layer1_sources/crops/cinnamon-cap.md#description": None}
    assert not entities.named_in("its description")
    assert named.ranked[0].startswith("layer1_sources/crops/cinnamon-cap.md#"), named.ranked


def test_hybrid_lookup_lists_distinct_files_first(example):
    assert files_first(["a#1", "a#2", "b#1", "a#3", "c#1", "b#2"]) == [
        "a#1",
        "b#1",
        "c#1",
        "a#2",
        "a#3",
        "b#2",
    ]
    lookup = Lookup(example)
    try:
        question = "How do I clean the pump and the tank, and descale them?"
        raw = lookup.retrieve(question, "raw", k=8).refs
        found = {mode: lookup.retrieve(question, mode, k=8).refs for mode in ("search", "index")}
    finally:
        lookup.close()
    assert len({r.split("#")[0] for r in raw[:5]}) < 5  # the plain list repeats a file early
    for refs in found.values():
        files = [r.split("#")[0] for r in refs]
        firsts = [f for i, f in enumerate(files) if f not in files[:i]]
        assert files[: len(firsts)] == firsts  # every file's best section before any second one


def test_ask_cli_text_and_json(example):
    runner = CliRunner()
    result = runner.invoke(app, ["--root", str(example), "ask", "What does the warranty cover?"])
    assert result.exit_code == 0, result.output
    assert "layer1_sources/faq/warranty.md#" in result.output
    result = runner.invoke(app, ["--root", str(example), "ask", "Can I pay with PayPal?", "--json"])
    data = json.loads(result.output)
    assert data["refused"] is True and data["answer"] == REFUSAL


def test_eval_writes_summary_and_cases(example, tmp_path, monkeypatch):
    out = example / "results.json"
    monkeypatch.chdir(tmp_path)  # the question file is found relative to --root
    result = CliRunner().invoke(
        app,
        ["--root", str(example), "eval", "examples/questions.yaml", "--mode", "search", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    s = data["summary"]
    for key in ("file_recall@5", "section_recall@5", "mrr", "correct_refusal", "false_refusal"):
        assert 0.0 <= s[key] <= 1.0
    assert s["latency_ms_p50"] <= s["latency_ms_p95"]
    case = data["cases"][0]
    assert {"id", "question", "expected", "retrieved", "refused"} <= set(case)
    assert all(":" in r for r in case["retrieved"])  # source:id#anchor
    assert s["file_recall@5"] >= 0.8 and s["correct_refusal"] >= 0.6 and s["false_refusal"] <= 0.2
    assert "file_recall@5" in result.output


def test_eval_resolves_record_ids_by_id_key_or_file_name(example):
    qs = [
        {"id": "a", "question": "How long does a full water tank last?", "expected": ["faq:tank-duration"]},
        {
            "id": "b",
            "question": "How long does a full water tank last?",
            "expected": ["faq:tank-duration.md"],
        },
    ]
    (example / "q.yaml").write_text(yaml.safe_dump({"questions": qs}))
    report = run_eval(example, load_questions(example / "q.yaml"), "raw")
    assert [c.file_recall for c in report.cases] == [1.0, 1.0]


def test_index_routes_the_example_questions_to_the_page_that_answers_them(example):
    """Issue 10: index.md (with the pages' text and headings) leads to the page each of our own
    20 support questions names, and to a page that states the answer."""
    report = run_eval(example, load_questions(example / "examples" / "questions-pages.yaml"), "index")
    assert report.metric("page_routed") >= 0.9, [c.problems for c in report.cases if c.page_routed is False]
    assert report.metric("answer_on_page") >= 0.9
    case = report.cases[0].as_dict()
    assert case["pages"] == ["wiki/devices/grove-6.md"] and case["opened"][0].startswith("wiki/")


def test_farmbot_index_routes_our_questions_to_their_pages(farmbot):
    """Issue 10 on FarmBot: 20 support questions of our own, each with the page that answers it."""
    qs = load_questions(farmbot_kb.FIXTURE / "questions-pages.yaml")
    report = run_eval(farmbot, qs, "index")
    assert report.metric("page_routed") >= 0.85 and report.metric("answer_on_page") >= 0.9


def test_a_question_page_must_be_a_path(example):
    (example / "q.yaml").write_text(
        "questions:\n  - id: x\n    question: hi\n    expected: []\n    page: 3\n"
    )
    result = CliRunner().invoke(app, ["--root", str(example), "eval", str(example / "q.yaml")])
    assert result.exit_code == 2 and "page must be a wiki page path" in result.output


def test_bad_question_file_names_the_question(example):
    (example / "q.yaml").write_text("questions:\n  - id: x\n    question: hi\n    expected: nope\n")
    result = CliRunner().invoke(app, ["--root", str(example), "eval", str(example / "q.yaml")])
    assert result.exit_code == 2 and "'x'" in result.output


def test_tune_index_stores_reviewable_overrides_and_improves_the_index(example):
    # index lines are matched by words: by words alone, one of the example's questions misses
    with (example / "schema" / "wiki.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\nsearch:\n  semantic: false\n")
    qs = load_questions(example / "examples" / "questions.yaml")
    report = tune_index(example, qs)
    assert report.changes
    before = report.before.metric("file_recall")
    assert report.after is not None and report.after.metric("file_recall") >= before
    overrides = yaml.safe_load((example / "schema" / "index-overrides.yaml").read_text())
    if report.changes:
        page, entry = next(iter(overrides["pages"].items()))
        assert entry["keywords"] and entry["questions"]
        assert any(kw in (example / "wiki" / "index.md").read_text() for kw in entry["keywords"])
        # a recompile keeps the enhancements
        from wikic.compile.run import compile_wiki

        compile_wiki(example, backend="offline")
        assert entry["keywords"][0] in (example / "wiki" / "index.md").read_text()


def test_llm_answer_keeps_only_verified_citations(example):
    lookup = Lookup(example)
    try:
        model = MockModel()
        model.enqueue(
            {
                "refuse": False,
                "sentences": [
                    {"text": "The warranty covers manufacturing defects.", "cites": ["S1"]},
                    {"text": "It also covers 99 purple unicorns.", "cites": ["S1"]},
                ],
            }
        )
        answer = lookup.answer("What does the warranty cover?", model=model)
        prompt = model.history[0].user
        assert "<question>What does the warranty cover?</question>" in prompt and 'key="S1"' in prompt
        texts = [s.text for s in answer.sentences]
        assert "It also covers 99 purple unicorns." not in texts
        model.enqueue({"refuse": True, "sentences": []})
        assert lookup.answer("What does the warranty cover?", model=model).refused
    finally:
        lookup.close()


def test_model_expander_feeds_search(example):
    from wikic.lookup.backend import model_expander

    model = MockModel().enqueue({"queries": ["pump cleaning vinegar"]})
    lookup = Lookup(example)
    try:
        result = lookup.index.search("that buzzing thing", expander=model_expander(model))
    finally:
        lookup.close()
    assert result.expanded == ["pump cleaning vinegar"] and model.history[0].tool_name == "expand"


def _farmbot_reports(farmbot: Path, cache: dict = {}) -> dict:  # noqa: B006 - one eval per session
    if not cache:
        qs = load_questions(farmbot_kb.QUESTIONS)
        lookup = Lookup(farmbot)
        try:
            cache.update({m: run_eval(farmbot, qs, m, 5, lookup=lookup) for m in ("raw", "search", "index")})
        finally:
            lookup.close()
    return cache


def test_farmbot_retrieval_quality_gates(farmbot):
    """DESIGN §8 / issue 4 targets on the FarmBot dev questions, compiled offline."""
    reports = _farmbot_reports(farmbot)
    best = max(reports["search"].metric("file_recall"), reports["index"].metric("file_recall"))
    search = reports["search"]
    assert best >= 0.85
    assert best > reports["raw"].metric("file_recall")
    assert search.metric("correct_refusal") >= 0.6
    assert search.metric("false_refusal") <= 0.1


def test_farmbot_wiki_beats_raw_by_the_target_margin(farmbot):
    """Issue 4: the hybrid lookup finds at least 0.05 more of the expected files than raw BM25."""
    reports = _farmbot_reports(farmbot)
    best = max(reports["search"].metric("file_recall"), reports["index"].metric("file_recall"))
    assert best >= reports["raw"].metric("file_recall") + 0.05


def test_farmbot_answer_quality_gates(farmbot):
    """Issue 11, measured on answers: the FarmBot dev questions' answer_contains strings are in the
    answer, which cites an expected file; index mode is not worse than raw; refusals calibrated.
    (The issue's targets are higher: 0.7 accuracy, 0.9 correct refusal; see the README figures.)"""
    reports = _farmbot_reports(farmbot)
    search, index, raw = reports["search"], reports["index"], reports["raw"]
    assert search.metric("answer_accuracy") >= 0.55 and search.metric("cited_gold") >= 0.7
    assert index.metric("file_recall") >= raw.metric("file_recall")
    assert search.metric("correct_refusal") >= 0.8 and search.metric("false_refusal") <= 0.05
    assert set(search.by_type) >= {"crop", "factoid", "symptom", "cross_doc", "unanswerable"}


def test_what_a_source_files_for_its_staff_comes_after_what_it_files_for_readers(tree):
    """FarmBot's factory pre-assembly ('v1.1/manufacturing', 'not meant for end users') held an
    'Electronics Box' section that outranked the owner's troubleshooting step for a question
    about the electronics box's lights: of the sections a lookup ranks first, those its source
    files for its staff come after the others, and are still found."""
    files = {
        "layer1_sources/articles/factory.md": _source(
            "Electronics Box",
            "## Electronics box\n\nMount the electronics box lights and the electronics box board.",
            "section: v1.1/manufacturing/pre-assembly\n",
        ),
        "layer1_sources/articles/owner.md": _source(
            "Check the lights",
            "## Blue light off\n\nIf the blue light on the electronics box is off, check for blocked ports.",
        ),
    }
    for i in range(8):
        files[f"layer1_sources/articles/other-{i}.md"] = _source(f"Other {i}", f"## Part {i}\n\nText {i}.")
    lookup = Lookup(tree(files))
    try:
        got = lookup.retrieve("electronics box lights", "raw", k=5)
    finally:
        lookup.close()
    assert got.ranked.index("layer1_sources/articles/owner.md#blue-light-off") < got.ranked.index(
        "layer1_sources/articles/factory.md#electronics-box"
    ), got.ranked
