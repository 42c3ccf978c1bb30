"""Where settings are checked: the `evalfleet` executable (before it asks the stack's launcher
to run the command), a flow run (before its body), the deployments' serve process (before it
serves). Each refuses a bad value in one line, exit 2 (a flow: its one-line error)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalfleet.core.settings import SettingError

REPO = Path(__file__).resolve().parents[2]
EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))


def bare_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **settings}


def test_the_executable_refuses_a_bad_setting_before_the_launcher_is_asked(tmp_path):
    done = subprocess.run(
        [EVALFLEET, "status", "some-run", "--store", str(tmp_path / "runs")],
        env=bare_env(tmp_path, EVALFLEET_NO_LAUNCHER="maybe"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: EVALFLEET_NO_LAUNCHER=maybe is not one of 1, true, yes, 0, false, no (any "
        "case); set it to one, such as 1, or unset it\n",
    )
    assert not (tmp_path / "runs").exists() and not (tmp_path / ".evalfleet").exists()


def test_the_deployments_refuse_a_bad_setting_before_they_are_served(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "evalfleet.deployments.serve"],
        cwd=REPO,
        env=bare_env(tmp_path, EVALFLEET_BATCH_POLL_EVERY_S="0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "error: EVALFLEET_BATCH_POLL_EVERY_S=0 is not a number of seconds from 1 to 86400; set "
        "it to one, such as 300, or unset it\n",
    )


def test_a_flow_refuses_a_bad_setting_before_its_body(monkeypatch, tmp_path):
    from evalfleet.flows.aggregate import aggregate

    monkeypatch.setenv("EVALFLEET_HEARTBEAT_S", "0")
    with pytest.raises(SettingError, match=r"^EVALFLEET_HEARTBEAT_S=0 is not a number of"):
        aggregate.fn("some-run", str(tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()
