"""A simulator started for a command (the demo's, the tests') leaves nothing on disk however
the command ends: its config goes on the child's standard input, its standard error to a file
without a name. A killed `evalfleet demo` used to leave an `evalfleet-sim-*` folder behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STARTS = """
import time
from evalfleet.simulator.process import start_simulator
sim = start_simulator(None, {"latency": {"ms": 1}})
print(sim.url, sim.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_killed_caller_leaves_no_folder_in_the_temporary_directory(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    caller = subprocess.Popen(
        [sys.executable, "-c", STARTS],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url, pid = caller.stdout.readline().split()
        with urllib.request.urlopen(url + "/health", timeout=5) as response:
            assert response.status == 200
        assert list(temp.iterdir()) == []  # nothing while it runs either
    finally:
        caller.send_signal(signal.SIGKILL)
        caller.wait()
        caller.stdout.close()
    assert _gone(int(pid), 10)  # the simulator dies with its caller (evalfleet.core.fate)
    assert list(temp.iterdir()) == []


def serve(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalfleet.simulator.cli", "serve", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_config_on_standard_input_that_is_not_one_is_one_line():
    done = serve("--config", "-", "--port", "0", stdin="{not json")
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot parse the config on standard input: ")
    assert len(done.stderr.splitlines()) == 1
    done = serve("--config", "-", "--port", "0", stdin=json.dumps({"latency": {"ms": -1}}))
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        ["error: invalid config on standard input: latency.ms: Input should be greater than "
         "or equal to 0"],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "value", "rule"),
    [
        ("--latency-ms", "1e23", "a number from 0 to 86400000"),
        ("--rpm", "100000000000000000000000", "a whole number from 1 to 1000000000"),
        ("--fail-first-n", "-1", "a whole number from 0 to 1000000"),
        ("--hang-s", "nan", "a number from 0.001 to 86400"),
        ("--unformatted-rate", "2", "a number from 0 to 1"),
    ],
)
def test_a_simulator_flag_out_of_its_range_is_one_line(flag, value, rule):
    done = subprocess.run(
        [sys.executable, "-m", "evalfleet.cli.main", "simulate", flag, value],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"error: {flag} takes {rule}, not '{value}' (`evalfleet simulate --help` lists the "
        "options)\n"
    )
