"""Tests on two sets of verdicts on the same units: the paired test of two headlines (exact
McNemar or its clustered form, by the kind of unit), Holm's adjustment across many pairs, and
Cohen's kappa between two raters. The paired difference's interval is
`metrics.intervals.paired`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalfleet.metrics.intervals import UnitValues, shared_units


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


MCNEMAR = "exact McNemar"
CLUSTERED = "clustered McNemar (Durkalski 2003)"
ALPHA = 0.05


@dataclass(frozen=True)
class PairedTest:
    """A two-sided test of "no difference" between two rows on the units both hold. `name`
    is printed beside `p`; `only_a`/`only_b` are the discordant units (binary units only)."""

    name: str
    p: float
    units: int
    difference: float  # mean(a) − mean(b) on those units
    only_a: int = 0
    only_b: int = 0


def paired_test(a: UnitValues, b: UnitValues) -> PairedTest | None:
    """The one test per kind of unit, used by compare, ranks and the power text alike (None
    when no unit is shared):

    - binary units (independent items scored 0 or 1): exact McNemar on the units right in
      one row only;
    - any other unit (a main question's subquestions, a mean over epochs, a fractional
      score): the clustered McNemar of Durkalski et al. (2003) on the per-unit differences
      d_k of the unit values, X² = (Σ d_k)² / Σ d_k², χ² with 1 df. On 0/1 items it is
      Durkalski's statistic with each unit's discordant counts (b_k − c_k) scaled to the unit
      mean the headline averages; p = 1 when no unit differs.
    """
    common = shared_units(a, b)
    if not common:
        return None
    d = a.restricted(common).values - b.restricted(common).values
    n, difference = len(d), float(d.mean())
    if a.binary and b.binary:
        only_a, only_b = int(np.sum(d > 0)), int(np.sum(d < 0))
        return PairedTest(MCNEMAR, mcnemar_exact(only_a, only_b), n, difference, only_a, only_b)
    squares = float(np.sum(d * d))
    if squares == 0:
        return PairedTest(CLUSTERED, 1.0, n, difference)
    statistic = float(np.sum(d)) ** 2 / squares
    return PairedTest(CLUSTERED, min(1.0, math.erfc(math.sqrt(statistic / 2))), n, difference)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the input's order: the i-th
    smallest of m is multiplied by m − i + 1, and each adjusted value is at least the one
    before it."""
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
