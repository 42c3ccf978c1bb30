"""The most items a request can plan, known before its data is read: what decides that a run
is small enough to run in the command's process, without Ray (`engine.generation.here`)."""

from __future__ import annotations

import pytest

from evalfleet.engine.generation.here import planned_at_most
from evalfleet.engine.run.request import EvalRequest


def request(**fields) -> EvalRequest:
    return EvalRequest(models=["openai/sim-0.5"], **fields)


def test_no_limit_is_no_bound():
    assert planned_at_most(request(benchmarks=["zerobench"])) is None


@pytest.mark.parametrize(
    ("fields", "items"),
    [
        # ZeroBench's protocol (zerobench-paper): a greedy epoch, then 5 sampled: 3 x 6
        ({"benchmarks": ["zerobench"], "limit": 3}, 18),
        ({"benchmarks": ["zerobench"], "limit": 3, "epochs": 2}, 9),
        ({"benchmarks": ["zerobench"], "limit": 3, "epochs": 2, "protocol": "sampled-k"}, 6),
        # DatBench takes the limit of each capability (nine by default), greedy: one epoch
        ({"benchmarks": ["datbench"], "limit": 2}, 18),
        (
            {
                "benchmarks": ["datbench"],
                "limit": 2,
                "benchmark_options": {"datbench": {"capabilities": ["chart", "math"]}},
            },
            4,
        ),
        # a judge doubles every answer: 1 x (1 + 1 greedy) x 2
        (
            {"benchmarks": ["zerobench"], "limit": 1, "epochs": 1, "judge_model": "openai/sim-0.9"},
            4,
        ),
    ],
)
def test_the_bound_counts_every_sample_the_limit_lets_in(fields, items):
    assert planned_at_most(request(**fields)) == items
