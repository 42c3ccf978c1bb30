"""`up` and `down` leave no `runner_storage` folder behind. Prefect's runner (the serve process,
each pool worker) makes one in its temporary directory and, stopped by a signal as `down`
stops it, leaves it there: one per `up` before. Here the stack's processes get a temporary
directory of their own (TMPDIR), so what they would leave there is seen: `up` serving, `up
--pool` (the serve process stopped, a worker started), `down`. On the way, a package installed
into a folder on PYTHONPATH has the next `up` restart the worker and the launcher (the
deployments' form and the launcher's registry are made from the installed packages), and an
`up` after nothing changed restarts nothing."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from evalfleet.stack.services import free_port
from tests.support.helpers import wait_for_no_processes
from tests.support.stack import EVALFLEET, REPO, stack_env

pytestmark = pytest.mark.slow  # a Prefect server, the served deployments, a pool worker


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [EVALFLEET, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def storages(folder: Path) -> list[str]:
    """The runner storages under `folder`, by path below it."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("runner_storage/*"))


def test_up_and_down_leave_no_runner_storage(tmp_path):
    tag = f"runner-storage-{os.getpid()}-{time.monotonic_ns()}"
    temp = tmp_path / "t"  # the stack's temporary directory
    temp.mkdir()
    site = tmp_path / "site"  # where packages are installed for this stack
    site.mkdir()
    env = stack_env(tmp_path, tag, TMPDIR=str(temp), PYTHONPATH=str(site))
    state = tmp_path / "state"
    try:
        up = cli(env, "up", "--port", str(free_port()), "--store", str(tmp_path / "runs"))
        assert up.returncode == 0, up.stdout + up.stderr
        serving = storages(state)
        assert [p.rsplit("/", 1)[0] for p in serving] == ["runners/serve/runner_storage"]
        pool = cli(env, "up", "--pool", "--workers", "1")
        assert pool.returncode == 0, pool.stdout + pool.stderr
        assert [p.rsplit("/", 1)[0] for p in storages(state)] == [
            "runners/serve/runner_storage",  # the serve process's, stopped by `up`
            "runners/worker-1/runner_storage",
        ]
        assert storages(temp) == []
        (site / "a_new_package").mkdir()  # what installing one does to the folder
        installed = cli(env, "up", "--pool", "--workers", "1")
        assert installed.returncode == 0, installed.stdout + installed.stderr
        notes = {line.split()[0]: line for line in installed.stdout.splitlines()[1:]}
        assert notes["pool"].endswith("restarted with the new settings")
        assert notes["launcher"].endswith("restarted")
        same = cli(env, "up", "--pool", "--workers", "1")
        notes = {line.split()[0]: line for line in same.stdout.splitlines()[1:]}
        assert notes["pool"].endswith("already running") and notes["launcher"].endswith(
            "already running"
        )
    finally:
        down = cli(env, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert wait_for_no_processes(tag, timeout_s=30) == []
    assert (storages(temp), storages(state), (state / "runners").exists()) == ([], [], False)
