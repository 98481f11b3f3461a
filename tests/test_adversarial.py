"""The adversarial LLM gets nothing wrong published, while a careful model's quotes still are."""

from __future__ import annotations

from pathlib import Path

from adversarial import CATEGORIES, run_adversary
from wikiasserts import assert_every_fact_cited

from wikic.check.run import check


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
    wrong = ("negation", "swapped numbers", "appended clause")  # dropped; raw HTML is removed instead
    assert report.dropped >= sum(n for cat, n, *_ in result.rows if cat in wrong)
    assert any("heading" in n for n in report.notes) and any("summary" in n for n in report.notes)
    assert assert_every_fact_cited(unbuilt_example) == report.citations
    assert not check(unbuilt_example).errors
