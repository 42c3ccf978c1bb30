"""How well a rater's binary verdicts match another's (a judge's against a human's, or two
judges'): accuracy with its Wilson interval, and Cohen's kappa with a cluster bootstrap
interval (the answers of one question resampled together: a question's epochs and models are
not independent verdicts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalfleet.metrics.intervals import Interval, wilson
from evalfleet.metrics.paired import cohens_kappa

KAPPA_DRAWS = 2_000
SEED = 0


@dataclass(frozen=True)
class Agreement:
    """`rater` against `truth` on `n` verdicts: accuracy (the share that agree) with its
    Wilson interval, Cohen's kappa (NaN when chance agreement is 1) with its interval (None
    with fewer than two clusters or no spread to resample)."""

    n: int
    accuracy: float
    accuracy_interval: Interval
    kappa: float
    kappa_interval: Interval | None


def agreement(
    rater: Sequence[bool], truth: Sequence[bool], clusters: Sequence[str] | None = None
) -> Agreement:
    """`clusters[i]` names the question of verdict i (None: every verdict its own)."""
    n = len(rater)
    agree_pct, kappa = cohens_kappa(rater, truth)
    same = round(agree_pct * n / 100)
    return Agreement(n, same / n, wilson(same, n), kappa, kappa_interval(rater, truth, clusters))


def kappa_interval(
    a: Sequence[bool],
    b: Sequence[bool],
    clusters: Sequence[str] | None = None,
    draws: int = KAPPA_DRAWS,
    seed: int = SEED,
) -> Interval | None:
    """Percentile bootstrap of Cohen's kappa over clusters (`draws` from
    `numpy.random.default_rng(seed)`, clusters in sorted order); draws where kappa is
    undefined (one verdict everywhere) are left out. None below two clusters, or when fewer
    than 95 % of the draws give a kappa."""
    keys = list(clusters) if clusters is not None else [str(i) for i in range(len(a))]
    names = sorted(set(keys))
    if len(names) < 2:
        return None
    index = {name: i for i, name in enumerate(names)}
    cells = np.zeros((len(names), 4))  # per cluster: both yes, a only, b only, both no
    for key, x, y in zip(keys, a, b, strict=True):
        cells[index[key], (0 if y else 1) if x else (2 if y else 3)] += 1
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(names), np.full(len(names), 1 / len(names)), size=draws)
    totals = weights @ cells
    n = totals.sum(axis=1)
    observed = (totals[:, 0] + totals[:, 3]) / n
    rate_a, rate_b = (totals[:, 0] + totals[:, 1]) / n, (totals[:, 0] + totals[:, 2]) / n
    chance = rate_a * rate_b + (1 - rate_a) * (1 - rate_b)
    defined = chance < 1
    if defined.sum() < 0.95 * draws:
        return None
    kappas = (observed[defined] - chance[defined]) / (1 - chance[defined])
    low, high = np.percentile(kappas, [2.5, 97.5])
    if math.isclose(low, high):
        return None
    return Interval(float(low), float(high), "cluster bootstrap")
