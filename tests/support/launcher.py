"""A warm launcher (`cli.launcher`) recorded in a stack state file, as `evalfleet up` leaves it,
for tests of what is delegated to it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from evalfleet.core.places import process_start_ticks
from evalfleet.stack.state import Daemon, Stack, save

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def running_launcher(state: Path, env: dict[str, str]) -> Iterator[Path]:
    """A launcher started with `env` (without PREFECT_ and RAY_ variables), recorded in
    `state`; stopped on exit. Yields the state folder."""
    path = state / "launcher.sock"
    log = state / "launcher.log"
    env = {k: v for k, v in env.items() if not k.startswith(("PREFECT_", "RAY_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "evalfleet.cli.launcher", str(path)],
        cwd=REPO,
        env={**env, "MPLBACKEND": "Agg"},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while b"launcher ready" not in log.read_bytes():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the launcher did not start"
            time.sleep(0.1)
        daemon = Daemon("launcher", process.pid, process_start_ticks(process.pid), str(log))
        daemon.address = str(path)
        save(Stack(folder=str(state), store="", launcher=daemon))
        yield state
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def launched(state: Path, pid: int) -> bool:
    """Whether the launcher ran a command for the caller `pid` (its log says so)."""
    return f"for pid {pid}\n" in (state / "launcher.log").read_text()
