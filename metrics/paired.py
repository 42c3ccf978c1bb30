"""Paired comparisons of two sets of scores on the same items: the difference with a paired
bootstrap interval, an exact McNemar test, and Cohen's kappa between two raters.

The bootstrap resamples groups, not items, where items of a group are not independent
(ZeroBench's subquestions of one main question, the epochs of one sample): each draw picks as
many groups as there are, with replacement, and takes the item-weighted mean difference over
the items of the groups drawn. Draws come from `numpy.random.default_rng(seed).integers(0, G,
size=(draws, G))`, so a reader can reproduce them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DRAWS = 2000
SEED = 0


@dataclass(frozen=True)
class Difference:
    a: float  # mean of a over the items
    b: float
    difference: float  # a - b
    low: float  # 95 % percentile bootstrap interval of the difference
    high: float
    items: int
    groups: int


def group_sums(
    groups: Sequence[str], a: Sequence[float], b: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group (in order of first appearance): the sums of a and of b, and the item count."""
    index: dict[str, int] = {}
    position = np.array([index.setdefault(g, len(index)) for g in groups], dtype=np.int64)
    count = len(index)
    sums_a = np.bincount(position, weights=np.asarray(a, dtype=float), minlength=count)
    sums_b = np.bincount(position, weights=np.asarray(b, dtype=float), minlength=count)
    counts = np.bincount(position, minlength=count).astype(float)
    return sums_a, sums_b, counts


def paired_difference(
    groups: Sequence[str],
    a: Sequence[float],
    b: Sequence[float],
    *,
    draws: int = DRAWS,
    seed: int = SEED,
) -> Difference:
    """mean(a) - mean(b) over paired items, with a 95 % group bootstrap interval."""
    if not (len(groups) == len(a) == len(b)) or not groups:
        raise ValueError("need one group, one a and one b per item, and at least one item")
    sums_a, sums_b, counts = group_sums(groups, a, b)
    mean_a, mean_b = sums_a.sum() / counts.sum(), sums_b.sum() / counts.sum()
    picks = np.random.default_rng(seed).integers(0, len(counts), size=(draws, len(counts)))
    diffs = (sums_a[picks].sum(axis=1) - sums_b[picks].sum(axis=1)) / counts[picks].sum(axis=1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    return Difference(
        float(mean_a),
        float(mean_b),
        float(mean_a - mean_b),
        float(low),
        float(high),
        int(counts.sum()),
        len(counts),
    )


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: `only_a` items right in a
    and wrong in b, `only_b` the reverse. Under the null each discordant pair goes either way
    with probability 1/2: p = min(1, 2 P(X <= min)), X ~ Binomial(only_a + only_b, 1/2). No
    discordant pair: p = 1."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def cohens_kappa(a: Sequence[bool], b: Sequence[bool]) -> tuple[float, float]:
    """(percent agreement, Cohen's kappa) of two raters' binary verdicts on the same items.
    Kappa is (po - pe) / (1 - pe) with pe from each rater's own rates; NaN when pe is 1 (both
    raters gave one and the same verdict to everything)."""
    if len(a) != len(b) or not a:
        raise ValueError("need the same, non-zero number of verdicts from both raters")
    n = len(a)
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / n
    rate_a, rate_b = sum(a) / n, sum(b) / n
    chance = rate_a * rate_b + (1 - rate_a) * (1 - rate_b)
    kappa = math.nan if chance == 1.0 else (agree - chance) / (1 - chance)
    return 100.0 * agree, kappa
