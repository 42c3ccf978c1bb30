"""Prefect is the control plane, not the data path: losing its server mid-run does not slow
the run, the loss is reported once (the run's own temporary server is started again), and the
run still ends with its tables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.cpu_busy import counters, process_stat
from tests.support.helpers import result_table, tagged_processes, wait_for_no_processes

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


REPO = Path(__file__).resolve().parents[2]
MODELS = ["openai/sim-0.4", "openai/sim-0.6"]
TOTAL = 15 * 40 * 2  # demo samples x (1 greedy + 39 sampled epochs) x models
# Late enough that the rate before the kill is measured over seconds, not a moment.
KILL_AT = 400
USUAL_ITEMS = 200  # the answers before the kill whose longest gap is the usual one
# Answers the run lands while its temporary Prefect server is started again (2 to 5 s at about
# 100 a second on two busy cores): the window where a run that waited on it would stall.
RESTART_ITEMS = 300
SERVER = "evalfleet.stack.prefect_app"  # the command line of the run's temporary server


def finished_times(runs: Path) -> list[float]:
    out = []
    for path in (runs / "lost" / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        out.append(datetime.fromisoformat(record["finished_at"]).timestamp())
    return sorted(out)


def rate(times: list[float], start: int, end: int) -> float:
    return (end - start) / (times[end] - times[start])


def longest_gap(times: list[float]) -> float:
    return max(b - a for a, b in zip(times, times[1:], strict=False))


class CpuLedger:
    """The machine's busy CPU and the run's data path's (every process carrying its tag but its
    Prefect server), sampled every 0.1 s in a thread: how many of the cores other programs and
    the control plane took over a window. On two shared cores another test starting a stack can
    halve a run's rate, and so can the server's own restart (seconds of imports and start-up on
    a busy host, inside the window after the kill); the rate per core left to the data path
    says whether the run itself slowed."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.samples: list[tuple[float, float, float]] = []  # (time, machine, data path)
        self._cpu: dict[int, float] = {}  # the data path's processes: the last CPU-s of each
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.hz = os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> CpuLedger:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        pids: list[int] = []
        rescan = 0.0
        while not self._stop.wait(0.1):
            if time.monotonic() >= rescan:  # new processes of the run (new Ray workers)
                pids = [pid for pid, cmd in tagged_processes(self.tag) if SERVER not in cmd]
                rescan = time.monotonic() + 1.0
            for pid in pids:
                fields = process_stat(pid)
                if fields is not None:  # else ended: its last figure stays counted
                    self._cpu[pid] = (int(fields[11]) + int(fields[12])) / self.hz
            busy = counters()[0] / self.hz
            self.samples.append((time.time(), busy, sum(self._cpu.values())))

    def cores_left(self, start: float, end: float) -> float:
        """The cores not taken by other programs or the run's Prefect server between `start`
        and `end` (epoch seconds)."""
        first = max((s for s in self.samples if s[0] <= start), default=self.samples[0])
        last = min((s for s in self.samples if s[0] >= end), default=self.samples[-1])
        seconds = max(last[0] - first[0], 1e-6)
        others = ((last[1] - first[1]) - (last[2] - first[2])) / seconds
        return max((os.cpu_count() or 1) - others, 0.1)


def test_killing_the_prefect_server_leaves_throughput_alone(demo_dataset, answer_key, tmp_path):
    tag = uuid.uuid4().hex
    runs = tmp_path / "runs"
    env = {**os.environ, "EVALFLEET_TEST_TAG": tag}
    for name in ("RAY_ADDRESS", "PREFECT_API_URL", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
        env.pop(name, None)
    log = tmp_path / "run.log"
    sim_log = tmp_path / "sim.jsonl"
    with (
        start_simulator(answer_key, {"latency": {"ms": 100}}, sim_log) as sim,
        CpuLedger(tag) as cpu,
    ):
        args = ["run", "--dataset-path", demo_dataset, "--epochs", "39", "--run-id", "lost"]
        args += ["--store", str(runs), "--simulator-url", sim.url, "--max-in-flight", "16"]
        args += [arg for model in MODELS for arg in ("-m", model)]
        process = subprocess.Popen(
            [sys.executable, "-m", "evalfleet.cli.main", *args],
            cwd=REPO,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 240
        # records only: the run's manifest is a JSON file too
        while len(list((runs / "lost" / "completions").rglob("*.json"))) < KILL_AT:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        servers = [pid for pid, cmd in tagged_processes(tag) if SERVER in cmd]
        assert len(servers) == 1, tagged_processes(tag)
        os.kill(servers[0], signal.SIGKILL)
        killed_at = time.time()
        process.wait(timeout=300)
    output = log.read_text()
    assert process.returncode == 0, output
    assert output.count("the temporary Prefect server stopped: starting it again") == 1, output
    assert "unreachable" not in output and "could not be finished" not in output, output
    assert "Traceback" not in output, output

    times = finished_times(runs)
    assert len(times) == TOTAL
    killed = sum(t < killed_at for t in times)
    assert KILL_AT <= killed < TOTAL - 2 * RESTART_ITEMS
    # No stall: while the server is started again, answers keep landing as they did before.
    stall = longest_gap(times[killed - 1 : killed + RESTART_ITEMS])  # the kill's gap too
    usual = longest_gap(times[killed - USUAL_ITEMS : killed])
    assert stall <= max(1.0, 3 * usual), f"{stall:.2f} s without an answer after the kill"
    # No slower run once it is up again (the restart's own CPU aside).
    before = rate(times, 50, killed - 1)
    after = rate(times, killed + RESTART_ITEMS, TOTAL - 50)
    if after < 0.8 * before:  # as fast per core left to it, when other programs took more
        left_before = cpu.cores_left(times[50], times[killed - 1])
        left_after = cpu.cores_left(times[killed + RESTART_ITEMS], times[TOTAL - 50])
        assert after / left_after >= 0.8 * before / left_before, (
            f"{before:.1f} items/s before the kill ({left_before:.2f} cores left to the run), "
            f"{after:.1f} after ({left_after:.2f})"
        )
    summary = result_table(runs, "lost", "summary_zerobench.parquet")
    assert sorted(summary.model.unique()) == MODELS
    assert wait_for_no_processes(tag) == []
