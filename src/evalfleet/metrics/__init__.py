"""Benchmark-independent metrics: per-sample estimators and aggregates over samples."""

from evalfleet.metrics.aggregates import (
    accuracy,
    all_samples_mean_stderr,
    clustered_stderr,
    group_means,
    group_stderrs,
    group_values,
    grouped_mean,
    sample_sd,
    se_over_group_means,
)
from evalfleet.metrics.discrimination import point_biserial
from evalfleet.metrics.estimators import count_correct, pass_at_k, reliability_at_k

__all__ = [
    "accuracy",
    "all_samples_mean_stderr",
    "clustered_stderr",
    "count_correct",
    "group_means",
    "group_stderrs",
    "group_values",
    "grouped_mean",
    "pass_at_k",
    "point_biserial",
    "reliability_at_k",
    "sample_sd",
    "se_over_group_means",
]
