"""Ranks by paired significance: a rank is 1 plus the rows significantly better, bands never
claim a difference the paired interval does not show."""

from __future__ import annotations

import itertools

import numpy as np

from evalfleet.metrics.intervals import UnitValues, paired
from evalfleet.metrics.ranking import significance_ranks


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


def test_too_few_units_rank_everyone_first():
    ranked = significance_ranks(rows_of(np.array([[1, 0], [1, 0], [1, 0], [1, 0]], float)))
    assert [(r.rank, r.band) for r in ranked] == [(1, 1), (1, 1)]


def test_bands_agree_with_the_paired_interval_on_random_boards():
    """On random boards: two rows in different bands differ significantly by `paired` (the
    function compare prints), rows with equal ranks share a band, and a rank is 1 plus the
    rows significantly better."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        models = int(rng.integers(2, 7))
        units = int(rng.integers(8, 80))
        skills = rng.random(models)
        matrix = (rng.random((units, models)) < skills).astype(float)
        rows = rows_of(matrix)
        ranked = significance_ranks(rows)
        for i, j in itertools.combinations(range(models), 2):
            found = paired(rows[i], rows[j])
            if ranked[i].band != ranked[j].band:
                assert found.low is not None and (found.low > 0 or found.high < 0)
            if ranked[i].rank == ranked[j].rank:
                assert ranked[i].band == ranked[j].band
        for i in range(models):
            better = [j for j in range(models) if j != i and paired(rows[j], rows[i]).a_better]
            assert ranked[i].rank == 1 + len(better)
