"""Every cent accounted: what the simulator billed (each 200 in its request log, priced at the
registry's prices) is what the run records, caps and reports, with retried empty answers,
answers that spent their output limit thinking, answers without usage and answers whose usage
cannot be true."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from evalfleet.core.record import Record
from evalfleet.engine.run.ledger import unrecorded
from evalfleet.providers.registry import resolve_model
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import open_store
from tests.support.cli_here import evalfleet_here

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server and the simulator

RULES = [
    {"match": "*-empty", "faults": {"empty_content": 1.0}},
    {"match": "*-spent", "faults": {"empty_length": 1.0}},
    {"match": "*-nousage", "faults": {"no_usage": 1.0}},
    {"match": "*-negusage", "faults": {"negative_usage": 1.0}},
    {"match": "*-halfempty", "faults": {"empty_content": 0.5}},
]
ITEMS = 4  # --limit 2, --epochs 1: two samples, greedy and one sampled epoch


def billed(log: Path, sim_url: str) -> dict[str, float]:
    """USD billed per request id: each 200 the simulator answered, at the registry's price."""
    out = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["status"] != 200:
            continue
        provider = entry["route"].split(".")[0].replace("gemini", "google")
        config = resolve_model(f"{provider}/{entry['model']}", simulator_url=sim_url)
        out[entry["request_id"]] = config.cost_usd(entry["input_tokens"], entry["output_tokens"])
    return out


def records(runs: Path, run_id: str) -> list[Record]:
    paths = (runs / run_id / "completions").rglob("*.json")
    return [Record.from_bytes(p.read_bytes()) for p in paths]


def recorded_attempts(runs: Path, run_id: str) -> dict[str, float]:
    """USD recorded per request id: every billed attempt of every record, and the ledger
    entries of calls that stored none."""
    out = {}
    for record in records(runs, run_id):
        for attempt in record.ledger:
            if attempt.billed:
                out[attempt.request_id] = attempt.cost_usd
    for entry in unrecorded(open_store(str(runs)), run_id):
        out[entry.attempt.request_id] = entry.attempt.cost_usd
    return out


@pytest.fixture
def run_cli(session_services):
    """`evalfleet` in this process, on the session's Ray and Prefect server (a subprocess
    would add its imports and Ray workers of its own to each run)."""
    return evalfleet_here


def test_retried_and_empty_answers_are_recorded_as_billed(
    run_cli, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    models = ["openai/sim-0.5-empty", "anthropic/sim-0.5-spent"]
    with start_simulator(answer_key, {"rules": RULES, "latency": {"ms": 2}}, log) as sim:
        args = ["run", *(x for m in models for x in ("-m", m)), "-b", "zerobench"]
        args += ["--limit", "2", "--epochs", "1", "--dataset-path", demo_dataset]
        args += ["--store", str(runs), "--run-id", "bill", "--simulator-url", sim.url]
        done = run_cli(*args)
        sim.flush_log()
        bill = billed(log, sim.url)
    assert done.returncode == 5, done.stderr  # every item ended in an error
    assert done.stdout.splitlines()[-1] == (
        "run bill: 8 of 8 items ended in errors (empty_answer 4, output_limit 4): exit 5; ask "
        f"them again with: evalfleet {shlex.join(args)} (or pass --allow-errors to accept them "
        "and exit 0)"
    )
    stored = records(runs, "bill")
    assert len(stored) == 2 * ITEMS and all(r.failed for r in stored)
    by_kind = {}
    for record in stored:
        by_kind.setdefault(record.model, set()).add(record.error.type)
    assert by_kind == {models[0]: {"empty_answer"}, models[1]: {"output_limit"}}
    # an empty answer is asked three times (two retries); one cut off by its limit once
    assert sorted(len(r.ledger) for r in stored) == [1] * ITEMS + [3] * ITEMS
    assert len(bill) == 3 * ITEMS + ITEMS
    # every billed attempt is recorded, at the price billed, to the last digit
    assert recorded_attempts(runs, "bill") == pytest.approx(bill, abs=1e-12)
    total = sum(r.spent_usd for r in stored)
    assert total == pytest.approx(sum(bill.values()), abs=1e-12)
    assert all(r.billed_attempts == len(r.ledger) for r in stored)
    # a thinking answer that spent max_tokens=16000 is billed the whole limit once
    spent = [r for r in stored if r.model == models[1]]
    assert {r.tokens.output_tokens for r in spent} == {16_000}
    # the usage table and the run's summary show the same total
    latest = json.loads((runs / "bill" / "results" / "latest.json").read_text())["version"]
    import pandas as pd

    usage = pd.read_parquet(runs / "bill" / "results" / latest / "usage.parquet")
    assert usage["cost_usd"].sum() == pytest.approx(round(total, 6), abs=2e-6)
    assert usage["billed_attempts"].sum() == 4 * ITEMS
    assert usage["retry_cost_usd"].sum() == pytest.approx(
        sum(r.retry_cost_usd for r in stored), abs=2e-6
    )


def test_usage_that_is_missing_or_impossible_is_estimated_and_counted(
    run_cli, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    models = ["google/sim-0.5-nousage", "openai/sim-0.5-negusage"]
    with start_simulator(answer_key, {"rules": RULES, "latency": {"ms": 2}}, log) as sim:
        args = ["run", *(x for m in models for x in ("-m", m)), "-b", "zerobench"]
        args += ["--limit", "2", "--epochs", "1", "--dataset-path", demo_dataset]
        args += ["--store", str(runs), "--run-id", "est", "--simulator-url", sim.url]
        first = run_cli(*args)
        again = run_cli(*args, "--no-retry-errors")
        sim.flush_log()
        bill = billed(log, sim.url)
    # the negative usages are errors (bad_usage), kept by the resume: both exit 5
    assert first.returncode == 5, first.stderr
    assert first.stdout.splitlines()[-1].startswith(
        "run est: 4 of 8 items ended in errors (bad_usage 4): exit 5; "
    )
    assert again.returncode == 5, again.stderr
    assert again.stdout.splitlines()[-1].startswith("run est: 4 of 8 items ended in errors: exit 5")
    stored = records(runs, "est")
    assert len(stored) == 2 * ITEMS  # nothing quarantined, nothing asked twice
    assert not (runs / "est" / "quarantine").exists()
    assert len(bill) == 2 * ITEMS
    assert set(recorded_attempts(runs, "est")) == set(bill)  # every billed request recorded
    for record in stored:
        assert record.cost_estimated and record.spent_usd > 0
        if record.model == models[0]:
            assert not record.failed  # no usage: an answer, priced on counted tokens
        else:
            assert record.error.type == "bad_usage"
            assert "input_tokens is -5000000" in record.error.message
            assert len(record.ledger) == 1  # never asked again within the call


def test_a_cap_below_the_bill_of_retried_answers_stops_the_run(
    run_cli, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    model = "openai/sim-0.5-empty"
    with start_simulator(answer_key, {"rules": RULES, "latency": {"ms": 2}}, log) as sim:
        args = ["run", "-m", model, "-b", "zerobench", "--epochs", "1"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--run-id", "cap"]
        args += ["--simulator-url", sim.url, "--max-in-flight", "2", "--max-cost-usd", "0.003"]
        done = run_cli(*args)
        sim.flush_log()
        bill = billed(log, sim.url)
    assert done.returncode == 3, done.stderr
    per_item = max(r.spent_usd for r in records(runs, "cap"))
    paid = sum(bill.values())
    assert paid > 0.003 - per_item
    assert paid <= 0.003 + 2 * per_item  # within the two calls in flight
    assert recorded_attempts(runs, "cap") == pytest.approx(bill, abs=1e-12)
    line = [x for x in done.stderr.splitlines() if x.startswith("budget reached")][0]
    assert line.startswith(f"budget reached: spent ${paid:.4f} of the $0.0030 cap")


def test_the_tables_count_failures_answered_again_on_resume(
    run_cli, demo_dataset, answer_key, tmp_path
):
    """A failed call's record stays beside the answer a resume got: the table scores the
    answer and counts what both cost."""
    import pandas as pd

    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    model = "openai/sim-0.5-halfempty"
    with start_simulator(answer_key, {"rules": RULES, "latency": {"ms": 2}}, log) as sim:
        args = ["run", "-m", model, "-b", "zerobench", "--epochs", "5"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--run-id", "again"]
        args += ["--simulator-url", sim.url]
        first = run_cli(*args)
        failed = [r for r in records(runs, "again") if r.failed]
        second = run_cli(*args)
        sim.flush_log()
        bill = billed(log, sim.url)
    assert failed  # 24 items, each failing all three of its attempts with odds 1/8
    assert first.returncode == 5, first.stderr  # the run that left them says so
    assert first.stdout.splitlines()[-1].startswith(
        f"run again: {len(failed)} of 24 items ended in errors (empty_answer {len(failed)}): "
        "exit 5; "
    )
    assert second.returncode == 0, second.stderr  # the resume answered them
    assert second.stdout.splitlines()[-1] == "run again: 24 items, none ended in an error"
    stored = records(runs, "again")
    assert len(stored) == 24 + len(failed)  # the failures are kept beside the answers
    assert recorded_attempts(runs, "again") == pytest.approx(bill, abs=1e-12)
    latest = json.loads((runs / "again" / "results" / "latest.json").read_text())["version"]
    usage = pd.read_parquet(runs / "again" / "results" / latest / "usage.parquet")
    assert usage["cost_usd"].sum() == pytest.approx(round(sum(bill.values()), 6), abs=2e-6)
    assert usage["billed_attempts"].sum() == len(bill)
    assert usage["answers"].sum() == 24
