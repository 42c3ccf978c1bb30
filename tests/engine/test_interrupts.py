"""Ctrl-C and SIGTERM stop a run cleanly, in every mode, and leave no process behind.

The run is started as a terminal starts a job: in a process group of its own, with no Prefect
server and no Ray cluster configured (so it starts both), and a marker in its environment that
every process it starts inherits. The signal goes to the whole process group, as a terminal
sends Ctrl-C. Afterwards no process carrying the marker may remain, the run must have stopped
within 15 s with the right exit code, and a resume must not ask anything twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from evalfleet.stack.scratch import Scratch
from tests.support.helpers import scratch_of, tagged_processes, wait_for_no_processes

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


REPO = Path(__file__).resolve().parents[2]
MODEL = "openai/sim-0.5"
EPOCHS = 19  # zerobench-paper: 20 epochs x 15 demo samples = 300 answers


def run_args(runs: Path, run_id: str, sim_url: str, dataset: str) -> list[str]:
    return [
        "run",
        "-m",
        MODEL,
        "--dataset-path",
        dataset,
        "--epochs",
        str(EPOCHS),
        "--run-id",
        run_id,
        "--store",
        str(runs),
        "--simulator-url",
        sim_url,
        "--max-in-flight",
        "8",
        "--workers",
        "1",
    ]


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evalfleet.cli.main", *args],
        cwd=REPO,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a shell's job
    )


def default_mode_env(tag: str) -> dict[str, str]:
    env = {**os.environ, "EVALFLEET_TEST_TAG": tag}
    for name in ("RAY_ADDRESS", "PREFECT_API_URL", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
        env.pop(name, None)
    env.pop("TQDM_DISABLE", None)  # the progress bar says when requests are in flight
    return env


def records(runs: Path, run_id: str) -> list[Path]:
    root = runs / run_id / "completions"
    return sorted(root.rglob("*.json")) if root.exists() else []


def wait_for_records(process: subprocess.Popen, runs: Path, run_id: str, n: int, log: Path):
    deadline = time.monotonic() + 240
    while len(records(runs, run_id)) < n:
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the run stored nothing in time: " + log.read_text()
        time.sleep(0.1)


def interrupt_and_wait(process: subprocess.Popen, sig: int, *, group: bool) -> float:
    started = time.monotonic()
    if group:
        os.killpg(process.pid, sig)
    else:
        process.send_signal(sig)
    process.wait(timeout=60)
    return time.monotonic() - started


def asked_twice(sim_log: Path) -> list[tuple[str, int]]:
    lines = [json.loads(x) for x in sim_log.read_text().splitlines()]
    asked = Counter((line["prompt_sha256"], line["seed"]) for line in lines)
    return [request for request, n in asked.items() if n > 1]


@pytest.mark.parametrize(
    ("sig", "group", "code"),
    [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)],
    ids=["ctrl-c-to-the-group", "sigterm-to-the-command"],
)
def test_a_signal_stops_the_run_cleanly_and_a_resume_finishes_it(
    sig, group, code, ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    tag = uuid.uuid4().hex
    runs = tmp_path / "runs"
    sim_log = tmp_path / "sim.jsonl"
    with start_simulator(answer_key, {"latency": {"ms": 300}}, sim_log) as sim:
        args = run_args(runs, "stop", sim.url, demo_dataset)
        log = tmp_path / "first.log"
        first = start(args, default_mode_env(tag), log)
        wait_for_records(first, runs, "stop", 40, log)
        took = interrupt_and_wait(first, sig, group=group)
        output = log.read_text()
        assert first.returncode == code, output
        assert took < 15, f"stopping took {took:.1f} s"
        assert "Traceback" not in output, output
        name = signal.Signals(sig).name
        assert f"run stop interrupted by {name}:" in output
        assert "resume with: evalfleet run -m openai/sim-0.5" in output
        assert "--run-id stop" in output
        assert wait_for_no_processes(tag, timeout_s=30) == []
        stored = len(records(runs, "stop"))
        assert 40 <= stored < 300

        # The resume (here joining the test session's Ray and Prefect) asks only the rest.
        resume_env = {
            **os.environ,
            "EVALFLEET_TEST_TAG": tag,
            "RAY_ADDRESS": ray_address,
            "PREFECT_API_URL": prefect_api_url,
        }
        second = subprocess.run(
            [sys.executable, "-m", "evalfleet.cli.main", *args],
            cwd=REPO,
            env=resume_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"{stored} done, 0 failed, 0 stale, {300 - stored} missing" in second.stderr
        sim.flush_log()
    assert len(records(runs, "stop")) == 300
    assert asked_twice(sim_log) == []
    assert wait_for_no_processes(tag, timeout_s=30) == []


def test_a_second_ctrl_c_stops_at_once(answer_key, demo_dataset, tmp_path):
    """With calls that take 20 s, the first Ctrl-C would wait for them; the second does not."""
    tag = uuid.uuid4().hex
    runs = tmp_path / "runs"
    with start_simulator(answer_key, {"latency": {"ms": 20_000}}, tmp_path / "sim.jsonl") as sim:
        log = tmp_path / "run.log"
        process = start(run_args(runs, "twice", sim.url, demo_dataset), default_mode_env(tag), log)
        deadline = time.monotonic() + 240
        while sim.in_flight() < 8:  # every call the run may have in flight is waiting
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)
        time.sleep(0.5)
        took = interrupt_and_wait(process, signal.SIGINT, group=True)
    output = log.read_text()
    assert process.returncode == 130, output
    assert took < 5, f"the second Ctrl-C took {took:.1f} s"
    assert "SIGINT again: stopping now" in output
    assert "Traceback" not in output, output
    assert wait_for_no_processes(tag, timeout_s=30) == []
    assert records(runs, "twice") == []  # nothing had landed; nothing half-written either
    assert scratch_of(process.pid) == []  # the forced exit still removed the services' folder


def test_nothing_outlives_a_sigkilled_run(answer_key, demo_dataset, tmp_path):
    """SIGKILL leaves no chance to clean up: what the run started goes with it anyway."""
    tag = uuid.uuid4().hex
    runs = tmp_path / "runs"
    with start_simulator(answer_key, {"latency": {"ms": 300}}, tmp_path / "sim.jsonl") as sim:
        log = tmp_path / "run.log"
        process = start(run_args(runs, "killed", sim.url, demo_dataset), default_mode_env(tag), log)
        wait_for_records(process, runs, "killed", 20, log)
        started = " ".join(cmd for _, cmd in tagged_processes(tag))
        for part in ("evalfleet.stack.prefect_app", "raylet", "gcs_server", "CompletionWorker"):
            assert part in started  # the test kills a run that started all of these
        process.kill()  # the command only: its children must notice on their own
        process.wait(timeout=30)
        assert wait_for_no_processes(tag, timeout_s=30) == []
    # its services' folder had no chance to go; the next command that starts one sweeps it
    # (a command of another test running beside this one may have swept it already)
    Scratch().remove()
    assert scratch_of(process.pid) == []
