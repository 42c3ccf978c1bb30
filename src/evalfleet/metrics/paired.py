"""Tests on two sets of verdicts on the same items: an exact McNemar test and Cohen's kappa
between two raters. The paired difference of two headlines is `metrics.intervals.paired`."""

from __future__ import annotations

import math
from collections.abc import Sequence


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
