"""A small run runs in the command's own process (no Ray head, no Prefect server) with the
same records and tables as the full path; `evalfleet limits` retunes it live; the leaderboard
takes a run's rows without reading the other runs again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.simulator.process import start_simulator
from evalfleet.storage import open_store
from tests.support.cli_here import evalfleet_here

MODEL = "openai/sim-0.5"


@pytest.fixture(scope="module")
def sim(answer_key, tmp_path_factory):
    log = tmp_path_factory.mktemp("small-sim") / "requests.jsonl"
    config = {"latency": {"ms": 50}, "rules": [{"match": "sim-0.7", "requests_per_minute": 600}]}
    with start_simulator(answer_key, config, log) as handle:
        yield handle


def evalfleet(
    *args: str, env: dict[str, str] | None = None, python: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    here = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PREFECT_API_URL")}
    return subprocess.run(
        [sys.executable, *python, "-m", "evalfleet.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**here, **(env or {})},
    )


def small_run(
    store: Path, dataset: str, sim, run_id: str, *more: str, model: str = MODEL, python=()
):
    return evalfleet(
        *("run", "-m", model, "-b", "zerobench", "--dataset-path", dataset, "--limit", "3"),
        *("--epochs", "1", "--protocol", "greedy", "--store", str(store), "--run-id", run_id),
        *("--simulator-url", sim.url, *more),
        python=python,
    )


def imported(stderr: str) -> set[str]:
    """The top-level packages a command imported, from its `-X importtime` lines."""
    lines = [line for line in stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in lines[1:]}


def answers(store: Path, run_id: str) -> dict[str, tuple[str, int, int]]:
    """Each stored answer's (text, input tokens, output tokens), by sample."""
    out = {}
    for path in sorted((store / run_id / "completions").rglob("*.json")):
        record = json.loads(path.read_text())
        usage = record["usage"]
        out[path.parent.name] = (
            record["response"],
            usage["input_tokens"],
            usage["output_tokens"],
        )
    return out


def test_a_small_run_starts_no_service_and_its_leaderboard_keeps_its_rows(
    demo_dataset, sim, tmp_path
):
    store = tmp_path / "runs"
    first = small_run(store, demo_dataset, sim, "small-a", python=("-X", "importtime"))
    assert first.returncode == 0, first.stderr[-2000:]
    assert "Flow run" not in first.stdout + first.stderr  # no Prefect flow run
    assert "Ray" not in first.stderr
    # not even imported: each is half a second to a second of CPU at every small run
    assert {"openai", "pandas"} <= imported(first.stderr)
    assert {"ray", "prefect"} & imported(first.stderr) == set()
    assert len(answers(store, "small-a")) == 3
    second = small_run(store, demo_dataset, sim, "small-b", model="anthropic/sim-0.6")
    assert second.returncode == 0, second.stderr[-2000:]
    kept = json.loads((store / "leaderboard" / "rows.json").read_text())
    assert sorted(kept["runs"]) == ["small-a", "small-b"]

    from evalfleet.reports.leaderboard import update

    opened = open_store(str(store))
    incremental = pd.read_parquet(store / "leaderboard" / "leaderboard.parquet")
    full, _ = update(opened)  # the whole store read again: the same table
    pd.testing.assert_frame_equal(
        incremental.drop(columns=["written_at"]), full.table.drop(columns=["written_at"])
    )
    # small-a's tables gone: an update after small-b does not read them, a full one does
    for table in (store / "small-a" / "results").rglob("metrics.parquet"):
        table.unlink()
    board, _ = update(opened, "small-b")
    assert sorted(set(board.table["run_id"])) == ["small-a", "small-b"] and not board.damaged
    board, _ = update(opened)
    assert sorted(set(board.table["run_id"])) == ["small-b"] and len(board.damaged) == 1


def test_limits_refuses_bad_input_in_one_line(demo_dataset, sim, tmp_path):
    store = tmp_path / "runs"
    assert small_run(store, demo_dataset, sim, "lim").returncode == 0
    where = ("--store", str(store))
    # `limits` starts no service: in this process (a subprocess would add 2 s of imports each)
    for args, words in (
        (("lim",), "nothing to retune: give --rpm, --tpm or --max-in-flight"),
        (("lim", "--rpm", "openai/nope=5"), "'openai/nope' is not a model of this run"),
        (("lim", "--max-in-flight", "0"), "expected a whole number of at least 1"),
        (("lim", "--tpm", "x"), "--tpm 'x': expected a whole number of at least 1"),
        (("nosuch", "--rpm", "5"), "nosuch"),
    ):
        done = evalfleet_here("limits", *args, *where)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert not (store / "lim" / "control.json").exists()
    done = evalfleet_here("limits", "lim", "--rpm", "300", "--rpm", f"{MODEL}=60", *where)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"run lim retuned (#1): rpm 300, {MODEL}=60")
    control = json.loads((store / "lim" / "control.json").read_text())
    assert (control["seq"], control["rpm"]) == (1, {"*": 300, MODEL: 60})
    history = json.loads((store / "lim" / "manifest.json").read_text())["history"]
    assert [e["event"] for e in history] == ["created", f"retuned #1: rpm 300, {MODEL}=60"]

    # The Prefect UI's `limits` deployment runs the same retune (its flow's body, here).
    from evalfleet.flows.limits import limits

    said = limits.fn("lim", tpm=("5000",), max_in_flight=4, store=str(store))
    assert said.startswith(f"run lim retuned (#2): rpm 300, {MODEL}=60, tpm 5000, max in flight 4")
    control = json.loads((store / "lim" / "control.json").read_text())
    assert (control["seq"], control["tpm"], control["max_in_flight"]) == (2, {"*": 5000}, 4)
    history = json.loads((store / "lim" / "manifest.json").read_text())["history"]
    assert history[-1]["event"] == f"retuned #2: rpm 300, {MODEL}=60, tpm 5000, max in flight 4"


@pytest.mark.slow  # about 17 s: the run is watched for 6 s after its retune
def test_a_retune_holds_on_a_live_run_within_seconds(demo_dataset, sim, tmp_path):
    """A run at the simulator's 600 rpm (learnt from its headers) is retuned to 30 rpm: two
    seconds later it sends at most what 30 rpm allows."""
    store = tmp_path / "runs"
    sim.reset()
    model = "openai/sim-0.7"
    args = ["run", "-m", model, "-b", "zerobench", "--dataset-path", demo_dataset]
    args += ["--limit", "8", "--epochs", "20", "--store", str(store), "--run-id", "live"]
    args += ["--simulator-url", sim.url]
    here = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PREFECT_API_URL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalfleet.cli.main", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=here,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(admitted(sim)) < 5:
            time.sleep(0.2)
        assert len(admitted(sim)) >= 5
        done = evalfleet("limits", "live", "--rpm", "30", "--store", str(store))
        assert done.returncode == 0, done.stderr
        retuned = time.time()
        time.sleep(6.0)
        after = [t for t in admitted(sim) if t >= retuned + 2.0]
        assert proc.poll() is None  # 20 epochs at 30 rpm: still running
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert len(after) <= 3, after  # 30 rpm: 2 in 4 s, and a burst of one


def admitted(sim) -> list[float]:
    return [
        e["t"] for e in sim.read_log() if e.get("model") == "sim-0.7" and e.get("status") == 200
    ]


@pytest.mark.slow
def test_the_small_path_stores_what_the_full_path_stores(
    demo_dataset, sim, tmp_path, ray_address, prefect_api_url
):
    here, full = tmp_path / "here", tmp_path / "full"
    done = small_run(here, demo_dataset, sim, "same")
    assert done.returncode == 0, done.stderr[-2000:]
    services = {"RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    done = evalfleet(
        *("run", "-m", MODEL, "-b", "zerobench", "--dataset-path", demo_dataset, "--limit", "3"),
        *("--epochs", "1", "--protocol", "greedy", "--store", str(full), "--run-id", "same"),
        *("--simulator-url", sim.url),
        env=services,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert answers(here, "same") == answers(full, "same") and len(answers(full, "same")) == 3
    for name in ("metrics.parquet", "samples.parquet", "usage.parquet"):
        a = pd.read_parquet(next((here / "same" / "results").rglob(name)))
        b = pd.read_parquet(next((full / "same" / "results").rglob(name)))
        timing = [c for c in a.columns if "latency" in c or c.endswith("_at")]
        pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing))
