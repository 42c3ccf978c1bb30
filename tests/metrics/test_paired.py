"""Paired tests and rank intervals against values worked out here, not by the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics.paired import cohens_kappa, mcnemar_exact, paired_difference
from metrics.ranking import bands_of, rank_intervals


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the two nearest ranks (numpy's default), by hand."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def test_mcnemar_exact_by_hand():
    # 7 discordant pairs one way, 2 the other: 2 * (C(9,0) + C(9,1) + C(9,2)) / 2^9
    assert mcnemar_exact(7, 2) == pytest.approx(2 * (1 + 9 + 36) / 512, abs=1e-15)
    assert mcnemar_exact(2, 7) == mcnemar_exact(7, 2)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0  # 2 * P(X <= 3 | n=6) = 2 * 42/64 > 1
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024, abs=1e-15)


def test_cohens_kappa_by_hand():
    a = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1]
    b = [1, 1, 0, 0, 0, 1, 1, 0, 1, 1]
    agree, kappa = cohens_kappa([bool(x) for x in a], [bool(x) for x in b])
    # agreement 8/10; both say yes 6/10 of the time: chance 0.6*0.6 + 0.4*0.4 = 0.52
    assert agree == pytest.approx(80.0)
    assert kappa == pytest.approx((0.8 - 0.52) / (1 - 0.52), abs=1e-12)
    assert cohens_kappa([True, False], [False, True]) == (0.0, -1.0)
    assert math.isnan(cohens_kappa([True, True], [True, True])[1])


def test_paired_bootstrap_resamples_groups_as_documented():
    # six groups (main questions) of one to three items; a is right more often than b
    groups = ["g1", "g1", "g2", "g3", "g3", "g3", "g4", "g5", "g5", "g6"]
    a = [1, 1, 0, 1, 1, 0, 1, 1, 0, 1]
    b = [0, 1, 0, 0, 1, 0, 1, 0, 0, 0]
    result = paired_difference(groups, a, b, draws=500, seed=7)
    assert (result.a, result.b) == (0.7, 0.3)
    assert result.difference == pytest.approx(0.4, abs=1e-12)
    assert (result.items, result.groups) == (10, 6)

    # the same draws, done item by item
    names = ["g1", "g2", "g3", "g4", "g5", "g6"]
    picks = np.random.default_rng(7).integers(0, 6, size=(500, 6))
    diffs = []
    for row in picks:
        chosen = [i for g in row for i, name in enumerate(groups) if name == names[g]]
        diffs.append(sum(a[i] - b[i] for i in chosen) / len(chosen))
    assert result.low == pytest.approx(percentile(diffs, 0.025), abs=1e-12)
    assert result.high == pytest.approx(percentile(diffs, 0.975), abs=1e-12)
    assert 0 < result.low < 0.4 < result.high


def test_identical_sides_differ_by_zero():
    groups = [str(i) for i in range(20)]
    values = [i % 3 == 0 for i in range(20)]
    result = paired_difference(groups, values, values)
    assert (result.difference, result.low, result.high) == (0.0, 0.0, 0.0)


def test_rank_intervals_and_bands():
    rng = np.random.default_rng(1)
    items = 400
    groups = [str(i) for i in range(items)]
    # accuracy 0.9, 0.5, 0.48, 0.1: the middle two cannot be told apart on 400 items
    values = np.stack([rng.random(items) < p for p in (0.9, 0.5, 0.48, 0.1)], axis=1)
    ranks = rank_intervals(groups, values.astype(float))
    assert [(r.rank, r.low, r.high) for r in (ranks[0], ranks[3])] == [(1, 1, 1), (4, 4, 4)]
    assert {ranks[1].rank, ranks[2].rank} == {2, 3}
    assert (ranks[1].low, ranks[1].high, ranks[2].low, ranks[2].high) == (2, 3, 2, 3)
    assert [r.band for r in ranks] == [1, 2, 2, 3]


def test_bands_chain_through_overlaps():
    # 1-2 overlaps 2-3, which overlaps 3-4: one band; 5-5 stands apart
    assert bands_of([(1, 1, 2), (2, 2, 3), (3, 3, 4), (4, 5, 5)]) == [1, 1, 1, 2]
    assert bands_of([(2, 2, 2), (1, 1, 1)]) == [2, 1]
