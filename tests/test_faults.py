"""Every scenario of the fault matrix ends with a documented exit code and loses nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apiserver import ApiServer
from faultmatrix import SCENARIOS, Scenario, build_base, run_scenario, serve


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ApiServer]]:
    api = ApiServer()
    serve(api)
    base = tmp_path_factory.mktemp("faults") / "base"
    build_base(base, api)
    try:
        yield base, api
    finally:
        api.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault_scenario_survives_and_loses_nothing(
    matrix: tuple[Path, ApiServer], scenario: Scenario, tmp_path: Path
) -> None:
    base, api = matrix
    outcome = run_scenario(scenario, base, tmp_path / "kb", api)
    assert outcome.survived, outcome.problem
    assert outcome.lost == [], outcome.lost
