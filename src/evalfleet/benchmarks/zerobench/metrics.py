"""ZeroBench's metric set, laid out like the paper's Table 2, for the epochs the run asked.

`zerobench-paper` protocol: pass@1 and num_correct come from the greedy epoch 0; pass@k and
k/k from the k sampled epochs 1..k the run asked (the paper's k is 5). `sampled-k` (and
`greedy`): every metric from all k epochs (pass@1 is then the unbiased pass@1, the mean of
c/n). pass@k uses the unbiased estimator over a question's n sampled epochs (Chen et al.
2021); a question with fewer than k epochs so far has no pass@k or k/k (not 0), and a figure
no question was measured for is left out with its reason (`MetricRow.note`). Failed
completions count as incorrect (and are counted apart as errors).

On the subquestion split `grouped_accuracy` and its SE are the paper's subquestion pass@1 and
SE (mean of per-main-question accuracies; SE over those means), and `pass@1` is that same
grouped mean, the headline; `accuracy` is the plain mean with upstream's ungrouped
`all_samples_mean_stderr` as its SE, kept for comparability.

Every figure says what it reads: a note names the epochs behind each column, and a pass@k or
k/k measured on fewer questions than `n_questions` (a partly extended run) names its own n.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalfleet.benchmarks.interface import MetricRow, ScoredItem
from evalfleet.benchmarks.protocols import sampled_epochs
from evalfleet.benchmarks.tables import KEYS, metric_lookup
from evalfleet.metrics import (
    accuracy,
    all_samples_mean_stderr,
    grouped_mean,
    pass_at_k,
    reliability_at_k,
    se_over_group_means,
)

if TYPE_CHECKING:
    import pandas as pd

    from evalfleet.metrics.intervals import UnitValues

K_COLUMN = re.compile(r"pass@(\d+)|(\d+)/\2")
LEADING = ["model", "benchmark", "scoring", "n_questions", "n_epochs", "pass@1"]
TRAILING = [
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
    epochs: int,
    grouped: bool,
) -> list[MetricRow]:
    """The metric rows of one (model, split, scoring mode); `epochs` is how many the run
    asked of the split (its k comes from it)."""
    k = sampled_epochs(protocol, epochs)
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
    seen = len({item.epoch for item in scored})
    headline_pass1 = _mean(headline)
    if grouped and headline:  # the paper's subquestion pass@1: every main question once
        headline_pass1 = grouped_mean(headline, [sample_groups[sid] for sid in present])
    rows = [
        MetricRow("n_questions", float(len(sample_ids)), n=len(sample_ids)),
        MetricRow("n_epochs", float(seen), n=seen, note=_epochs_read(protocol, k)),
        MetricRow("pass@1", headline_pass1, n=n),
    ]
    total = len(sample_ids)
    if k >= 2:
        rows.append(_at_k(f"pass@{k}", per_sample(pass_at_k, k), k, sampled, total))
    if k >= 1:
        rows.append(_at_k(f"{k}/{k}", per_sample(reliability_at_k, k), k, sampled, total))
    rows += [
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


def _epochs_read(protocol: str, k: int) -> str:
    """Which epochs each column reads, said under the table."""
    if protocol == "zerobench-paper":
        sampled = f"pass@{k} and {k}/{k} the sampled epochs 1–{k}"
        if k == 1:  # one sampled epoch: its pass@1 is 1/1, and the pass@1 column is greedy's
            sampled = "1/1 the sampled epoch 1 (the sampled pass@1: the same figure)"
        elif k == 0:
            sampled = "no sampled epoch"
        return f"epochs: pass@1 and num_correct read the greedy epoch 0; {sampled}"
    return f"epochs: every column reads all epochs ({k}); pass@1 is the mean of c/n"


def _at_k(
    name: str, values: list[float], k: int, sampled: dict[str, list[bool]], total: int
) -> MetricRow:
    """A pass@k or k/k over the questions with at least k sampled epochs, its own n named
    when that is fewer than `total`; when there is none, no value and the reason."""
    measured = sum(not math.isnan(v) for v in values)
    if measured:
        note = ""
        if measured < total:
            note = (
                f"{name} on {measured} of {total} questions (n={measured}): the others have "
                f"fewer than {k} sampled epochs so far"
            )
        return MetricRow(name, _mean(values), n=measured, note=note)
    most = max((len(d) for d in sampled.values()), default=0)
    note = (
        f"{name} not measured: it needs {k} sampled epochs of a question, the answers hold "
        f"at most {most}"
    )
    return MetricRow(name, None, n=0, note=note)


def summary_table(long: pd.DataFrame) -> pd.DataFrame:
    """The paper's columns, one row per (model, split, scoring mode); pass@k and k/k for the
    k the run asked."""
    import pandas as pd

    at_k = [m for m in dict.fromkeys(long["metric"]) if K_COLUMN.fullmatch(m) and m != "pass@1"]
    columns = [*LEADING, *at_k, *TRAILING]
    rows = []
    for (model, benchmark, scoring), part in long.groupby(KEYS, sort=False):
        value = metric_lookup(part)
        row = {"model": model, "benchmark": benchmark, "scoring": scoring}
        for metric in ("n_questions", "n_epochs", "pass@1", *at_k, "num_correct"):
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
    return pd.DataFrame(rows, columns=columns)


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
    from evalfleet.metrics.intervals import units_from_observations

    chosen = [i for i in scored if protocol != "zerobench-paper" or i.epoch == 0]
    return units_from_observations(
        [
            (sample_groups[i.sample_id] if grouped else i.sample_id, i.epoch, float(i.correct))
            for i in chosen
        ]
    )
