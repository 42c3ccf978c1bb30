"""The one interval function per kind of figure, against the reference's vectors
(`reference/statistics.md`, exact arithmetic), scipy's independent implementations and draws
worked out here."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evalfleet.metrics.aggregates import se_over_group_means
from evalfleet.metrics.intervals import (
    COUNTS_FROM,
    DRAWS,
    UnitValues,
    epochs_needed,
    mde,
    paired,
    unit_mean_interval,
    units_from_observations,
    units_needed,
    wilson,
)

Z = 1.959964
WILSON_VECTORS = [  # k, n, low, high (reference/statistics.md)
    (0, 100, 0.0, 0.036993),
    (2, 100, 0.005502, 0.070012),
    (50, 100, 0.403832, 0.596168),
    (100, 100, 0.963007, 1.0),
    (1, 4, 0.045587, 0.699358),
    (3, 4, 0.300642, 0.954413),
]


@pytest.mark.parametrize(("k", "n", "low", "high"), WILSON_VECTORS)
def test_wilson_matches_the_reference(k, n, low, high):
    found = wilson(k, n)
    assert (round(found.low, 6), round(found.high, 6)) == (low, high)
    assert found.method == "wilson"


def test_wilson_matches_scipy_on_every_count_up_to_120():
    for n in (1, 5, 17, 100, 120):
        for k in range(n + 1):
            ours = wilson(k, n)
            theirs = stats.binomtest(k, n).proportion_ci(method="wilson")
            assert ours.low == pytest.approx(theirs.low, abs=2e-7)
            assert ours.high == pytest.approx(theirs.high, abs=2e-7)


def test_nothing_right_is_never_certainty():
    # 0 of 120: the upper bound is z²/(n + z²), not 0
    assert wilson(0, 120).high == pytest.approx(Z**2 / (120 + Z**2), abs=1e-12)
    assert wilson(0, 120).high >= 0.03
    assert wilson(5, 5).low < 1.0  # a partial row of 5 right answers is not 1.000–1.000


def test_binary_units_get_wilson_and_others_the_bootstrap():
    binary = units_from_observations([(f"q{i}", 0, float(i < 2)) for i in range(100)])
    assert binary.binary
    assert binary.interval() == wilson(2, 100)
    # the same questions over two epochs: a mean of per-question values, bootstrapped
    sampled = units_from_observations(
        [(f"q{i}", e, float(i < 2 or (e == 1 and i < 5))) for i in range(100) for e in (0, 1)]
    )
    assert not sampled.binary
    assert sampled.interval().method == "bootstrap"


def test_bootstrap_is_the_documented_draws():
    values = np.array([0.0, 0.25, 1.0, 0.5, 0.5, 0.0, 1.0, 0.75, 0.25, 0.0] * 3)  # 30 units
    picks = np.random.default_rng(0).integers(0, len(values), size=(DRAWS, len(values)))
    means = sorted(values[row].mean() for row in picks)

    def percentile(q: float) -> float:  # linear interpolation, by hand
        position = (len(means) - 1) * q
        below = math.floor(position)
        return means[below] + (means[below + 1] - means[below]) * (position - below)

    found = unit_mean_interval(values)
    assert found.method == "bootstrap"
    assert found.low == pytest.approx(percentile(0.025), abs=1e-12)
    assert found.high == pytest.approx(percentile(0.975), abs=1e-12)


def test_a_large_bootstrap_of_few_values_draws_their_counts():
    """From COUNTS_FROM units of few distinct values, each resample is drawn as how many
    times it holds each value: the documented multinomial draws, and the same distribution
    as drawing every unit (the percentiles agree with the index draws within Monte Carlo
    error)."""
    rng = np.random.default_rng(3)
    values = rng.integers(0, 7, size=COUNTS_FROM) / 6  # means over six 0/1 epochs
    levels, counts = np.unique(values, return_counts=True)
    picks = np.random.default_rng(0).multinomial(len(values), counts / len(values), DRAWS)
    means = np.sort(picks @ levels / len(values))
    found = unit_mean_interval(values)
    assert found.method == "bootstrap"
    assert found.low == pytest.approx(np.percentile(means, 2.5), abs=1e-12)
    assert found.high == pytest.approx(np.percentile(means, 97.5), abs=1e-12)
    indices = np.random.default_rng(9).integers(0, len(values), size=(2_000, len(values)))
    by_index = values[indices].mean(axis=1)
    assert found.low == pytest.approx(np.percentile(by_index, 2.5), abs=6e-4)
    assert found.high == pytest.approx(np.percentile(by_index, 97.5), abs=6e-4)
    # the same mean and spread as the normal form: SE = sd / sqrt(n)
    se = values.std(ddof=1) / math.sqrt(len(values))
    assert found.high - found.low == pytest.approx(2 * Z * se, rel=0.05)


def test_bootstrap_agrees_with_scipys_on_clustered_data():
    """Subquestions grouped by main question: a unit is a main question, valued by the mean
    of its subquestions; scipy's percentile bootstrap of the same unit values (its own
    random draws) gives the same interval within Monte Carlo error."""
    rng = np.random.default_rng(5)
    observations = []
    for main in range(60):
        skill = rng.random()
        for _sub in range(int(rng.integers(1, 6))):
            observations.append((f"m{main}", 0, float(rng.random() < skill)))
    units = units_from_observations(observations)
    assert len(units) == 60 and not units.binary
    ours = units.interval()
    theirs = stats.bootstrap(
        (units.values,),
        np.mean,
        n_resamples=DRAWS,
        method="percentile",
        rng=np.random.default_rng(11),
    ).confidence_interval
    assert ours.low == pytest.approx(theirs.low, abs=0.012)
    assert ours.high == pytest.approx(theirs.high, abs=0.012)
    # and its width is that of the SE over group means (the CLT form), within 10 %
    groups = [u for u, _, _ in observations]
    values = [v for _, _, v in observations]
    clt = 2 * Z * se_over_group_means(values, groups) * math.sqrt(59 / 60)
    assert ours.high - ours.low == pytest.approx(clt, rel=0.1)


def test_constant_unit_values_fall_back_to_wilson_never_zero_width():
    assert unit_mean_interval([0.0] * 12) == wilson(0, 12)
    assert unit_mean_interval([1.0] * 12) == wilson(12, 12)
    half = unit_mean_interval([0.5] * 12)
    assert half == wilson(6, 12) and half.high - half.low > 0.2


def test_units_from_observations_means_within_then_over_epochs():
    units = units_from_observations(
        [("a", 0, 1.0), ("a", 0, 0.0), ("a", 1, 1.0), ("b", 0, 1.0), ("b", 1, 0.0)]
    )
    assert units.ids == ("a", "b")
    assert list(units.values) == [0.75, 0.5]  # a: (0.5 + 1) / 2
    assert list(units.epochs) == [2, 2]
    assert list(units.epoch_var) == pytest.approx([0.125, 0.5])  # ddof 1 over epoch means
    assert not units.binary


def test_paired_difference_on_shared_units_by_hand():
    a_values = [1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 3
    b_values = [1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0] * 3
    a = UnitValues.of([f"q{i}" for i in range(36)], a_values)
    b = UnitValues.of([f"q{i}" for i in range(2, 38)], b_values)
    found = paired(a, b)
    common = [f"q{i}" for i in range(2, 36)]  # sorted as strings: q10, q11, q2, ...
    order = sorted(common)
    va = np.array([dict(zip(a.ids, a.values, strict=True))[u] for u in order])
    vb = np.array([dict(zip(b.ids, b.values, strict=True))[u] for u in order])
    d = va - vb
    picks = np.random.default_rng(0).integers(0, 34, size=(DRAWS, 34))
    low, high = np.percentile(d[picks].mean(axis=1), [2.5, 97.5])
    assert found.units == 34 and found.method == "bootstrap"
    assert (found.a, found.b, found.difference) == pytest.approx((va.mean(), vb.mean(), d.mean()))
    assert (found.low, found.high) == pytest.approx((low, high), abs=1e-12)
    assert found.sd == pytest.approx(np.std(d, ddof=1))
    # the other way round: exactly the negated interval, so significance never depends on
    # which side is A
    back = paired(b, a)
    assert (back.low, back.high) == pytest.approx((-found.high, -found.low), abs=1e-12)


def test_a_paired_interval_below_thirty_units_is_t_and_one_unit_gets_none():
    ids = [str(i) for i in range(9)]
    a, b = [1, 0, 1, 0, 1, 1, 0, 0, 1], [0, 1, 0, 0, 1, 0, 0, 1, 0]
    few = paired(UnitValues.of(ids, a), UnitValues.of(ids, b))
    d = np.array(a, float) - np.array(b, float)
    half = stats.t.ppf(0.975, 8) * d.std(ddof=1) / 3
    assert few.method == "t"
    assert (few.low, few.high) == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-12)
    one = paired(UnitValues.of(["x"], [1]), UnitValues.of(["x"], [0]))
    assert one.low is None and one.why == "one shared unit"
    assert paired(UnitValues.of(["x"], [1]), UnitValues.of(["y"], [1])) is None


def test_power_figures_match_the_reference_formulas():
    # MDE = (z_{α/2} + z_β)·sd/sqrt(n); n = ((z_{α/2} + z_β)·sd/δ)²
    assert mde(0.5, 100) == pytest.approx((1.959964 + 0.841621) * 0.05, abs=1e-12)
    assert units_needed(0.5, 0.05) == math.ceil(((1.959964 + 0.841621) * 0.5 / 0.05) ** 2)
    assert units_needed(0.5, 0.0) is None
    # epochs: Var(d̄) = (σ²_b + σ²_w/E)/n ≤ (δ/(z+zβ))²
    needed = epochs_needed(0.01, 0.2, 100, 0.06)
    room = 0.06**2 * 100 / (1.959964 + 0.841621) ** 2 - 0.01
    assert needed == math.ceil(0.2 / room)
    assert epochs_needed(0.5, 0.2, 100, 0.06) is None  # the spread between units hides it


def test_exact_coverage_at_zerobench_scores():
    """The reference's exact binomial coverage at n = 100: Wilson holds, Wald does not."""

    def coverage(p: float, interval) -> float:
        return sum(
            stats.binom.pmf(k, 100, p) for k in range(101) if interval(k)[0] <= p <= interval(k)[1]
        )

    def wald(k: int) -> tuple[float, float]:
        q = k / 100
        half = Z * math.sqrt(q * (1 - q) / 100)
        return max(0.0, q - half), min(1.0, q + half)

    def wilson_bounds(k: int) -> tuple[float, float]:
        found = wilson(k, 100)
        return found.low, found.high

    for p, want_wilson, want_wald in [
        (0.01, 0.9206, 0.6334),
        (0.02, 0.9492, 0.8664),
        (0.03, 0.9688, 0.8022),
        (0.05, 0.9659, 0.8775),
    ]:
        assert round(coverage(p, wilson_bounds), 4) == want_wilson
        assert round(coverage(p, wald), 4) == want_wald


def test_the_coverage_script_prints_wilson_holding_and_wald_not():
    script = Path(__file__).resolve().parents[2] / "perf" / "coverage.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    last = dict(pair.split("=") for pair in done.stdout.strip().splitlines()[-1].split())
    assert float(last["coverage_wilson"]) >= 0.93  # 0.969 by exact arithmetic
    assert float(last["coverage_wald"]) <= 0.85  # 0.802 by exact arithmetic
    # issue 48's figures, 2,000 runs each
    assert float(last["coverage_cluster_small"]) >= 0.93
    assert float(last["coverage_wilson_p0_n500"]) == 1.0
    assert float(last["type1_clustered_paired"]) <= 0.07
    assert float(last["type1_plain_mcnemar"]) >= 0.10  # what subquestions as items would do
    assert float(last["fwer_ranks"]) <= 0.07
    assert float(last["fwer_unadjusted"]) >= 0.2


def test_a_headline_interval_does_not_depend_on_the_order_units_came_in():
    ids = [f"q{i:02d}" for i in range(30)]
    values = [(i * 7 % 11) / 10 for i in range(30)]
    forward = UnitValues.of(ids, values).interval()
    backward = UnitValues.of(ids[::-1], values[::-1]).interval()
    assert forward == backward == unit_mean_interval(values)  # ids sort as they were given
