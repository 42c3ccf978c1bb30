"""Reusing a run id with one more model names `--extend`: as the fix when the rest is as it
was, and as what to pass once the other changes are undone when it is not."""

from __future__ import annotations

import pytest

from evalfleet.engine.prepare.plan import plan
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.identity import RunError
from evalfleet.engine.run.request import EvalRequest


def request(tmp_path, dataset: str, models: list[str], **fields) -> EvalRequest:
    return EvalRequest(
        models=models,
        benchmarks=["zerobench"],
        run_id="r1",
        store=str(tmp_path / "runs"),
        simulator_url="http://127.0.0.1:9",
        dataset_path=dataset,
        **fields,
    )


def refusal(asked: EvalRequest) -> str:
    with pytest.raises(RunError) as refused:
        plan(resolve(asked))
    return str(refused.value)


def test_one_more_model_names_extend(tmp_path, demo_dataset):
    plan(resolve(request(tmp_path, demo_dataset, ["openai/sim-0.5"])))
    grown = request(tmp_path, demo_dataset, ["openai/sim-0.5", "openai/sim-0.6"])
    assert refusal(grown) == (
        "run id r1 already exists with a different request (models: ['openai/sim-0.5'] -> "
        "['openai/sim-0.5', 'openai/sim-0.6']): pass --extend to grow the run, or choose a new "
        "--run-id"
    )


def test_one_more_model_and_other_changes_still_names_extend(tmp_path, demo_dataset):
    plan(resolve(request(tmp_path, demo_dataset, ["openai/sim-0.5"])))
    grown = request(tmp_path, demo_dataset, ["openai/sim-0.5", "openai/sim-0.6"], limit=2)
    said = refusal(grown)
    assert said.startswith(
        "run id r1 already exists with a different request (models: ['openai/sim-0.5'] -> "
        "['openai/sim-0.5', 'openai/sim-0.6']; zerobench data: 4 samples at "
    )
    assert said.endswith(
        "): --extend adds models to a run only when nothing else changes: pass --extend with "
        "the run's other settings as they were, or choose a new --run-id"
    )
