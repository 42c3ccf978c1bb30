"""Accuracy over samples, overall and broken down by a metadata field, with SE and n: the
metric set of most multiple-choice and short-answer benchmarks."""

from __future__ import annotations

from collections.abc import Iterable

from evalfleet.benchmarks.interface import MetricRow, ScoredItem
from evalfleet.core.types import Sample
from evalfleet.metrics import accuracy, all_samples_mean_stderr


def per_sample_values(scored: Iterable[ScoredItem]) -> dict[str, float]:
    """Each sample's mean value over its scored epochs (score errors left out); samples
    keep first-appearance order."""
    sums: dict[str, list[float]] = {}
    for item in scored:
        if item.score_error is None:
            sums.setdefault(item.sample_id, []).append(item.value)
    return {sid: sum(vs) / len(vs) for sid, vs in sums.items()}


def accuracy_rows(
    scored: Iterable[ScoredItem],
    samples: dict[str, Sample],
    breakdowns: dict[str, str],
    metric: str = "accuracy",
) -> list[MetricRow]:
    """`metric` overall and per group of each breakdown, each with its SE and n.

    Values are per-sample means over epochs (an item answered k times counts once); the SE is
    sd(ddof=1)/sqrt(n) over those per-sample values. `breakdowns` maps a breakdown name to
    the metadata field holding each sample's group ({"task_type": "task_type"}).
    """
    values = per_sample_values(scored)
    rows = [_row(metric, list(values.values()), "")]
    for by, field in breakdowns.items():
        grouped: dict[str, list[float]] = {}
        for sid, value in values.items():
            label = str(samples[sid].metadata.get(field))
            grouped.setdefault(label, []).append(value)
        rows.extend(_row(metric, vs, f"{by}={label}") for label, vs in grouped.items())
    return rows


def _row(metric: str, values: list[float], group: str) -> MetricRow:
    if not values:
        return MetricRow(metric, None, None, 0, group)
    return MetricRow(metric, accuracy(values), all_samples_mean_stderr(values), len(values), group)
