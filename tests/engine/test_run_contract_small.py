"""The small promises of a run: heavy 429s never fail an item, a simulator without an answer
key refuses to start, and the nightly re-evaluation goes on when one provider has no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.engine.reevaluate import ReevaluateRequest
from evalfleet.flows.reevaluate import reevaluate
from evalfleet.simulator.process import start_simulator

STORM = {
    "latency": {"ms": 1},
    # every request is refused four times with 429 (Retry-After 50 ms), then fails 20 % of
    # the time with a 500
    "faults": {"fail_first_n": 4, "fail_first_status": 429, "retry_after_ms": 50, "http_500": 0.2},
}


@pytest.mark.slow
def test_heavy_rate_limiting_never_fails_an_item(
    monkeypatch, ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api_url)
    runs = tmp_path / "runs"
    with start_simulator(answer_key, STORM, tmp_path / "sim.jsonl") as sim:
        code = main(
            [
                "run", "-m", "openai/sim-0.5", "-b", "zerobench", "--dataset-path", demo_dataset,
                "--run-id", "storm", "--store", str(runs), "--simulator-url", sim.url,
                "--max-attempts", "3",
            ]
        )  # fmt: skip
    assert code == 0
    records = [json.loads(p.read_text()) for p in (runs / "storm").rglob("completions/**/*.json")]
    assert len({(r["sample_id"], r["epoch"]) for r in records}) == 4 * 6
    for record in records:
        kinds = [e["type"] for e in record["attempt_errors"]]
        assert kinds[:4] == ["rate_limited"] * 4  # more 429s than --max-attempts allows
        assert (record["error"] or {}).get("type") != "rate_limited"
    # with three attempts for real failures, a 20 % fault rate leaves most items done
    assert sum(r["error"] is None for r in records) >= 20


def test_simulator_refuses_an_empty_answer_key(tmp_path: Path, capsys):
    empty = tmp_path / "answers.jsonl"
    empty.write_text("\n")
    assert main(["simulate", "--answers", str(empty), "--port", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: answer key {empty} has no entries: write it from your dataset (`evalfleet "
        "simulate --answers-for DATASET -b BENCHMARK`), or every simulated answer is wrong"
    )


@pytest.mark.slow
def test_reevaluation_skips_a_provider_without_a_key(
    monkeypatch, prefect_api_url, demo_dataset, tmp_path
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = reevaluate(
        ReevaluateRequest(
            include={"anthropic": ["claude-*"]},
            benchmarks=["zerobench"],
            dataset_path=demo_dataset,
            store=str(tmp_path / "runs"),
        )
    )
    assert result["skipped"] == {
        "anthropic": "missing API key for provider anthropic: set ANTHROPIC_API_KEY"
    }
    assert result["baseline"] == {}
