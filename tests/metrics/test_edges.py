"""Issue 48, "numbers at the edges", at the level of the statistics: each numbered case on
data built for it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalfleet.metrics.intervals import SMALL, UnitValues, paired, wilson
from evalfleet.metrics.paired import CLUSTERED, MCNEMAR, mcnemar_exact, paired_test


def test_case_1_subquestions_get_the_clustered_mcnemar():
    """Durkalski's statistic on per-unit differences, by hand: X² = (Σd)² / Σd²."""
    ids = ["m1", "m2", "m3", "m4", "m5"]
    a = UnitValues.of(ids, [1.0, 0.75, 0.5, 1.0, 0.25])
    b = UnitValues.of(ids, [0.0, 0.25, 0.5, 0.5, 0.5])
    found = paired_test(a, b)
    d = np.array([1.0, 0.5, 0.0, 0.5, -0.25])
    statistic = d.sum() ** 2 / (d * d).sum()  # 1.75² / 1.5625 = 1.96
    assert statistic == pytest.approx(1.96)
    assert found.name == CLUSTERED
    assert found.p == pytest.approx(stats.chi2.sf(1.96, 1), abs=1e-12)  # 0.16151
    assert round(found.p, 5) == 0.16151
    assert paired_test(a, a).p == 1.0


def test_case_1_clustered_p_is_far_from_the_items_as_independent_p():
    """Four main questions of 10 subquestions where A is right on the first 9 of each and B
    on the first 6: 12 items flip, all one way. As independent items McNemar says 0.00049; as
    4 units each differing by 0.3 the clustered test says 0.0455."""
    ids = [f"m{i}" for i in range(4)]
    found = paired_test(UnitValues.of(ids, [0.9] * 4), UnitValues.of(ids, [0.6] * 4))
    assert round(mcnemar_exact(12, 0), 5) == 0.00049
    assert found.p == pytest.approx(math.erfc(math.sqrt(4 / 2)), abs=1e-12)
    assert round(found.p, 4) == 0.0455


def test_case_2_binary_units_get_exact_mcnemar_on_the_units():
    ids = [f"q{i}" for i in range(40)]
    a = [1.0] * 10 + [0.0] * 3 + [1.0] * 20 + [0.0] * 7
    b = [0.0] * 10 + [1.0] * 3 + [1.0] * 20 + [0.0] * 7
    found = paired_test(UnitValues.of(ids, a, binary=True), UnitValues.of(ids, b, binary=True))
    assert (found.name, found.only_a, found.only_b) == (MCNEMAR, 10, 3)
    assert found.p == mcnemar_exact(10, 3)
    assert round(found.p, 4) == 0.0923


def test_case_4_one_unit_has_no_interval_and_few_units_the_small_sample_rule():
    assert UnitValues.of(["m1"], [0.5]).interval() is None
    assert UnitValues.of(["q1"], [1.0], binary=True).interval() is None
    values = [0.0, 0.25, 0.5, 0.75, 0.5, 0.25, 0.0, 1.0, 0.5, 0.25]
    found = UnitValues.of([f"m{i}" for i in range(10)], values).interval()
    m, spread = np.mean(values), np.var(values, ddof=1) / 10
    effective = m * (1 - m) / spread
    assert found.method == "small-sample Wilson"
    want = wilson(m * effective, effective, stats.t.ppf(0.975, 9))
    assert (found.low, found.high) == pytest.approx((want.low, want.high), abs=1e-12)
    assert SMALL == 30


def test_case_5_exact_ends():
    assert wilson(0, 500).low == 0.0
    assert wilson(120, 120).high == 1.0
    missed = [n for n in range(1, 2001) if wilson(0, n).low != 0 or wilson(n, n).high != 1]
    assert missed == []


def test_case_6_no_zero_width_paired_interval():
    ids = [f"q{i}" for i in range(120)]
    same = UnitValues.of(ids, [1.0] * 60 + [0.0] * 60, binary=True)
    found = paired(same, same)
    w = wilson(0, 120).high  # 0.031
    assert (found.low, found.high) == pytest.approx((-w, w), abs=1e-15)
    assert round(found.high, 3) == 0.031 and found.method == "none differs"
    apart = paired(UnitValues.of(ids, [1.0] * 120), UnitValues.of(ids, [0.0] * 120))
    assert (apart.low, apart.high) == pytest.approx((1 - 2 * w, 1.0), abs=1e-15)
    assert apart.high - apart.low > 0.06
