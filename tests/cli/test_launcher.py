"""The stack's warm launcher (`cli.launcher`), started as `evalfleet up` starts it and recorded in a
stack state file: a delegated command prints and exits exactly as it does run locally, in the
caller's directory and environment; Ctrl-C reaches the run through the caller and the run
stops as a local one does; a SIGKILLed caller takes its run with it; a caller of other code
is refused and runs the command itself."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalfleet.cli import launcher_client
from evalfleet.core.places import process_start_ticks
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import wait_for_no_processes
from tests.support.launcher import launched, running_launcher

pytestmark = pytest.mark.slow  # a launcher process, runs with their own Prefect and Ray

REPO = Path(__file__).resolve().parents[2]
EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    """A launcher recorded in a stack state file, as `evalfleet up` leaves it."""
    with running_launcher(tmp_path_factory.mktemp("warm-state"), dict(os.environ)) as state:
        yield state


def caller_env(state: Path, tag: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    return {**env, "EVALFLEET_STACK": str(state), "EVALFLEET_TEST_TAG": tag, **extra}


def test_a_delegated_command_prints_and_exits_as_a_local_one(launcher, tmp_path):
    tag = f"warm-same-{os.getpid()}"
    (tmp_path / "runs").mkdir()
    outputs = {}
    for mode, extra in {"warm": {}, "local": {"EVALFLEET_NO_LAUNCHER": "1"}}.items():
        for args in (["runs"], ["status", "nosuch"]):
            process = subprocess.Popen(
                [EVALFLEET, *args],
                cwd=tmp_path,  # ./runs, the default store, is the caller's
                env=caller_env(launcher, tag, **extra),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            out, err = process.communicate(timeout=120)
            outputs[(mode, args[0])] = (process.returncode, out, err)
            assert launched(launcher, process.pid) == (mode == "warm"), (mode, args)
    for command in ("runs", "status"):
        assert outputs[("warm", command)] == outputs[("local", command)]
    code, _, err = outputs[("warm", "status")]
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1


def test_a_caller_of_other_code_is_refused(launcher):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(launcher / "launcher.sock"))
    request = {"argv": ["runs"], "cwd": "/", "umask": 0o22, "env": {}, "digest": "0" * 16}
    launcher_client.send_message(conn, request, fds=[0, 1, 2])
    assert launcher_client.receive_message(conn) == {"refused": "the launcher runs other code"}
    conn.close()


def test_a_detached_command_runs_on_its_own_into_the_launchers_log(launcher, tmp_path, monkeypatch):
    """How a run forked by the launcher has the leaderboard rebuilt: by another process forked
    there, which outlives the caller's connection and writes to the launcher's log."""
    monkeypatch.setenv("EVALFLEET_STACK", str(launcher))
    store = tmp_path / "runs"
    store.mkdir()
    pid = launcher_client.start_detached(["runs", "--store", str(store)])
    assert pid is not None
    deadline = time.monotonic() + 60
    while process_start_ticks(pid) is not None:  # ends by itself, its caller long gone
        assert time.monotonic() < deadline, "the detached command did not end"
        time.sleep(0.1)
    log = (launcher / "launcher.log").read_text()
    assert f"pid {pid}: `evalfleet runs` on its own pid {os.getpid()}\n" in log
    assert f"no runs in local directory {store}\n" in log


def run_args(dataset: str, store: Path, sim_url: str, run_id: str) -> list[str]:
    return [
        *("run", "-m", "openai/sim-0.7", "-b", "zerobench", "--dataset-path", dataset),
        *("--protocol", "sampled-k", "--epochs", "6", "--max-in-flight", "2"),
        *("--run-id", run_id, "--store", str(store), "--simulator-url", sim_url),
    ]


def start_run(launcher: Path, tag: str, args: list[str], out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [EVALFLEET, *args],
        cwd=REPO,
        env=caller_env(launcher, tag, TQDM_DISABLE="1"),
        stdout=out.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal gives a command
    )


def wait_for_records(store: Path, run_id: str, count: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 180
    while len(list((store / run_id / "completions").rglob("*.json"))) < count:
        assert process.poll() is None, "the run ended early"
        assert time.monotonic() < deadline, "the run stored nothing"
        time.sleep(0.2)


def test_ctrl_c_reaches_the_run_and_it_stops_as_a_local_one(
    launcher, demo_dataset, answer_key, tmp_path
):
    tag = f"warm-int-{os.getpid()}"
    store = tmp_path / "runs"
    with start_simulator(answer_key, {"latency": {"ms": 500}}, tmp_path / "sim.jsonl") as sim:
        process = start_run(launcher, tag, run_args(demo_dataset, store, sim.url, "int"),
                            tmp_path / "out.txt")  # fmt: skip
        wait_for_records(store, "int", 3, process)
        os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        assert process.wait(timeout=60) == 130
    output = (tmp_path / "out.txt").read_text()
    assert launched(launcher, process.pid)
    assert "resume with: evalfleet run" in output and "--run-id int" in output
    assert wait_for_no_processes(tag, timeout_s=30) == []
    manifest = json.loads((store / "int" / "manifest.json").read_text())
    assert manifest["heartbeat"]["state"] == "interrupted"


def test_a_killed_caller_takes_its_run_with_it(launcher, demo_dataset, answer_key, tmp_path):
    tag = f"warm-kill-{os.getpid()}"
    store = tmp_path / "runs"
    with start_simulator(answer_key, {"latency": {"ms": 500}}, tmp_path / "sim.jsonl") as sim:
        process = start_run(launcher, tag, run_args(demo_dataset, store, sim.url, "kill"),
                            tmp_path / "out.txt")  # fmt: skip
        wait_for_records(store, "kill", 3, process)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        assert wait_for_no_processes(tag, timeout_s=30) == []
    assert launched(launcher, process.pid)
