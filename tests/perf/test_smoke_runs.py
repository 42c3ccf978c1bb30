"""Every benchmark of `perf/` runs at `--smoke` and prints its figures line: a script that
cannot import, crashes, or stops printing a figure it promises fails here. Each runs as a user
types it (`python perf/NAME.py --smoke` from the checkout), in a process of its own that starts
what it needs (Ray, a Prefect server, the simulator, moto, Chromium) and shares nothing with
the test session. Its last line's `key=value` pairs must hold every figure of
`tests/perf/promises.py`, each a finite number, and at that size the counts and the script's
own targets (nothing lost, no traceback) take exact values.

Measured one at a time on 2 cores shared with other work (`python3 -c "sum(range(3*10**7))"`
0.76 s), 2026-11-28: coverage 0.2 s, plan_scale 2.1, aggregate_scale 2.4, resume 2.5,
report_open 5.2, throughput 12.9, estimate_error 23, prefect_db 24, hostile 28, ratelimit 30,
chaos 71, million 74, first_result 88, team 102: 7.8 minutes in all (about twice each at a
load of 6 to 9). The four longest start a whole stack or cluster: `evalfleet up` with a fresh
Prefect database to migrate (first_result, team: 23 s quiet, 74 s loaded), a Ray cluster of
three nodes (chaos, million), and team waits out Prefect's 30 s heartbeat before a lost flow
run is marked Crashed."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from tests.perf.promises import AT_SMOKE, FIGURES, NEEDS_CHROMIUM, PERF, REPO, benchmarks
from tests.support.browser import CHROMEDRIVER, CHROMIUM

pytestmark = pytest.mark.slow  # each script starts its own Ray, Prefect server or browser

TIMEOUT_S = 900  # the slowest (team) takes about 3 minutes on a loaded 2-core machine
PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(\S+)")
DROPPED = (
    "PREFECT_API_URL",
    "RAY_ADDRESS",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "EVALFLEET_STORE",
    "EVALFLEET_SIMULATOR_URL",
    "EVALFLEET_MODELS",
)


def figures_of(line: str) -> dict[str, str]:
    return dict(PAIR.findall(line))


def test_a_figures_line_is_read_as_its_pairs():
    line = "items_per_s=58.3 ratio_vs_bare=0.89 cpu_ms_per_item=0.62 (driver 0.62, workers 0.0)"
    assert figures_of(line) == {
        "items_per_s": "58.3",
        "ratio_vs_bare": "0.89",
        "cpu_ms_per_item": "0.62",
    }


def smoke_environment() -> dict[str, str]:
    """The caller's environment less what would point a script at the test session's
    services or a store of its own."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(TQDM_DISABLE="1", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    return env


def run_smoke(name: str, out_dir) -> tuple[int, str, str]:
    """`python perf/NAME.py --smoke` in a process group of its own (killed whole if it
    outlives TIMEOUT_S): exit code, stdout, stderr."""
    stdout_path, stderr_path = out_dir / f"{name}.out", out_dir / f"{name}.err"
    with stdout_path.open("w") as stdout, stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(PERF / f"{name}.py"), "--smoke"],
            cwd=REPO,
            env=smoke_environment(),
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    return code, stdout_path.read_text(errors="replace"), stderr_path.read_text(errors="replace")


# Each of these starts a whole stack or cluster: a file of its own (tests/perf/test_smoke_*.py),
# so that the suite's workers (`--dist loadfile`) run them side by side.
APART = ("team", "first_result", "million", "chaos")
# Each of these drives the CLI command after command, each command with a temporary Prefect
# server of its own: together in tests/perf/test_smoke_commands.py, beside this file's.
COMMANDS = ("estimate_error", "hostile", "prefect_db", "small_run")


@pytest.mark.parametrize("name", [n for n in benchmarks() if n not in APART + COMMANDS])
def test_the_script_runs_at_smoke_and_prints_every_figure_it_promises(name, tmp_path):
    check_smoke(name, tmp_path)


def check_smoke(name: str, tmp_path) -> None:
    if name in NEEDS_CHROMIUM and not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("needs chromium and chromedriver: apt-get install chromium chromium-driver")
    code, out, err = run_smoke(name, tmp_path)
    assert code == 0, f"perf/{name}.py --smoke ended with {code}:\n{out[-3000:]}\n{err[-3000:]}"
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines, f"perf/{name}.py --smoke printed nothing:\n{err[-3000:]}"
    found = figures_of(lines[-1])
    missing = [f for f in FIGURES[name] if f not in found]
    assert missing == [], f"the last line lacks {missing}: {lines[-1]}"
    values = {f: float(found[f]) for f in FIGURES[name]}
    assert [f for f, v in values.items() if not math.isfinite(v)] == [], lines[-1]
    expected = AT_SMOKE.get(name, {})
    assert {f: values[f] for f in expected} == pytest.approx(expected), lines[-1]


def test_every_script_apart_has_its_file():
    from pathlib import Path

    here = Path(__file__).parent
    assert set(APART + COMMANDS) <= set(benchmarks())
    assert [n for n in APART if not (here / f"test_smoke_{n}.py").is_file()] == []
