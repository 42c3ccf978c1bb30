"""Hostile names and numbers under every command that takes one (`tests/support/hostile.py`):
a name with `$ | < > & " '`, a newline, 300 characters or non-ASCII letters, as a model, a
simulated model's tag, a judge or a run id; nan, inf, -1, 0 and 1e308 for each numeric
option; and the flags of the fleet over time (`run --reuse-from`, `drift --notify`, `history`:
tests/support/hostile_fleet.py) and of the numbers (`leaderboard --unadjusted`, `judge --panel`,
`--labels`: tests/support/hostile_numbers.py). Refused in one line naming the problem, or taken;
never a traceback, nothing written that should not be, nothing paid that is not stored."""

from __future__ import annotations

import pytest

from tests.support.hostile import name_cases, number_cases, run_case
from tests.support.hostile_fleet import fleet_cases
from tests.support.hostile_numbers import numbers_cases

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

CASES = [*name_cases(), *number_cases(), *fleet_cases(), *numbers_cases()]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_value_is_refused_in_one_line_or_taken(
    case, hostile_store, session_services, tmp_path, demo_dataset
):
    base, sim, sim_log = hostile_store
    outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    assert outcome.problems() == [], (outcome.code, outcome.out[-2000:], outcome.err[-2000:])
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), outcome.err
    assert "Traceback" not in outcome.out + outcome.err


def test_the_matrix_has_at_least_150_cases():
    from tests.support.hostile import all_cases

    cases = all_cases()
    assert len(cases) >= 150
    assert len({c.name for c in cases}) == len(cases)  # each case told apart
