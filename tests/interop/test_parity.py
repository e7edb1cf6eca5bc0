"""pyairport's scenarios against airport-go's server: every answer must match except the
differences parity.EXPECTED lists, each with its deviation (the reason) — and those must
still occur, so the list cannot go stale."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from .parity import DEVIATION_DOCS, EXPECTED, differing_steps, observe
from .scenarios import SCENARIOS


def test_every_expected_difference_names_a_contract_deviation_and_a_scenario() -> None:
    for scenario, steps in EXPECTED.items():
        assert scenario in SCENARIOS, scenario
        for step, (deviation, note) in steps.items():
            assert deviation in DEVIATION_DOCS, f"{scenario}.{step}: unknown deviation {deviation}"
            assert note, f"{scenario}.{step}: say what differs"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_answers_match_airport_go(
    name: str, servers: dict[str, Callable[[], AbstractContextManager[str]]]
) -> None:
    go = observe(servers["airport-go"], name)
    py = observe(servers["pyairport"], name)
    assert go.keys() == py.keys()
    expected = EXPECTED.get(name, {})
    unexpected = {
        step: {"airport-go": go.get(step), "pyairport": py.get(step)}
        for step in differing_steps(go, py) - expected.keys()
    }
    assert not unexpected, f"{name}: answers differ from airport-go: {unexpected}"
    vanished = expected.keys() - differing_steps(go, py)
    assert not vanished, f"{name}: expected differences no longer occur: {sorted(vanished)}"
