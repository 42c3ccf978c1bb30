"""Aggregates over per-sample values: means, grouped means and their standard errors.

Groups keep the order in which they first appear. An empty input gives NaN for a mean and
0.0 for a standard error; NaN sample values propagate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def accuracy(values: Sequence[float]) -> float:
    """Mean over all values (the upstream `accuracy` metric)."""
    return math.fsum(values) / len(values) if values else math.nan


def sample_sd(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1); 0.0 for fewer than two values."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def all_samples_mean_stderr(values: Sequence[float]) -> float:
    """sd(values, ddof=1)/sqrt(N), 0.0 if N < 2: the ungrouped SE of `accuracy`."""
    n = len(values)
    return sample_sd(values) / math.sqrt(n) if n >= 2 else 0.0


def group_values(values: Sequence[float], groups: Sequence[str]) -> dict[str, list[float]]:
    """Values by group, groups in first-appearance order."""
    if len(values) != len(groups):
        raise ValueError(f"{len(values)} values but {len(groups)} group labels")
    out: dict[str, list[float]] = {}
    for value, group in zip(values, groups, strict=True):
        out.setdefault(group, []).append(value)
    return out


def group_means(values: Sequence[float], groups: Sequence[str]) -> dict[str, float]:
    """Mean of each group (the upstream `<g>_accuracy`)."""
    return {g: accuracy(vs) for g, vs in group_values(values, groups).items()}


def group_stderrs(values: Sequence[float], groups: Sequence[str]) -> dict[str, float]:
    """sd(ddof=1)/sqrt(n_g) of each group (the upstream `<g>_stderr`), 0.0 for a singleton."""
    return {g: all_samples_mean_stderr(vs) for g, vs in group_values(values, groups).items()}


def grouped_mean(values: Sequence[float], groups: Sequence[str]) -> float:
    """Unweighted mean of the group means: every group counts once, whatever its size."""
    return accuracy(list(group_means(values, groups).values()))


def se_over_group_means(values: Sequence[float], groups: Sequence[str]) -> float:
    """sd(group means, ddof=1)/sqrt(G), 0.0 if G < 2: the SE that belongs to `grouped_mean`."""
    return all_samples_mean_stderr(list(group_means(values, groups).values()))


def clustered_stderr(values: Sequence[float], groups: Sequence[str]) -> float:
    """Cluster-robust SE of the ungrouped mean, as inspect_ai `stderr(cluster=...)`.

    sqrt(G/(G-1) * sum_g (sum_{i in g} (x_i - mean))^2) / N, with mean over all N values;
    0.0 if G < 2.
    """
    by_group = group_values(values, groups)
    n_groups = len(by_group)
    if n_groups < 2:
        return 0.0
    mean = accuracy(values)
    total = math.fsum(math.fsum(v - mean for v in vs) ** 2 for vs in by_group.values())
    return math.sqrt(n_groups / (n_groups - 1) * total) / len(values)
