"""The perf scripts that drive the CLI command after command, at `--smoke`, in a file of their
own so that they run beside tests/perf/test_smoke_runs.py's (see there)."""

from __future__ import annotations

import pytest

from tests.perf.test_smoke_runs import COMMANDS, check_smoke

pytestmark = pytest.mark.slow  # each command starts a temporary Prefect server


@pytest.mark.parametrize("name", COMMANDS)
def test_the_script_runs_at_smoke_and_prints_every_figure_it_promises(name, tmp_path):
    check_smoke(name, tmp_path)
