"""Hostile settings and numbers (`tests/support/hostile_settings.py`): every EVALFLEET_*
setting given abc, 0, -1, nan, 1e23 or a folder that cannot be made; every numeric flag given
1e23; `judge` against a dead endpoint. Refused in one line naming the setting or flag (and its
range), before anything runs: nothing written, nothing paid; or taken."""

from __future__ import annotations

import pytest

from tests.support.hostile import run_case
from tests.support.hostile_settings import EXPECTED, settings_cases

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

CASES = settings_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_setting_or_number_is_refused_in_one_line_or_taken(
    case, hostile_store, session_services, tmp_path, demo_dataset
):
    base, sim, sim_log = hostile_store
    outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    assert outcome.problems() == [], (outcome.out[-2000:], outcome.err[-2000:])
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(EXPECTED[case.name]), outcome.err
    assert "Traceback" not in outcome.out + outcome.err


def test_every_setting_and_every_numeric_run_flag_is_in_the_matrix():
    from evalfleet.core import settings
    from tests.support.hostile_settings import _numeric_run_flags

    names = " ".join(case.name for case in CASES)
    assert all(f"setting {s.name}=" in names for s in settings.ALL)
    flags = _numeric_run_flags()
    assert {"--max-in-flight", "--keep-flow-runs", "--limit", "--seed"} <= set(flags)
    assert all(f"run {flag} 1e23" in names for flag in flags)
    assert len(CASES) == len({case.name for case in CASES}) >= 150
