"""ZeroBench's metric set, laid out like the paper's Table 2.

`zerobench-paper` protocol: pass@1 and num_correct come from the greedy epoch 0; pass@5 and
5/5 from the sampled epochs 1..k. `sampled-k`: every metric from the k sampled epochs
(pass@1 is then the unbiased pass@1, i.e. the mean of c/n). Failed completions count as
incorrect and are counted in `errors`; epochs never requested (a run still in progress)
just lower n, as upstream's reducers do.

On the subquestion split, `grouped_accuracy` / `grouped_se` are the paper's subquestion
pass@1 and SE (mean of per-main-question accuracies; SE over those means); `accuracy` is the
plain mean and `all_samples_mean_stderr` upstream's ungrouped SE, kept for comparability.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from metrics import (
    accuracy,
    all_samples_mean_stderr,
    grouped_mean,
    pass_at_k,
    reliability_at_k,
    se_over_group_means,
)

SUMMARY_COLUMNS = [
    "model",
    "split",
    "scoring",
    "n_questions",
    "n_epochs",
    "pass@1",
    "pass@5",
    "5/5",
    "num_correct",
    "accuracy",
    "grouped_accuracy",
    "grouped_se",
    "all_samples_mean_stderr",
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
]


@dataclass(frozen=True)
class EpochScore:
    """One scored (sample, epoch) under one scoring mode."""

    sample_id: str
    group_id: str
    epoch: int
    correct: bool


def _mean(values: Iterable[float]) -> float | None:
    values = [v for v in values if not math.isnan(v)]
    return accuracy(values) if values else None


def summarize(
    scores: list[EpochScore],
    *,
    sample_groups: dict[str, str],
    protocol: str,
    grouped: bool,
    k: int = 5,
) -> dict[str, Any]:
    """The metric columns of one (model, split, scoring) row."""
    sample_ids = list(sample_groups)
    greedy: dict[str, float] = {}
    sampled: dict[str, list[bool]] = defaultdict(list)
    for score in scores:
        if protocol == "zerobench-paper" and score.epoch == 0:
            greedy[score.sample_id] = 1.0 if score.correct else 0.0
        else:
            sampled[score.sample_id].append(score.correct)

    def per_sample_pass(kk: int) -> list[float]:
        out = []
        for sid in sample_ids:
            draws = sampled.get(sid, [])
            out.append(pass_at_k(len(draws), sum(draws), kk) if draws else math.nan)
        return out

    def per_sample_reliability(kk: int) -> list[float]:
        out = []
        for sid in sample_ids:
            draws = sampled.get(sid, [])
            out.append(reliability_at_k(len(draws), sum(draws), kk) if draws else math.nan)
        return out

    if protocol == "zerobench-paper":
        present = [sid for sid in sample_ids if sid in greedy]
        headline = [greedy[sid] for sid in present]
        num_correct: int | None = int(sum(headline))
        pass1 = _mean(headline)
    else:
        pass1_values = per_sample_pass(1)
        present = [
            sid for sid, v in zip(sample_ids, pass1_values, strict=True) if not math.isnan(v)
        ]
        headline = [v for v in pass1_values if not math.isnan(v)]
        num_correct = None
        pass1 = _mean(headline)

    row: dict[str, Any] = {
        "pass@1": pass1,
        "pass@5": _mean(per_sample_pass(k)),
        "5/5": _mean(per_sample_reliability(k)),
        "num_correct": num_correct,
        "accuracy": pass1,
        "grouped_accuracy": None,
        "grouped_se": None,
        "all_samples_mean_stderr": all_samples_mean_stderr(headline) if headline else None,
    }
    if grouped and headline:
        groups = [sample_groups[sid] for sid in present]
        row["grouped_accuracy"] = grouped_mean(headline, groups)
        row["grouped_se"] = se_over_group_means(headline, groups)
    return row
