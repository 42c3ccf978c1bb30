"""Honest ranks for the leaderboard: each row's rank comes with the interval a paired
bootstrap gives it (`metrics.ranking`), and rows that cannot be told apart share a band.

Within (benchmark, scoring mode), complete rows are ranked among themselves and rows whose
coverage is below 100 % apart, among themselves: a partial result is not a place on the
board. The point rank is the rank of the headline value (ties share the better rank); the
interval comes from the per-sample scores (mean over each row's epochs) on the samples every
row of the group answered, resampling groups (ZeroBench's main questions for its
subquestions); it always contains the point rank.
"""

from __future__ import annotations

import pandas as pd

from metrics.ranking import bands_of, rank_intervals


def rank_rows(frame: pd.DataFrame, samples_of: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """`frame` with rank, rank_low, rank_high, band and ranked_among set."""
    frame = frame.copy()
    for column in ("rank", "rank_low", "rank_high", "band"):
        frame[column] = 0
    frame["ranked_among"] = frame["complete"].map({True: "complete", False: "partial"})
    for _, part in frame.groupby(["benchmark", "scoring", "ranked_among"], sort=False):
        ranks = part["value"].rank(ascending=False, method="min").fillna(len(part)).astype(int)
        low, high = _intervals(part, samples_of, ranks)
        bands = bands_of(list(zip(ranks, low, high, strict=True)))
        frame.loc[part.index, "rank"] = list(ranks)
        frame.loc[part.index, "rank_low"] = low
        frame.loc[part.index, "rank_high"] = high
        frame.loc[part.index, "band"] = bands
    return frame


def _intervals(
    part: pd.DataFrame, samples_of: dict[tuple[str, str], pd.DataFrame], ranks: pd.Series
) -> tuple[list[int], list[int]]:
    points = [int(r) for r in ranks]
    if len(part) == 1:
        return points, points
    per_row, groups = [], {}
    for row in part.itertuples(index=False):
        samples = samples_of.get((row.run_id, row.version))
        if samples is None:
            return points, points
        mine = samples[
            (samples.model == row.model)
            & (samples.benchmark == row.benchmark)
            & (samples.scoring == row.scoring)
        ]
        per_row.append(mine.groupby("sample_id")["value"].mean())
        clusters = mine.cluster if "cluster" in mine else mine.sample_id  # older tables
        groups.update(zip(mine.sample_id, clusters, strict=True))
    common = sorted(set.intersection(*(set(v.index) for v in per_row)))
    if not common:  # no paired samples: nothing to resample
        return points, points
    values = pd.concat([v.loc[common] for v in per_row], axis=1).to_numpy(dtype=float)
    found = rank_intervals([groups[s] for s in common], values)
    low = [min(f.low, p) for f, p in zip(found, points, strict=True)]
    high = [max(f.high, p) for f, p in zip(found, points, strict=True)]
    return low, high


def rank_text(rank: int, low: int, high: int) -> str:
    return str(rank) if low == high else f"{rank} ({low}–{high})"
