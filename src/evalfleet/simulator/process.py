"""Run the simulator for tests and demos: in a child process (``start_simulator``) or on a
background thread of this process (``start_simulator_in_thread``, faster to start)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import selectors
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from evalfleet.core.interpreter import module_command
from evalfleet.simulator.answering import AnswerKey
from evalfleet.simulator.config import SimulatorConfig, config_from_dict, load_config

_LISTENING = re.compile(r"listening on (http://\S+)")

ConfigLike = SimulatorConfig | dict[str, Any] | str | Path | None


class SimulatorStartError(RuntimeError):
    """The simulator did not come up."""


class SimulatorHandle:
    """A running simulator: its URLs, its request log, and how to stop it."""

    def __init__(
        self,
        url: str,
        log_path: Path | None,
        stop: Callable[[], object],
        pid: int | None = None,
    ) -> None:
        self.url = url
        self.log_path = log_path
        self.pid = pid  # the child process, or None when running on a thread
        self._stop: Callable[[], object] | None = stop

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def gemini_base_url(self) -> str:
        return self.url

    def _post(self, path: str, body: dict[str, Any] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def in_flight(self) -> int:
        """The model requests the simulator has received and not yet answered."""
        with urllib.request.urlopen(self.url + "/health", timeout=10) as response:
            return int(json.loads(response.read())["in_flight"])

    def flush_log(self) -> None:
        """Make every request answered so far visible in the log file."""
        self._post("/_sim/flush")

    def reset(self) -> None:
        """Forget rate-limit windows and per-request attempt counts."""
        self._post("/_sim/reset")

    def advance_batches(self, seconds: float) -> None:
        """Move the batch clock ``seconds`` forward (batches progress, expire, end)."""
        self._post("/_sim/batches/advance", {"seconds": seconds})

    def read_log(self) -> list[dict[str, Any]]:
        """Flush, then parse the request log (empty without a log file)."""
        if self.log_path is None:
            return []
        self.flush_log()
        if not self.log_path.exists():
            return []
        with self.log_path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self) -> None:
        if self._stop is not None:
            stop, self._stop = self._stop, None
            stop()

    def __enter__(self) -> SimulatorHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _as_config(config: ConfigLike) -> SimulatorConfig:
    if config is None:
        return SimulatorConfig()
    if isinstance(config, SimulatorConfig):
        return config
    if isinstance(config, dict):
        return config_from_dict(config)
    return load_config(config)


def _wait_healthy(url: str, deadline: float) -> None:
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SimulatorStartError(f"simulator at {url} did not answer /health")
        time.sleep(0.05)


def _read_listening_line(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=0.1):
                if proc.poll() is not None:
                    break
                continue
            line = proc.stdout.readline()
            if not line:
                break
            match = _LISTENING.search(line)
            if match:
                return match.group(1)
    raise SimulatorStartError("the simulator process exited or did not report its address")


def start_simulator(
    answer_key_path: str | Path | None,
    config: ConfigLike = None,
    log_path: str | Path | None = None,
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    startup_timeout_s: float = 30.0,
) -> SimulatorHandle:
    """Start ``python -m evalfleet.simulator.cli serve`` in a child process.

    ``config`` may be a SimulatorConfig, a dict or a config file path; ``port=0`` picks a free
    port. Returns once ``GET /health`` answers. Stop it with ``.stop()`` or a ``with`` block.
    Nothing is left on disk however the caller ends (SIGKILL included): the config goes on
    the child's standard input and its standard error to a file without a name.
    """
    cfg = _as_config(config).model_copy(update={"host": host, "port": port})
    cmd = module_command("evalfleet.simulator.cli", "serve", "--config", "-")
    if answer_key_path is not None:
        cmd += ["--answers", os.path.abspath(answer_key_path)]  # the caller's relative path
    if log_path is not None:
        cmd += ["--log", os.path.abspath(log_path)]
    env = dict(os.environ)
    # unlinked already: gone with the last process that holds it; closed by end()
    stderr: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
    # Its own process group (a Ctrl-C meant for the caller does not cut it off mid-run) and
    # bound to the caller's life (evalfleet.core.fate), so it never outlives it.
    proc = subprocess.Popen(
        [*module_command("evalfleet.core.fate", str(os.getpid()), "--"), *cmd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # a child that died at once says why below
        proc.stdin.write(cfg.model_dump_json())
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    deadline = time.monotonic() + startup_timeout_s

    def end(last_line: bool = False) -> str:
        """Stop the child; with `last_line`, the last line it wrote to standard error."""
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        lines = []
        if last_line:
            stderr.seek(0)
            lines = stderr.read().strip().splitlines()
        stderr.close()
        return lines[-1] if lines else ""

    try:
        url = _read_listening_line(proc, deadline)
        _wait_healthy(url, deadline)
    except SimulatorStartError as err:
        last = end(last_line=True)
        raise SimulatorStartError(f"{err}{f': {last}' if last else ''}") from None
    return SimulatorHandle(url, Path(log_path) if log_path is not None else None, end, proc.pid)


def start_simulator_in_thread(
    answer_key: AnswerKey | str | Path | None,
    config: ConfigLike = None,
    log_path: str | Path | None = None,
    port: int = 0,
    *,
    host: str = "127.0.0.1",
) -> SimulatorHandle:
    """Run the simulator on its own event loop in a daemon thread of this process."""
    from evalfleet.simulator.server import (
        SimulatorServer,  # aiohttp: only where the server runs here
    )

    cfg = _as_config(config).model_copy(update={"host": host, "port": port})
    if answer_key is None:
        key = AnswerKey()
    elif isinstance(answer_key, AnswerKey):
        key = answer_key
    else:
        key = AnswerKey.load(answer_key)
    server = SimulatorServer(cfg, key, str(log_path) if log_path is not None else None)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="evalfleet-simulator", daemon=True)
    thread.start()
    try:
        url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=30)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        raise

    def stop() -> None:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

    return SimulatorHandle(url, Path(log_path) if log_path is not None else None, stop)
