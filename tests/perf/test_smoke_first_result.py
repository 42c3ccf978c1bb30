"""`perf/first_result.py --smoke`, in a file of its own (see tests/perf/test_smoke_runs.py)."""

from __future__ import annotations

import pytest

from tests.perf.test_smoke_runs import check_smoke

pytestmark = pytest.mark.slow  # a whole stack or Ray cluster of its own


def test_first_result_runs_at_smoke_and_prints_every_figure_it_promises(tmp_path):
    check_smoke("first_result", tmp_path)
