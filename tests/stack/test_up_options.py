"""What `evalfleet up` refuses before it starts anything (exit 2, one line), and the crash
automation's command for a server `up` did not start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalfleet.stack import prefect_server

EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--pool", "--reevaluate-every", "5"], {}, "edit the schedules and parameters in"),
        (["--ray-nodes", "-1"], {}, "--ray-nodes takes a whole number from 0 to 64, not '-1'"),
        (["--pool", "--workers", "0"], {}, "--workers takes a whole number from 1 to 64"),
        (
            [],
            {"EVALFLEET_CRASH_AFTER_S": "20"},
            "EVALFLEET_CRASH_AFTER_S=20 is not a whole number of seconds from 35 to 86400",
        ),
        ([], {"EVALFLEET_CRASH_AFTER_S": "soon"}, "EVALFLEET_CRASH_AFTER_S=soon is not"),
    ],
)
def test_up_refuses_bad_options_before_starting_anything(tmp_path, args, env, message):
    state = tmp_path / "state"
    done = subprocess.run(
        [EVALFLEET, "up", "--state-dir", str(state), *args],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1
    assert message in done.stderr
    assert not (state / "stack.json").exists()


def test_the_automation_command_needs_a_server(monkeypatch, capsys):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert prefect_server.main() == 2
    assert capsys.readouterr().err == "error: set PREFECT_API_URL to the Prefect server's API\n"


@pytest.mark.parametrize(("value", "expected"), [(None, 90), ("35", 35), ("600", 600)])
def test_the_crash_window(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("EVALFLEET_CRASH_AFTER_S", raising=False)
    else:
        monkeypatch.setenv("EVALFLEET_CRASH_AFTER_S", value)
    assert prefect_server.crash_after_s() == expected
