"""The processes a command starts for itself (its Prefect server, its Ray head): each in its
own process group, so that a terminal's Ctrl-C reaches only the command, which then stops
them in order; each bound to the command's life (`evalfleet.core.fate`), so that none outlives it,
even after a SIGKILL; each writing to its own log file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from evalfleet.core import fate
from evalfleet.core.checkout import ROOT
from evalfleet.core.interpreter import module_command


class Child:
    """A command run in a new process."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_path: Path):
        self._open(name, log_path)
        wrapped = [*module_command("evalfleet.core.fate", str(os.getpid()), "--"), *command]
        self.process = subprocess.Popen(
            wrapped,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )
        self.pid = self.process.pid

    def _open(self, name: str, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self.ready = False
        self._log = log_path.open("ab")

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

    def terminate(self) -> None:
        """SIGTERM the group (not waiting)."""
        self._signal(signal.SIGTERM)

    def stop(self, grace_s: float) -> None:
        """SIGTERM the group, then SIGKILL what is left after `grace_s`."""
        self.terminate()
        self._wait(grace_s)
        self._signal(signal.SIGKILL)
        self._wait(5)
        self._log.close()

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _wait(self, timeout_s: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout_s)

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


class ForkedChild(Child):
    """A function run in a fork of this process: it starts with everything this process has
    imported. Only fork a process with one thread (a fork copies the locks other threads
    hold, not the threads). `title` is what `ps` shows of it (else the parent's command)."""

    def __init__(
        self,
        name: str,
        target: Callable[[], None],
        env: dict[str, str],
        log_path: Path,
        title: str,
    ):
        self._open(name, log_path)
        self._status: int | None = None
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_forked(parent, target, env, self._log.fileno(), title)
        self.pid = pid

    def alive(self) -> bool:
        if self._status is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                done, status = self.pid, 0
            if done:
                self._status = status
        return self._status is None

    def _wait(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)


def _run_forked(parent: int, target: Callable[[], None], env: dict[str, str], log: int, title: str):
    """In the forked process: a session of its own, bound to the parent, output to the log,
    the parent's signal handlers gone; then `target`, and exit without the parent's exit
    handlers."""
    code = 1
    try:
        from setproctitle import setproctitle

        setproctitle(f"{title}  (forked from pid {parent})")
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.close(stdin)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.environ.clear()
        os.environ.update(env)
        if fate.die_with(parent):
            target()
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
