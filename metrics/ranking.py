"""Rank intervals: how sure a leaderboard may be of each model's place.

A paired bootstrap over the items every ranked model answered: each draw resamples groups
(as in `metrics.paired`), takes each model's mean over the items drawn, and ranks the models
(1 = best, ties share the better rank). A model's interval spans the 2.5th to the 97.5th
percentile of its ranks over the draws. Models whose intervals overlap, directly or through
a chain of others, share a band: a leaderboard cannot tell them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metrics.paired import DRAWS, SEED


@dataclass(frozen=True)
class RankInterval:
    rank: int  # of the point estimates
    low: int
    high: int
    band: int  # 1 for the top band


def _ranks(means: np.ndarray) -> np.ndarray:
    """Per row of `means` (draws x models): each model's rank, 1 best, ties the better rank."""
    order = -means
    return (order[:, :, None] > order[:, None, :]).sum(axis=2) + 1


def rank_intervals(
    groups: Sequence[str],
    values: np.ndarray,
    *,
    draws: int = DRAWS,
    seed: int = SEED,
) -> list[RankInterval]:
    """`values` is items x models (the items all models answered, paired), `groups` each
    item's group. Returns one RankInterval per model, in the columns' order."""
    values = np.asarray(values, dtype=float)
    index: dict[str, int] = {}
    position = np.array([index.setdefault(g, len(index)) for g in groups], dtype=np.int64)
    count = len(index)
    sums = np.stack(
        [
            np.bincount(position, weights=values[:, m], minlength=count)
            for m in range(values.shape[1])
        ],
        axis=1,
    )  # groups x models
    sizes = np.bincount(position, minlength=count).astype(float)
    point = _ranks((sums.sum(axis=0) / sizes.sum())[None, :])[0]
    picks = np.random.default_rng(seed).integers(0, count, size=(draws, count))
    means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)[:, None]
    ranks = _ranks(means)
    low = np.percentile(ranks, 2.5, axis=0, method="lower").astype(int)
    high = np.percentile(ranks, 97.5, axis=0, method="higher").astype(int)
    bands = bands_of(
        [(int(p), int(lo), int(hi)) for p, lo, hi in zip(point, low, high, strict=True)]
    )
    return [
        RankInterval(int(p), int(lo), int(hi), band)
        for p, lo, hi, band in zip(point, low, high, bands, strict=True)
    ]


def bands_of(intervals: Sequence[tuple[int, int, int]]) -> list[int]:
    """Bands of (rank, low, high) intervals: sorted by rank, a model joins the band before it
    when its interval starts at or before the furthest end seen in that band."""
    order = sorted(range(len(intervals)), key=lambda i: (intervals[i][0], intervals[i][1]))
    bands = [0] * len(intervals)
    band, reach = 0, -1
    for i in order:
        _, low, high = intervals[i]
        if low > reach:
            band += 1
            reach = high
        else:
            reach = max(reach, high)
        bands[i] = band
    return bands
