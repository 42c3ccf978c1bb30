"""Ranks by paired significance: a rank is 1 plus the rows significantly better, bands never
claim a difference the paired test (Holm-adjusted) does not show."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evalfleet.metrics.intervals import UnitValues
from evalfleet.metrics.paired import holm, paired_test
from evalfleet.metrics.ranking import NONE, significance_ranks


def rows_of(matrix: np.ndarray) -> list[UnitValues]:
    ids = [f"q{i:04d}" for i in range(matrix.shape[0])]
    return [UnitValues.of(ids, matrix[:, m], binary=True) for m in range(matrix.shape[1])]


def test_rank_counts_the_rows_significantly_better():
    rng = np.random.default_rng(1)
    # accuracy 0.9, 0.5, 0.48, 0.1 on 400 questions: the middle two cannot be told apart
    matrix = np.stack([rng.random(400) < p for p in (0.9, 0.5, 0.48, 0.1)], axis=1)
    ranked = significance_ranks(rows_of(matrix.astype(float)))
    assert [r.rank for r in ranked] == [1, 2, 2, 4]
    assert [r.band for r in ranked] == [1, 2, 2, 3]
    assert ranked[0].better_than == (1, 2, 3)


def test_one_shared_unit_ranks_everyone_first():
    ranked = significance_ranks(rows_of(np.array([[1, 0]], float)))
    assert [(r.rank, r.band) for r in ranked] == [(1, 1), (1, 1)]


def test_bands_agree_with_the_holm_adjusted_paired_test_on_random_boards():
    """On random boards: two rows in different bands differ significantly by the paired test
    compare prints, at Holm's adjusted 5 % over the board's pairs; rows with equal ranks
    share a band, and a rank is 1 plus the rows significantly better."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        models = int(rng.integers(2, 7))
        units = int(rng.integers(8, 80))
        skills = rng.random(models)
        matrix = (rng.random((units, models)) < skills).astype(float)
        rows = rows_of(matrix)
        ranked = significance_ranks(rows)
        pairs = list(itertools.combinations(range(models), 2))
        p_values = holm([paired_test(rows[i], rows[j]).p for i, j in pairs])
        adjusted = dict(zip(pairs, p_values, strict=True))
        for i, j in pairs:
            if ranked[i].band != ranked[j].band:
                assert adjusted[(i, j)] < 0.05
            if ranked[i].rank == ranked[j].rank:
                assert ranked[i].band == ranked[j].band
        for i in range(models):
            better = [
                j
                for j in range(models)
                if j != i
                and adjusted[tuple(sorted((i, j)))] < 0.05
                and matrix[:, j].mean() > matrix[:, i].mean()
            ]
            assert ranked[i].rank == 1 + len(better)


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.04 of 3: 0.03, 0.04, 0.04 (each at least the one before)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([]) == []


def test_many_equal_models_are_not_told_apart_without_holm_they_are():
    """Issue 48 case 3: 8 models, no true difference, 120 items. A board whose smallest of
    28 unadjusted p-values is below 5 % ranks everyone first under Holm."""
    rng = np.random.default_rng(2)
    for _ in range(50):
        chance = rng.random(120)
        rows = rows_of(np.stack([rng.random(120) < chance for _ in range(8)], axis=1).astype(float))
        unadjusted = significance_ranks(rows, NONE)
        if any(r.rank > 1 for r in unadjusted):
            break
    assert any(r.rank > 1 for r in unadjusted)
    assert [r.rank for r in significance_ranks(rows)] == [1] * 8
    with pytest.raises(ValueError, match="adjust is one of holm, none"):
        significance_ranks(rows, "bonferroni")
