"""Scheduled re-evaluation: the first run records a baseline, later runs evaluate new models."""

from __future__ import annotations

import json

import pytest

from evalfleet.engine.reevaluate import STATE_KEY, ReevaluateRequest
from evalfleet.flows.reevaluate import reevaluate
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import open_store

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


def test_first_run_is_a_baseline_then_only_new_models_are_evaluated(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):

    store_url = str(tmp_path / "runs")
    base = {
        "include": {"openai": ["sim-0.[37]"], "google": ["sim-*"]},
        "benchmarks": ["zerobench"],
        "dataset_path": demo_dataset,
        "epochs": 1,
        "store": store_url,
    }
    before = {"models": ["sim-0.3", "sim-0.5-think"], "latency": {"ms": 1}}
    with start_simulator(answer_key, before, tmp_path / "a.jsonl") as sim:
        first = reevaluate(ReevaluateRequest(**base, simulator_url=sim.url))
    assert first["baseline"] == {"google": ["sim-0.3", "sim-0.5-think"], "openai": ["sim-0.3"]}
    assert first["evaluated"] == []
    routes = [json.loads(x)["route"] for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert sorted(routes) == ["gemini.models", "openai.models"]  # listed, nothing generated

    after = {"models": ["sim-0.3", "sim-0.5-think", "sim-0.7"], "latency": {"ms": 1}}
    with start_simulator(answer_key, after, tmp_path / "b.jsonl") as sim:
        second = reevaluate(ReevaluateRequest(**base, simulator_url=sim.url))
    evaluated = sorted(e["model"] for e in second["evaluated"])
    assert evaluated == ["google/sim-0.7", "openai/sim-0.7"]
    log = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    generated = [e for e in log if not e["route"].endswith(".models")]
    assert sorted({e["model"] for e in generated}) == ["sim-0.7"]
    assert len(generated) == 2 * 4 * 2  # two providers x 4 questions x (greedy + 1 sampled)
    state = json.loads(open_store(store_url).get(STATE_KEY))
    assert state == {
        "google": ["sim-0.3", "sim-0.5-think", "sim-0.7"],
        "openai": ["sim-0.3", "sim-0.7"],
    }
    for entry in second["evaluated"]:
        assert {row["model"] for row in entry["summaries"]["zerobench"]} == {entry["model"]}


def test_a_new_models_run_id_is_valid_whatever_its_name_holds():
    from evalfleet.engine.reevaluate import reevaluation_run_id
    from evalfleet.engine.run.request import check_run_id

    run_id = reevaluation_run_id("20261127-030000", "openai", "ft:gpt-4o-mini:acme:x@1/b")
    assert run_id == "reeval-20261127-030000-openai-ft-gpt-4o-mini-acme-x-1-b"
    assert check_run_id(run_id) == run_id
