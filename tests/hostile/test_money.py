"""Answers billed but no answer, under `run`, a capped run and a resume
(`tests/support/hostile.py` `money_cases`): every billed attempt recorded at its price, the
cap counting them, nothing quarantined and asked again."""

from __future__ import annotations

import pytest

from tests.support.hostile import money_cases, run_case

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

CASES = money_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_billed_attempt_is_recorded(
    case, hostile_store, session_services, tmp_path, demo_dataset
):
    base, sim, sim_log = hostile_store
    outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    assert outcome.problems() == [], (outcome.out[-2000:], outcome.err[-2000:])
