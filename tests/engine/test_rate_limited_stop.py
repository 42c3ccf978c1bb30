"""A provider that answers 429 asking to wait an hour: the run stops asking that model after
its first call, exits 4, and says what happened (rate limited, until when, wait), not that the
endpoint is down or its key wrong."""

from __future__ import annotations

import json
import re

import pytest

from evalfleet.cli.main import main
from evalfleet.simulator.process import start_simulator

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

AN_HOUR = {"fail_first_n": 100, "fail_first_status": 429, "retry_after_ms": 3_600_000}


def test_a_429_asking_for_an_hour_stops_the_model_and_says_so(
    session_services, demo_dataset, answer_key, tmp_path, capsys
):
    log = tmp_path / "sim.jsonl"
    with start_simulator(answer_key, {"faults": AN_HOUR}, log) as sim:
        args = ["run", "-m", "openai/sim-0.5", "-b", "zerobench", "--epochs", "1"]
        args += ["--dataset-path", demo_dataset, "--store", str(tmp_path / "runs")]
        args += ["--simulator-url", sim.url, "--run-id", "hour", "--max-in-flight", "1"]
        code = main(args)
        sim.flush_log()
    err = capsys.readouterr().err
    assert code == 4, err
    [line] = [x for x in err.splitlines() if x.startswith("error: ")]
    assert re.fullmatch(
        rf"error: run hour stopped: openai/sim-0\.5 at {sim.url}/v1 kept answering 429, rate "
        r"limited \(the provider asked to wait 1 h \(Retry-After\), until \d{4}-\d\d-\d\d "
        r"\d\d:\d\d UTC: Error code: 429 - .*\), past what a call may wait "
        r"\(--max-rate-limited-seconds\): it was not asked again in this run; wait until its "
        r"limit resets; then run the same command again: it asks only what is not stored",
        line,
    ), line
    asked = [json.loads(x) for x in log.read_text().splitlines()]
    assert [entry["status"] for entry in asked] == [429]  # of 24 items, one was asked
