"""``wikic trace PAGE[:LINE]``: every wiki sentence leads to its layer-1 section, layer-0 snapshot and API URL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.check.trace import parse_target, trace
from wikic.cli.app import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture
def example(example_kb: Path) -> Path:
    return example_kb


def line_of(root: Path, page: str, startswith: str) -> int:
    lines = (root / page).read_text("utf-8").split("\n")
    return next(n for n, line in enumerate(lines, 1) if line.startswith(startswith))


def test_trace_a_line_down_to_the_api_url(example: Path) -> None:
    page = "wiki/topics/orders-and-policies.md"
    n = line_of(example, page, "Smaller orders ship for a flat $5.95.")
    result = runner.invoke(app, ["--root", str(example), "trace", f"{page}:{n}"])
    assert result.exit_code == 0, result.output
    out = result.output
    # sentence, then citation, then layer-1 section text, then layer 0, then the API URL
    order = [
        f"{page}:{n}  Smaller orders ship for a flat $5.95.",
        "[1] layer1_sources/faq/shipping.md#how-much-is-shipping-and-how-long-does-it-take",
        "layer 1: How much is shipping and how long does it take? (faq:shipping)",
        "> Shipping is free on orders over $50",
        "layer 0: layer0_raw/faq/shipping@",
        "(hash verified)",
        "API URL: file:examples/api/faq/page-",
    ]
    positions = [out.index(part) for part in order]
    assert positions == sorted(positions)

    as_json = runner.invoke(app, ["--root", str(example), "trace", f"{page}:{n}", "--json"])
    data = json.loads(as_json.output)
    assert data["page"] == page and data["line"] == n
    (sentence,) = data["sentences"]
    (cite,) = sentence["citations"]
    assert cite["layer0"]["path"].startswith("layer0_raw/faq/shipping@")
    assert cite["layer0"]["sha256"].startswith("sha256:") and cite["layer0"]["verified"] is True
    assert cite["layer0"]["api_url"].startswith("file:examples/api/faq/page-")
    assert cite["layer0"]["fetched_at"]
    assert "Smaller orders ship for a flat $5.95" in cite["section_text"]


def test_hand_maintained_sources_have_no_layer0(example: Path) -> None:
    page = "wiki/devices/sprout-3.md"
    n = line_of(example, page, "| Tank capacity (l) |")
    result = runner.invoke(app, ["--root", str(example), "trace", f"devices/sprout-3.md:{n}"])
    assert result.exit_code == 0, result.output
    assert "Tank capacity (l) / Value: 1.2" in result.output
    assert "layer 0: none (hand-maintained layer-1 file; it has no API source)" in result.output
    data = trace(example, f"{page}:{n}").as_json()
    (cite,) = data["sentences"][0]["citations"]
    assert cite["hand_maintained"] is True and cite["layer0"] is None


def test_whole_page_and_superseded_notes(example: Path) -> None:
    report = trace(example, "wiki/topics/orders-and-policies.md")
    cited = {c.record_id for s in report.sentences for c in s.citations}
    assert {"return-policy-2026", "return-policy-2025", "return-policy", "shipping"} <= cited
    assert all(s.citations for s in report.sentences)


def test_tampered_snapshot_and_missing_anchor_are_shown(example: Path) -> None:
    page = "wiki/topics/orders-and-policies.md"
    n = line_of(example, page, "Smaller orders ship")
    snap = trace(example, f"{page}:{n}").sentences[0].citations[0].layer0
    body = json.loads((example / snap.path).read_text("utf-8"))
    body["record"]["answer"] += " Edited."
    (example / snap.path).write_text(json.dumps(body))
    assert "HASH MISMATCH" in runner.invoke(app, ["--root", str(example), "trace", f"{page}:{n}"]).output

    shipping = example / "layer1_sources/faq/shipping.md"
    shipping.write_text(shipping.read_text("utf-8").replace("# How much is shipping", "# Shipping costs"))
    out = runner.invoke(app, ["--root", str(example), "trace", f"{page}:{n}"]).output
    assert "BROKEN: #how-much-is-shipping-and-how-long-does-it-take is not a heading" in out


def test_usage_errors(example: Path) -> None:
    page = "wiki/topics/orders-and-policies.md"
    blank = line_of(example, page, "# Orders and policies") + 1
    result = runner.invoke(app, ["--root", str(example), "trace", f"{page}:{blank}"])
    assert result.exit_code == 2
    assert "holds no cited sentence" in result.output and "sentences are on lines" in result.output
    missing = runner.invoke(app, ["--root", str(example), "trace", "wiki/nope.md"])
    assert missing.exit_code == 2 and "no such wiki page" in missing.output
    assert parse_target("wiki/a.md:12") == ("wiki/a.md", 12)
    assert parse_target("wiki/a.md") == ("wiki/a.md", None)


def test_every_farmbot_sentence_reaches_its_api_url(farmbot_compiled: Path) -> None:
    pages = sorted(
        p.relative_to(farmbot_compiled).as_posix()
        for p in (farmbot_compiled / "wiki").rglob("*.md")
        if p.name not in ("index.md", "log.md")
    )
    assert len(pages) > 50
    traced = 0
    for page in pages:
        for s in trace(farmbot_compiled, page).sentences:
            assert s.citations, f"{page}:{s.line} has no citation"
            for c in s.citations:
                assert not c.problem and c.layer0 is not None, f"{page}:{s.line}: {c}"
                assert c.layer0.verified and c.layer0.fetched_at
                assert c.layer0.api_url.startswith("http://127.0.0.1:"), c.layer0.api_url
                traced += 1
    assert traced > 3000
    # the CLI, on one line of a crop comparison
    page = "wiki/comparisons/partial-sun-crops.md"
    n = next(s.line for s in trace(farmbot_compiled, page).sentences)
    result = runner.invoke(app, ["--root", str(farmbot_compiled), "trace", f"{page}:{n}", "--json"])
    assert result.exit_code == 0
    for cite in json.loads(result.output)["sentences"][0]["citations"]:
        assert cite["layer0"]["api_url"].startswith("http://127.0.0.1:")
