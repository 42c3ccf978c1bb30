"""What it would take to tell two results apart, worked out here from the reference's
formulas: MDE = (z_{α/2} + z_β)·sd(d)/√n, n = ((z_{α/2} + z_β)·sd(d)/δ)²."""

from __future__ import annotations

import math

import numpy as np

from evalfleet.metrics.intervals import UnitValues, paired
from evalfleet.metrics.paired import paired_test
from evalfleet.reports import formatting as fmt
from evalfleet.reports.power import what_it_would_take

Z = 1.959964 + 0.841621


def rows(a_values, b_values, epochs=1, var_a=0.0, var_b=0.0):
    ids = [f"q{i:03d}" for i in range(len(a_values))]
    n = len(ids)
    a = UnitValues.of(ids, a_values, [epochs] * n, [var_a] * n)
    b = UnitValues.of(ids, b_values, [epochs] * n, [var_b] * n)
    return a, b, paired(a, b)


def test_zerobench_cannot_settle_a_small_difference_with_its_100_questions():
    # 3 of 100 right against 1 of 100, on the same questions otherwise wrong
    a_values = [1.0] * 3 + [0.0] * 97
    b_values = [1.0] * 1 + [0.0] * 99
    a, b, found = rows(a_values, b_values)
    d = np.array(a_values) - np.array(b_values)
    sd = float(np.std(d, ddof=1))
    needed = math.ceil((Z * sd / 0.02) ** 2)
    assert needed > 100
    power = what_it_would_take(a, b, found, "zerobench", cost_per_unit_usd=0.01)
    assert power.mde == Z * sd / 10
    assert power.needed == needed
    assert power.words == (
        f"with 100 questions the smallest difference 80 % power detects is {Z * sd / 10:.3f}; "
        f"detecting +0.020 needs about {needed:,} questions and zerobench has 100: it cannot "
        "be settled on this benchmark"
    )


def test_a_bigger_pool_says_how_many_more_items_and_what_they_cost():
    rng = np.random.default_rng(3)
    a_values = (rng.random(40) < 0.6).astype(float)
    b_values = (rng.random(40) < 0.5).astype(float)
    a, b, found = rows(list(a_values), list(b_values))
    assert not found.significant
    needed = math.ceil((Z * found.sd / abs(found.difference)) ** 2)
    power = what_it_would_take(a, b, found, "datbench", cost_per_unit_usd=0.002)
    more = needed - 40
    assert power.needed == needed and more > 0
    assert power.words.endswith(
        f"about {more:,} more items ({needed:,} in all) would detect "
        f"{found.difference:+.3f}, about {fmt.money(more * 0.002)} at this run's prices"
    )


def test_means_over_epochs_say_how_many_epochs_would_do():
    # ROME-like: 40 questions, each a mean over 4 epochs whose spread within is 0.25 a side
    a_values = [0.75 if i % 2 else 0.25 for i in range(40)]
    b_values = [0.25 if i % 2 else 0.5 for i in range(40)]
    a, b, found = rows(a_values, b_values, epochs=4, var_a=0.25, var_b=0.25)
    within = 0.5
    between = found.sd**2 - within / 4  # what more epochs cannot shrink
    room = found.difference**2 * 40 / Z**2 - between
    power = what_it_would_take(a, b, found, "rome", cost_per_unit_usd=None)
    assert power.epochs == math.ceil(within / room) == 9


def test_money_has_two_significant_digits():
    assert [fmt.money(x) for x in (0.00077123, 0.0131, 1.234, 12.34, 1234.5, 0)] == [
        "$0.00077",
        "$0.013",
        "$1.2",
        "$12",
        "$1,234",
        "$0",
    ]
    assert fmt.tokens(40.4) == "40" and fmt.share(0.25) == "0.250"


def test_no_difference_no_need():
    a, b, found = rows([1.0, 0.0] * 10, [1.0, 0.0] * 10)
    power = what_it_would_take(a, b, found, "zerobench", 0.01)
    assert power.needed is None and power.mde is None
    assert power.words == (
        "none of the 20 shared questions differs: a difference smaller than about 0.161 "
        "cannot be ruled out"
    )


def test_case_6_every_unit_differing_alike_is_not_called_no_difference():
    """Issue 48 case 6: A right on all 120, B on none. The SD of the differences is 0: the
    old text said the smallest detectable difference was 0.000 and that no difference was
    observed, beside A − B = +1.000."""
    a, b, found = rows([1.0] * 120, [0.0] * 120)
    test = paired_test(a, b)
    power = what_it_would_take(a, b, found, "zerobench", 0.01, test)
    assert power.mde is None and test.p == math.erfc(math.sqrt(60))  # X² = 120
    assert power.words == (
        "every one of the 120 shared questions differs by +1.000: no spread to size a power "
        "figure from; the difference is significant"
    )


def test_case_7_the_pool_is_the_dataset_the_run_used():
    """Issue 48 case 7: a 120-question local ZeroBench dataset is weighed against its own
    120 questions, and a published run against ZeroBench's 100 never below the units
    measured."""
    a_values = [1.0] * 3 + [0.0] * 117
    b_values = [1.0] * 1 + [0.0] * 119
    a, b, found = rows(a_values, b_values)
    own = what_it_would_take(a, b, found, "zerobench", None, paired_test(a, b), pool=120)
    assert "zerobench has 120: it cannot be settled" in own.words
    published = what_it_would_take(a, b, found, "zerobench", None, paired_test(a, b))
    assert "has 100" not in published.words and "has 120" in published.words
    unknown = what_it_would_take(a, b, found, "zerobench", None, paired_test(a, b), pool=None)
    assert "cannot be settled" not in unknown.words
    assert "more questions" in unknown.words
