"""One OpenAI, one Anthropic and one Google simulated model side by side, end to end.

Also: no API key in any record, log line or artifact, and audio is refused for Anthropic at
planning time.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import re
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.engine.run.request import EvalRequest
from evalfleet.flows.pipeline import evaluate_and_aggregate
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import SPLITS, result_table

MODELS = ["openai/sim-0.4", "anthropic/sim-0.6", "google/sim-0.5"]
KEY = "sk-three-providers-DO-NOT-LEAK-7f3a9c"


@pytest.fixture(scope="module")
def three(ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path_factory):
    work = tmp_path_factory.mktemp("three")
    os.environ["EVALFLEET_SIMULATOR_API_KEY"] = KEY
    try:
        with start_simulator(answer_key, {"latency": {"ms": 5}}, work / "sim.jsonl") as sim:
            request = EvalRequest(
                models=MODELS,
                dataset_path=demo_dataset,
                run_id="three",
                store=str(work / "runs"),
                simulator_url=sim.url,
            )
            result = evaluate_and_aggregate(request)
    finally:
        os.environ.pop("EVALFLEET_SIMULATOR_API_KEY", None)
    return work, result


def records(work: Path) -> list[dict]:
    root = work / "runs" / "three" / "completions"
    return [json.loads(p.read_text()) for p in sorted(root.rglob("*.json"))]


@pytest.mark.slow
def test_summary_has_all_three_with_tokens_and_cost(three):
    work, _ = three
    all_records = records(work)
    assert len(all_records) == (4 + 11) * 6 * 3
    assert {r["provider"] for r in all_records} == {"openai", "anthropic", "google"}
    for split in SPLITS:
        summary = result_table(work / "runs", "three", f"summary_{split}.parquet")
        assert sorted(summary.model.unique()) == sorted(MODELS)
        for model in MODELS:
            mine = [r for r in all_records if r["model"] == model and r["benchmark"] == split]
            expected_in = sum(r["usage"]["input_tokens"] for r in mine)
            expected_out = sum(r["usage"]["output_tokens"] for r in mine)
            # simulated price: 1 USD per million input tokens, 4 per million output tokens
            expected_cost = (expected_in * 1.0 + expected_out * 4.0) / 1e6
            rows = summary[summary.model == model]
            assert len(rows) == 2  # upstream and robust
            for row in rows.itertuples():
                assert row.input_tokens == expected_in > 0
                assert row.output_tokens == expected_out > 0
                assert row.cost_usd == pytest.approx(expected_cost, abs=1e-6)
                assert row.errors == 0


@pytest.mark.slow
def test_api_key_is_nowhere(three, prefect_api_url):
    work, result = three
    for path in work.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in json.dumps(result, default=str)

    async def prefect_texts() -> list[str]:
        from prefect.client.orchestration import get_client

        async with get_client() as client:
            logs = await client.read_logs(limit=200)
            artifacts = await client.read_artifacts(limit=200)
            runs = await client.read_flow_runs(limit=200)
        texts = [log.message for log in logs]
        texts += [json.dumps(a.data, default=str) for a in artifacts]
        texts += [json.dumps(r.parameters, default=str) for r in runs]
        return texts

    texts = asyncio.run(prefect_texts())
    assert any("three" in t for t in texts)  # the run's own logs and artifacts are there
    assert not [t for t in texts if KEY in t]

    # the report's raw view: each call's request body, rebuilt by its provider's client, in
    # gzipped blocks the byte scan above cannot see into: decoded, no key and no auth header
    pages = list((work / "runs" / "three" / "results").glob("*/report.html"))
    assert pages
    for page in pages:
        blocks = re.findall(
            r"<script type='text/plain' id='details-\d+'>(.*?)</script>", page.read_text()
        )
        details = [d for b in blocks for d in json.loads(gzip.decompress(base64.b64decode(b)))]
        assert {d["raw"]["call"]["provider"] for d in details} == {"openai", "anthropic", "google"}
        assert all(d["raw"]["request"] is not None for d in details)
        words = json.dumps(details).lower()
        assert KEY.lower() not in words
        assert not [h for h in ("authorization", "x-api-key", "x-goog-api-key") if h in words]


def test_audio_to_anthropic_is_refused_before_any_request(capsys, tmp_path):
    from evalfleet.benchmarks.omnibench.demo import write_omnibench_demo

    dataset = str(write_omnibench_demo(tmp_path / "omni"))
    log = tmp_path / "sim.jsonl"
    with start_simulator(None, None, log) as sim:
        code = main(
            [
                "run",
                "-m",
                "anthropic/sim-0.5",
                "-b",
                "omnibench",
                "--dataset-path",
                dataset,
                "--simulator-url",
                sim.url,
                "--store",
                str(tmp_path / "runs"),
            ]
        )
        err = capsys.readouterr().err.strip()
        sim.flush_log()
    assert code == 2
    assert err == (
        "error: model anthropic/sim-0.5 cannot take the audio parts that omnibench sends: "
        "pass --omnibench-text-alternatives audio to send OmniBench's text stand-ins instead, "
        "or drop the model"
    )
    assert not (tmp_path / "runs").exists()
    assert not log.exists() or log.read_text() == ""
