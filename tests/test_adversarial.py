"""A model that writes wrong sentences gets none published; one that restates faithfully does.

The wrong sentences (``adversarial``) are the kinds a model gets past a word-overlap check:
negations, swapped numbers, another product's name, the opposite direction, an appended clause,
one section's subject with another's numbers. The faithful ones (``rewrites``) are what a capable
model writes: clauses reordered, sentences merged, plain synonyms, units spelled out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from adversarial import CATEGORIES, WRONG, run_adversary, run_faithful, verifier_rates
from wikiasserts import assert_every_fact_cited

from wikic.check.run import check

REPO = Path(__file__).resolve().parents[1]


def test_adversarial_model_publishes_nothing_wrong(unbuilt_example: Path) -> None:
    result = run_adversary(unbuilt_example)
    print(result.table())
    assert [cat for cat, *_ in result.rows] == list(CATEGORIES)
    for cat, attempts, caught, published in result.rows:
        assert attempts > 0, cat
        assert (cat, published) == (cat, 0), result.table()
        assert caught == attempts
    # the check is strict, not blind: the genuine quotes around the attacks are published
    assert result.genuine_published >= 0.95 * result.genuine, result.table()
    report = result.compile
    assert report.dropped >= sum(n for cat, n, *_ in result.rows if cat in WRONG)
    assert any("heading" in n for n in report.notes) and any("summary" in n for n in report.notes)
    assert assert_every_fact_cited(unbuilt_example) == report.citations
    assert not check(unbuilt_example).errors


def test_a_faithful_model_gets_its_rewrites_published(unbuilt_example: Path) -> None:
    written, report = run_faithful(unbuilt_example)
    print(dict(written), report.sentences, report.verified, report.dropped)
    assert sum(written.values()) >= 150 and min(written.values()) >= 20, written
    assert report.verified >= 0.9 * report.sentences
    assert not check(unbuilt_example).errors


@pytest.mark.parametrize("kb", ["example", "farmbot"])
def test_the_check_rejects_every_wrong_sentence_and_accepts_faithful_rewrites(
    kb: str, request: pytest.FixtureRequest
) -> None:
    """Every section's first quotes, each mutated every way it can be and rewritten faithfully,
    straight through the citation check of the example KB and of FarmBot."""
    root = REPO if kb == "example" else request.getfixturevalue("farmbot_compiled")
    rates = verifier_rates(root)
    print(rates.table())
    assert set(rates.wrong) == set(WRONG) and all(n >= 50 for n, _ in rates.wrong.values()), rates.table()
    assert rates.wrong_published == 0, rates.table()
    assert sum(n for n, _ in rates.faithful.values()) >= 150
    assert rates.faithful_share >= 0.9, rates.table()
