"""A command that did not do its job says so.

- A run whose every call fails (the simulator answers 500 to everything) stops asking after
  the first few, writes no tables, and exits 4 with one line naming the model, its endpoint
  and the error, then the command that resumes it.
- `evalfleet judge` at a dead endpoint is refused in one line (exit 2) before anything is
  asked or written; one whose every call fails (the endpoint answers 500) exits 4 with the
  run's line, and leaves the run as it was: every file of it byte for byte (identity, history,
  heartbeat, results), nothing kept under the judge's judgements.
- `evalfleet judge` with nothing to grade says so, exits 0, and leaves the run as it was.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.simulator.process import start_simulator
from evalfleet.tasks.endpoints import DOWN_AFTER
from tests.support.cli_here import evalfleet_here

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

evalfleet = evalfleet_here  # in this process, on the session's Ray and Prefect server


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def dead_url() -> str:
    """An address nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_run_whose_every_call_fails_stops_early_and_names_the_endpoint(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    config = {"latency": {"ms": 5}, "faults": {"http_500": 1.0}}
    with start_simulator(answer_key, config, log) as sim:
        args = ["run", "-m", "openai/sim-0.5", "--dataset-path", demo_dataset]
        args += ["--store", str(runs), "--simulator-url", sim.url, "--run-id", "down"]
        args += ["--max-in-flight", "2", "--max-attempts", "1"]
        done = evalfleet(*args)
        sim.flush_log()
    assert done.returncode == 4, done.stderr
    (line,) = errors(done.stderr)
    assert line.startswith(
        f"error: run down stopped: every call to openai/sim-0.5 at {sim.url}/v1 (server_error: "
    )
    assert line.endswith(
        "failed: it was not asked again; check that the endpoint is up and its key is right; "
        "then run the same command again: it asks only what is not stored"
    )
    assert f"resume with: evalfleet {' '.join(args)}" in done.stderr.splitlines()
    # the first DOWN_AFTER failed, and at most the other call in flight then: of 90 items
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert DOWN_AFTER <= len(asked) <= DOWN_AFTER + 1
    assert {entry["status"] for entry in asked} == {500}
    assert not (runs / "down" / "results").exists()  # nothing aggregated


def test_a_judge_whose_every_call_fails_leaves_the_run_as_it_was(session_services, tmp_path):
    runs = tmp_path / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert main(["demo", "-b", "rome", "--run-id", "rome", "--store", str(runs)]) == 0
    before = files(runs / "rome")
    args = ["judge", "rome", "--judge", "openai/sim-0.8", "--store", str(runs)]
    # a dead endpoint: checked once before anything is asked or written (one line, exit 2)
    url = dead_url()
    done = evalfleet(*args, "--simulator-url", url)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: judge openai/sim-0.8 at {url}/v1 does not answer (connection refused): "
        "nothing was asked or written; start `evalfleet simulate` and pass its URL with "
        "--simulator-url (the simulator a demo started ends with the demo)\n",
    )
    assert files(runs / "rome") == before
    # an endpoint that answers 500 to every call
    with start_simulator(None, {"latency": {"ms": 1}, "faults": {"http_500": 1.0}}) as sim:
        done = evalfleet(*args, "--simulator-url", sim.url)
    assert done.returncode == 4, done.stderr
    (line,) = errors(done.stderr)
    assert line.startswith(
        f"error: run rome stopped: every call to openai/sim-0.8 at {sim.url}/v1 (server_error: "
    )
    assert "Traceback" not in done.stderr
    # the run as it was: its identity, history, heartbeat, plans, results, judgements
    assert files(runs / "rome") == before
    judged = runs / "rome" / "judgements" / "openai%2Fsim-0.8"
    assert [p for p in judged.rglob("*") if p.is_file()] == []


def test_a_judge_with_nothing_to_grade_says_so_and_leaves_the_run_as_it_was(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs = tmp_path / "runs"
    with start_simulator(answer_key, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
        args = ["run", "-m", "openai/sim-0.5", "-b", "zerobench", "--limit", "2"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--simulator-url", sim.url]
        assert evalfleet(*args, "--run-id", "formatted").returncode == 0
        before = files(runs / "formatted")
        # every answer is in the asked format: ZeroBench's judge reads none of them
        done = evalfleet("judge", "formatted", "--judge", "openai/sim-0.8", "--store", str(runs))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        "judge openai/sim-0.8 found nothing to grade in run formatted (its benchmarks' judges "
        "read none of the stored answers): the run is left as it was"
    )
    assert files(runs / "formatted") == before
