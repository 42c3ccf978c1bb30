"""SIGKILL a run part-way, run the same run id again: nothing stored is requested twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.helpers import parse, prompt_hashes

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
TOTAL = (4 + 11) * 6  # demo dataset samples x epochs, one model


def completion_files(runs: Path, run_id: str) -> list[Path]:
    root = runs / run_id / "completions"
    return sorted(p for p in root.rglob("*.json")) if root.exists() else []


def cli(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evalfleet.cli.main", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **kwargs,
    )


def test_sigkill_then_resume_requests_only_missing_items(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):

    runs = tmp_path / "runs"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    prompt_hash = prompt_hashes(demo_dataset)
    with start_simulator(answer_key, {"latency": {"ms": 300}}, tmp_path / "sim.jsonl") as sim:
        args = [
            "run",
            "--model",
            "openai/sim-0.5",
            "--dataset-path",
            demo_dataset,
            "--run-id",
            "crash",
            "--store",
            str(runs),
            "--simulator-url",
            sim.url,
            "--max-in-flight",
            "4",
            "--workers",
            "1",
        ]
        first = cli(args, env)
        deadline = time.monotonic() + 180
        while len(completion_files(runs, "crash")) < 20:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the first run stored nothing in time"
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert first.returncode == -signal.SIGKILL

        stored_before = [json.loads(p.read_text()) for p in completion_files(runs, "crash")]
        assert 20 <= len(stored_before) < TOTAL
        done_requests = {
            (prompt_hash[(r["benchmark"], r["sample_id"])], r["request"]["seed"])
            for r in stored_before
        }
        resumed_at = time.time()
        second = cli(args, env)
        output, _ = second.communicate(timeout=300)
        assert second.returncode == 0, output
        assert "| openai/sim-0.5 | zerobench" in output

    log = [json.loads(line) for line in (tmp_path / "sim.jsonl").read_text().splitlines()]
    after = [line for line in log if line["t"] >= resumed_at]
    assert after, "the resumed run sent nothing"
    again = [line for line in after if (line["prompt_sha256"], line["seed"]) in done_requests]
    assert again == []
    # Every item ends with exactly one record, and the resume asked only for the rest.
    files = completion_files(runs, "crash")
    idents = Counter(
        (n.benchmark, n.sample_id, n.epoch)
        for n in (parse("crash", str(p.relative_to(runs))) for p in files)
    )
    assert len(idents) == TOTAL
    assert set(idents.values()) == {1}
    assert len(after) <= TOTAL - len(stored_before) + 4  # + the 4 that were in flight
