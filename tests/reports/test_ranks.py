"""The leaderboard's rank intervals on a board built here: complete rows ranked among
themselves on the samples they all answered, the partial row apart, and the intervals those
of the documented bootstrap worked out item by item in this file."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports.ranks import rank_rows

MODELS = ["a", "b", "c"]
# per model, right (1) or wrong (0) on 12 samples in 4 clusters of 3, two epochs each
RIGHT = {
    "a": [1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1],
    "b": [1, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1],
    "c": [0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1],
}


def samples(model: str) -> pd.DataFrame:
    rows = []
    for i, right in enumerate(RIGHT[model]):
        for epoch in (0, 1):
            value = float(right if epoch == 0 else 1 - right if i == 0 else right)
            rows.append(
                {
                    "model": model,
                    "benchmark": "bench",
                    "scoring": "rule",
                    "sample_id": f"s{i}",
                    "cluster": f"g{i // 3}",
                    "epoch": epoch,
                    "value": value,
                }  # fmt: skip
            )
    return pd.DataFrame(rows)


def board() -> tuple[pd.DataFrame, dict]:
    frame = pd.DataFrame(
        [
            {
                "benchmark": "bench",
                "scoring": "rule",
                "model": m,
                "complete": True,
                "value": float(np.mean(RIGHT[m])),
                "run_id": m,
                "version": "v",
            }  # fmt: skip
            for m in MODELS
        ]
        + [
            {
                "benchmark": "bench",
                "scoring": "rule",
                "model": "partial",
                "complete": False,
                "value": 0.9,
                "run_id": "p",
                "version": "v",
            }  # fmt: skip
        ]
    )
    samples_of = {(m, "v"): samples(m) for m in MODELS}
    samples_of[("p", "v")] = samples("a").assign(model="partial")
    return frame, samples_of


def by_hand() -> dict[str, tuple[int, int]]:
    """The documented bootstrap: clusters numbered in order of first appearance among the
    sorted common samples; 2,000 draws of numpy's default_rng(0); per draw each model's mean
    of its per-sample means over the samples drawn, ranked 1 best, ties the better rank;
    the 2.5th (lower) and 97.5th (higher) percentiles of the ranks."""
    ids = sorted(f"s{i}" for i in range(12))
    cluster_of = {f"s{i}": f"g{i // 3}" for i in range(12)}
    order = list(dict.fromkeys(cluster_of[s] for s in ids))
    per_sample = {m: samples(m).groupby("sample_id")["value"].mean() for m in MODELS}
    picks = np.random.default_rng(0).integers(0, len(order), size=(2000, len(order)))
    ranks = {m: [] for m in MODELS}
    for row in picks:
        chosen = [s for g in row for s in ids if cluster_of[s] == order[g]]
        means = {m: sum(per_sample[m][s] for s in chosen) / len(chosen) for m in MODELS}
        for m in MODELS:
            ranks[m].append(1 + sum(means[o] > means[m] for o in MODELS))
    return {
        m: (
            int(np.percentile(ranks[m], 2.5, method="lower")),
            int(np.percentile(ranks[m], 97.5, method="higher")),
        )
        for m in MODELS
    }


def test_rank_intervals_are_the_documented_bootstrap():
    frame, samples_of = board()
    ranked = rank_rows(frame, samples_of).set_index("model")
    expected = by_hand()
    for model in MODELS:
        point = int(ranked.loc[model, "rank"])
        low, high = expected[model]
        assert (ranked.loc[model, "rank_low"], ranked.loc[model, "rank_high"]) == (
            min(low, point),
            max(high, point),
        )
    assert list(ranked.loc[MODELS, "rank"]) == [1, 2, 3]
    # a and b overlap, c stands apart here: two bands
    assert expected["a"][1] >= expected["b"][0] and expected["c"][0] > expected["b"][1]
    assert list(ranked.loc[MODELS, "band"]) == [1, 1, 2]
    # the partial row is ranked apart, alone: its own first place, not above `a`
    assert tuple(ranked.loc["partial", ["rank", "rank_low", "rank_high", "band"]]) == (1, 1, 1, 1)
    assert ranked.loc["partial", "ranked_among"] == "partial"
