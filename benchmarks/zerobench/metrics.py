"""ZeroBench's metric set, laid out like the paper's Table 2.

`zerobench-paper` protocol: pass@1 and num_correct come from the greedy epoch 0; pass@5 and
5/5 from the sampled epochs 1..k. `sampled-k` (and `greedy`): every metric from all epochs
(pass@1 is then the unbiased pass@1, the mean of c/n). Failed completions count as
incorrect (and are counted apart as errors); epochs never requested (a run still in
progress) just lower n, as upstream's reducers do.

On the subquestion split `grouped_accuracy` and its SE are the paper's subquestion pass@1 and
SE (mean of per-main-question accuracies; SE over those means); `accuracy` is the plain mean
with upstream's ungrouped `all_samples_mean_stderr` as its SE, kept for comparability.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmarks.interface import MetricRow, ScoredItem
from benchmarks.tables import KEYS, metric_lookup
from metrics import (
    accuracy,
    all_samples_mean_stderr,
    grouped_mean,
    pass_at_k,
    reliability_at_k,
    se_over_group_means,
)

if TYPE_CHECKING:
    import pandas as pd

    from metrics.intervals import UnitValues

K = 5
SUMMARY_COLUMNS = [
    "model",
    "benchmark",
    "scoring",
    "n_questions",
    "n_epochs",
    "pass@1",
    f"pass@{K}",
    f"{K}/{K}",
    "num_correct",
    "accuracy",
    "all_samples_mean_stderr",
    "grouped_accuracy",
    "grouped_se",
    "ci95_low",  # the headline's 95 % interval (Wilson on the greedy epoch, or bootstrap)
    "ci95_high",
]


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if not math.isnan(v)]
    return accuracy(values) if values else None


def metric_rows(
    scored: Sequence[ScoredItem],
    sample_groups: dict[str, str],
    *,
    protocol: str,
    grouped: bool,
) -> list[MetricRow]:
    """The metric rows of one (model, split, scoring mode)."""
    sample_ids = list(sample_groups)
    greedy: dict[str, float] = {}
    sampled: dict[str, list[bool]] = defaultdict(list)
    for item in scored:
        if protocol == "zerobench-paper" and item.epoch == 0:
            greedy[item.sample_id] = 1.0 if item.correct else 0.0
        else:
            sampled[item.sample_id].append(item.correct)

    def per_sample(estimate, kk: int) -> list[float]:
        out = []
        for sid in sample_ids:
            draws = sampled.get(sid, [])
            out.append(estimate(len(draws), sum(draws), kk) if draws else math.nan)
        return out

    if protocol == "zerobench-paper":
        present = [sid for sid in sample_ids if sid in greedy]
        headline = [greedy[sid] for sid in present]
        num_correct: int | None = int(sum(headline))
    else:
        pass1 = per_sample(pass_at_k, 1)
        present = [sid for sid, v in zip(sample_ids, pass1, strict=True) if not math.isnan(v)]
        headline = [v for v in pass1 if not math.isnan(v)]
        num_correct = None
    n = len(headline)
    pass_k = per_sample(pass_at_k, K)
    reliable = per_sample(reliability_at_k, K)
    epochs = len({item.epoch for item in scored})
    rows = [
        MetricRow("n_questions", float(len(sample_ids)), n=len(sample_ids)),
        MetricRow("n_epochs", float(epochs), n=epochs),
        MetricRow("pass@1", _mean(headline), n=n),
        MetricRow(f"pass@{K}", _mean(pass_k), n=sum(not math.isnan(v) for v in pass_k)),
        MetricRow(f"{K}/{K}", _mean(reliable), n=sum(not math.isnan(v) for v in reliable)),
        MetricRow("num_correct", None if num_correct is None else float(num_correct), n=n),
        MetricRow(
            "accuracy",
            _mean(headline),
            se=all_samples_mean_stderr(headline) if headline else None,
            n=n,
        ),
    ]
    if grouped and headline:
        groups = [sample_groups[sid] for sid in present]
        rows.append(
            MetricRow(
                "grouped_accuracy",
                grouped_mean(headline, groups),
                se=se_over_group_means(headline, groups),
                n=len(set(groups)),
            )
        )
    return rows


def summary_table(long: pd.DataFrame) -> pd.DataFrame:
    """The paper's columns, one row per (model, split, scoring mode)."""
    import pandas as pd

    rows = []
    for (model, benchmark, scoring), part in long.groupby(KEYS, sort=False):
        value = metric_lookup(part)
        row = {"model": model, "benchmark": benchmark, "scoring": scoring}
        for metric in ("n_questions", "n_epochs", "pass@1", f"pass@{K}", f"{K}/{K}", "num_correct"):
            row[metric] = value(metric)
        row["accuracy"] = value("accuracy")
        row["all_samples_mean_stderr"] = value("accuracy", "se")
        row["grouped_accuracy"] = value("grouped_accuracy")
        row["grouped_se"] = value("grouped_accuracy", "se")
        headline = "grouped_accuracy" if row["grouped_accuracy"] is not None else "accuracy"
        row["ci95_low"] = value(headline, "ci95_low")
        row["ci95_high"] = value(headline, "ci95_high")
        for column in ("n_questions", "n_epochs", "num_correct"):
            if row[column] is not None:
                row[column] = int(row[column])
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def headline_units(
    scored: Sequence[ScoredItem],
    sample_groups: dict[str, str],
    *,
    protocol: str,
    grouped: bool,
) -> UnitValues:
    """pass@1 (or the grouped subquestion pass@1) as per-unit values: under zerobench-paper
    the greedy epoch alone, each question one 0/1 item (a share: Wilson); otherwise each
    question's mean over its epochs. On the subquestion split a unit is a main question,
    valued by the mean of its subquestions."""
    from metrics.intervals import units_from_observations

    chosen = [i for i in scored if protocol != "zerobench-paper" or i.epoch == 0]
    return units_from_observations(
        [
            (sample_groups[i.sample_id] if grouped else i.sample_id, i.epoch, float(i.correct))
            for i in chosen
        ]
    )
