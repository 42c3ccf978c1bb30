"""evaluate + aggregate with real Prefect, Ray, the simulator over HTTP and the local store.

The table values are checked against metrics computed here, by hand, from the stored records
(with n = k = 5 sampled epochs, pass@5 is "any correct" and 5/5 "all correct").
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.engine.run.request import EvalRequest
from evalfleet.flows.pipeline import evaluate_and_aggregate
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import SPLITS, result_table, results_dir, zerobench_samples

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


MODELS = ["openai/sim-0.3", "openai/sim-0.8"]
API_KEY = "sk-e2e-secret-0123456789abcdef"


def upstream_correct(response: str, target: str) -> bool:
    found = re.findall(r"\{(.*?)\}", response.strip().lower())
    return bool(found) and found[-1] == target.strip().lower()


@pytest.fixture(scope="module")
def finished_run(ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path_factory):
    work = tmp_path_factory.mktemp("e2e")
    import os

    os.environ["EVALFLEET_SIMULATOR_API_KEY"] = API_KEY
    try:
        with start_simulator(answer_key, {"latency": {"ms": 5}}, work / "sim.jsonl") as sim:
            request = EvalRequest(
                models=MODELS,
                dataset_path=demo_dataset,
                run_id="e2e",
                store=str(work / "runs"),
                simulator_url=sim.url,
            )
            result = evaluate_and_aggregate(request).tables
    finally:
        os.environ.pop("EVALFLEET_SIMULATOR_API_KEY", None)
    return work, result


def stored_records(root: Path) -> list[dict]:
    return [
        json.loads(p.read_text()) for p in sorted((root / "e2e" / "completions").rglob("*.json"))
    ]


def test_every_item_has_one_complete_record(finished_run, demo_dataset):
    work, _ = finished_run
    records = stored_records(work / "runs")
    # demo dataset: 4 main questions + 11 subquestions, 6 epochs, 2 models
    assert len(records) == (4 + 11) * 6 * 2
    idents = {(r["model"], r["benchmark"], r["sample_id"], r["epoch"]) for r in records}
    assert len(idents) == len(records)
    for record in records:
        assert record["error"] is None
        assert record["attempts"] == 1
        assert record["finish_reason"] == "stop"
        assert record["usage"]["input_tokens"] > 0 and record["usage"]["output_tokens"] > 0
        assert record["latency_s"] > 0
        assert record["provider"] == "openai"
        assert record["request_id"]
        seed = record["request"]["seed"]
        assert seed == 42 + record["epoch"]
        if record["epoch"] == 0:
            assert record["request"]["temperature"] == 0.0
        else:
            assert (record["request"]["temperature"], record["request"]["top_p"]) == (0.7, 0.95)


def test_simulator_saw_each_item_once(finished_run):
    work, _ = finished_run
    lines = [json.loads(x) for x in (work / "sim.jsonl").read_text().splitlines()]
    assert len(lines) == (4 + 11) * 6 * 2
    assert {line["status"] for line in lines} == {200}


def test_api_key_never_stored(finished_run):
    work, _ = finished_run
    for path in work.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path


def test_tables_match_hand_computed_metrics(finished_run, demo_dataset):
    work, result = finished_run
    targets = {}
    groups = {}
    for split in SPLITS:
        for sample in zerobench_samples(split, demo_dataset):
            targets[(split, sample.id)] = sample.target
            groups[(split, sample.id)] = sample.id.split("_")[0]
    by_sample: dict[tuple[str, str, str], dict[int, bool]] = defaultdict(dict)
    for r in stored_records(work / "runs"):
        ok = upstream_correct(r["response"], targets[(r["benchmark"], r["sample_id"])])
        by_sample[(r["model"], r["benchmark"], r["sample_id"])][r["epoch"]] = ok

    runs = work / "runs"
    for model in MODELS:
        for split in SPLITS:
            summary = result_table(runs, "e2e", f"summary_{split}.parquet")
            assert len(summary) == 2 * 2  # models x scoring modes
            sids = sorted(s for (m, b, s) in by_sample if m == model and b == split)
            greedy = [by_sample[(model, split, s)][0] for s in sids]
            sampled = [[by_sample[(model, split, s)][e] for e in range(1, 6)] for s in sids]
            row = summary[(summary.model == model) & (summary.scoring == "upstream")].iloc[0]
            assert row["n_questions"] == len(sids)
            assert row["n_epochs"] == 6
            assert row["num_correct"] == sum(greedy)
            if split != "zerobench_subquestions":
                assert row["pass@1"] == pytest.approx(sum(greedy) / len(sids), abs=1e-12)
            assert row["pass@5"] == pytest.approx(
                sum(any(x) for x in sampled) / len(sids), abs=1e-12
            )
            assert row["5/5"] == pytest.approx(sum(all(x) for x in sampled) / len(sids), abs=1e-12)
            assert row["errors"] == 0
            if split == "zerobench_subquestions":
                by_group: dict[str, list[bool]] = defaultdict(list)
                for s, ok in zip(sids, greedy, strict=True):
                    by_group[groups[(split, s)]].append(ok)
                means = [sum(v) / len(v) for v in by_group.values()]
                g = len(means)
                mean_of_means = sum(means) / g
                sd = (sum((m - mean_of_means) ** 2 for m in means) / (g - 1)) ** 0.5
                assert row["grouped_accuracy"] == pytest.approx(mean_of_means, abs=1e-12)
                # the paper's subquestion pass@1: every main question counts once
                assert row["pass@1"] == pytest.approx(mean_of_means, abs=1e-12)
                assert row["accuracy"] == pytest.approx(sum(greedy) / len(sids), abs=1e-12)
                assert row["grouped_se"] == pytest.approx(sd / g**0.5, abs=1e-12)
            else:
                assert pd.isna(row["grouped_accuracy"]) and pd.isna(row["grouped_se"])

    samples = result_table(runs, "e2e", "samples.parquet")
    assert len(samples) == (4 + 11) * 6 * 2 * 2
    upstream_rows = samples[samples.scoring == "upstream"]
    for row in upstream_rows.itertuples():
        assert row.correct == by_sample[(row.model, row.benchmark, row.sample_id)][row.epoch]
    for split in SPLITS:
        for suffix in ("csv", "md"):
            assert (results_dir(runs, "e2e") / f"summary_{split}.{suffix}").stat().st_size > 0
    assert result["summaries"]["zerobench"][0]["model"] in MODELS
    long = result_table(runs, "e2e", "metrics.parquet")
    assert list(long.columns) == [
        "model",
        "benchmark",
        "scoring",
        "metric",
        "group",
        "value",
        "se",
        "ci95_low",
        "ci95_high",
        "n",
        "note",
        "errors",
        "judged",
        "score_errors",
    ]
    assert set(long.benchmark) == set(SPLITS)


def test_both_models_differ_in_accuracy(finished_run):
    """The simulator's accuracy knob reaches the tables (0.3 vs 0.8 over 180 calls)."""
    work, _ = finished_run
    summary = result_table(work / "runs", "e2e", "summary_zerobench_subquestions.parquet")
    upstream = summary[summary.scoring == "upstream"]
    weak = upstream[upstream.model == "openai/sim-0.3"]["pass@1"].mean()
    strong = upstream[upstream.model == "openai/sim-0.8"]["pass@1"].mean()
    assert strong > weak
