"""ask, eval and tune-index on the example KB, on FarmBot (the retrieval quality gates), and with a
scripted model for the LLM paths."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from wikic.ask import REFUSAL, Lookup
from wikic.cli import app
from wikic.eval import load_questions, run_eval
from wikic.librarian.model import MockModel
from wikic.tune import tune_index

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


def test_ask_cli_text_and_json(example):
    runner = CliRunner()
    result = runner.invoke(app, ["--root", str(example), "ask", "What does the warranty cover?"])
    assert result.exit_code == 0, result.output
    assert "layer1_sources/faq/warranty.md#" in result.output
    result = runner.invoke(app, ["--root", str(example), "ask", "Can I pay with PayPal?", "--json"])
    data = json.loads(result.output)
    assert data["refused"] is True and data["answer"] == REFUSAL


def test_eval_writes_summary_and_cases(example):
    out = example / "results.json"
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


def test_bad_question_file_names_the_question(example):
    (example / "q.yaml").write_text("questions:\n  - id: x\n    question: hi\n    expected: nope\n")
    result = CliRunner().invoke(app, ["--root", str(example), "eval", str(example / "q.yaml")])
    assert result.exit_code == 2 and "'x'" in result.output


def test_tune_index_stores_reviewable_overrides_and_improves_the_index(example):
    qs = load_questions(example / "examples" / "questions.yaml")
    report = tune_index(example, qs)
    before = report.before.metric("file_recall")
    assert report.after is not None and report.after.metric("file_recall") >= before
    overrides = yaml.safe_load((example / "schema" / "index-overrides.yaml").read_text())
    if report.changes:
        page, entry = next(iter(overrides["pages"].items()))
        assert entry["keywords"] and entry["questions"]
        assert any(kw in (example / "wiki" / "index.md").read_text() for kw in entry["keywords"])
        # a recompile keeps the enhancements
        from wikic.compile import compile_wiki

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
    from wikic.ask import model_expander

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


@pytest.mark.xfail(
    strict=True,
    reason="known gap: hybrid search beats raw BM25 by ~0.03 file_recall@5 on FarmBot dev, target is 0.05 "
    "(misses are vocabulary mismatches: 'sweetcorn'/'corn', 'damp dirt'/'soil moisture')",
)
def test_farmbot_wiki_beats_raw_by_the_target_margin(farmbot):
    reports = _farmbot_reports(farmbot)
    best = max(reports["search"].metric("file_recall"), reports["index"].metric("file_recall"))
    assert best >= reports["raw"].metric("file_recall") + 0.05
