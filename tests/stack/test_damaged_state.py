"""The stack survives a damaged `stack.json`: a real `evalfleet up` (Prefect server, the
served deployments, the warm launcher), its state file truncated, then `evalfleet down`.

Before, `down` read the truncated file as "no stack" and printed "nothing to stop" with exit
0, while every process kept running. Now it stops what the pid files record (each checked
against its start time); a process whose pid file is gone too is found by the stack's mark in
its environment and stopped as well (one without the mark, by the log it writes to: named with
the command that stops it, tests/stack/test_down_flow_runs.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from evalfleet.stack.services import free_port
from tests.support.helpers import tagged_processes, wait_for_no_processes
from tests.support.stack import EVALFLEET, REPO, stack_env

pytestmark = pytest.mark.slow  # starts a Prefect server and a subprocess stack


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [EVALFLEET, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def test_down_stops_a_stack_whose_state_file_is_truncated(tmp_path):
    tag = f"damaged-{os.getpid()}-{time.monotonic_ns()}"
    env = stack_env(tmp_path, tag)
    state = tmp_path / "state"
    try:
        up = cli(env, "up", "--port", str(free_port()), "--store", str(tmp_path / "runs"))
        assert up.returncode == 0, up.stdout + up.stderr
        recorded = json.loads((state / "stack.json").read_text())
        pids = {k: recorded[k]["pid"] for k in ("prefect", "serve", "launcher")}
        assert set(pids.values()) <= {pid for pid, _ in tagged_processes(tag)}
        text = (state / "stack.json").read_text()
        (state / "stack.json").write_text(text[: len(text) // 2])  # torn mid-write
        (state / "pids" / "launcher.json").unlink()  # and one pid file lost as well

        again = cli(env, "up")  # a second stack beside the first would be out of down's reach
        assert again.returncode == 1
        assert again.stderr == (
            f"error: stack.json in {state} is damaged while processes `up` started still run "
            f"(deployments (serve) pid {pids['serve']}, Prefect server pid {pids['prefect']}, "
            f"pid {pids['launcher']}): run `evalfleet down` first\n"
        )

        down = cli(env, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        lines = down.stdout.splitlines()
        assert lines[0] == f"evalfleet stack in {state}:"
        assert lines[1].startswith("  stack.json is damaged (JSONDecodeError: ")
        assert lines[1].endswith(
            "; kept as stack.json.damaged): stopping what the pid files in pids/ record"
        )
        assert lines[2:4] == [
            f"  deployments (serve)    stopped (pid {pids['serve']})",
            f"  Prefect server         stopped (pid {pids['prefect']})",
        ]
        launcher = pids["launcher"]  # no pid file, but the stack's mark in its environment
        assert lines[4].startswith(f"  also stopped           pid {launcher} (")
        assert "-m evalfleet.cli.launcher " in lines[4]
        assert len(lines) == 5, lines  # what the stopped groups held is not listed again
        assert (state / "stack.json.damaged").read_text() == text[: len(text) // 2]
        assert wait_for_no_processes(tag, timeout_s=30) == []
        last = cli(env, "down")
        assert (last.returncode, last.stdout) == (
            0,
            f"no stack recorded in {state}: nothing to stop\n",
        )
    finally:
        for pid, _ in tagged_processes(tag):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
