"""Hostile values for `leaderboard --unadjusted`, `judge --panel` and `--labels`
(`tests/support/hostile_numbers.py`): refused in one line naming the problem, or done; never a
traceback, nothing written that should not be, nothing paid that is not stored."""

from __future__ import annotations

import pytest

from tests.support.hostile import run_case
from tests.support.hostile_numbers import numbers_cases

pytestmark = pytest.mark.slow  # the matrix's store: the session's Ray and Prefect server

CASES = numbers_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_numbers_flag_is_refused_in_one_line_or_taken(
    case, hostile_store, session_services, tmp_path, demo_dataset
):
    base, sim, sim_log = hostile_store
    outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    assert outcome.problems() == [], (outcome.code, outcome.out[-2000:], outcome.err[-2000:])
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), outcome.err
    assert "Traceback" not in outcome.out + outcome.err
