"""Every worked example of reference §1.7 (a)-(d) and §4.6, plus the upstream reliability tests."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import pytest

from evalfleet.metrics import (
    accuracy,
    all_samples_mean_stderr,
    clustered_stderr,
    count_correct,
    group_means,
    group_stderrs,
    grouped_mean,
    pass_at_k,
    point_biserial,
    reliability_at_k,
    se_over_group_means,
)


def close(actual: float, expected: float | Fraction) -> bool:
    return math.isclose(actual, float(expected), rel_tol=1e-12, abs_tol=1e-15)


def six(actual: float, expected: float) -> bool:
    """Equal to a value the reference prints with six decimals."""
    return abs(actual - expected) < 5e-7


def epochs(pattern: str) -> list[float]:
    return [1.0 if ch == "C" else 0.0 for ch in pattern]


def reduce(pattern: str, reducer: str) -> float:
    n, c = count_correct(epochs(pattern))
    kind, k = reducer.split("@")
    return pass_at_k(n, c, int(k)) if kind == "pass" else reliability_at_k(n, c, int(k))


# --- (a) the upstream README figure ------------------------------------------------------

README = [
    ("1_1", "CCCCC"),
    ("1_2", "CCCCC"),
    ("2_1", "ICIII"),
    ("2_2", "IIIII"),
    ("2_3", "ICICC"),
    ("2_4", "IIIII"),
    ("3_1", "CICCC"),
    ("3_2", "CCIII"),
]
README_GROUPS = [sid.split("_", 1)[0] for sid, _ in README]

# pattern -> (pass_at_1, pass_at_3, 3/3, pass_at_5, 5/5)
README_ROWS = {
    "CCCCC": (1.0, 1.0, 1.0, 1.0, 1.0),
    "ICIII": (Fraction(1, 5), Fraction(6, 10), 0, 1.0, 0),
    "IIIII": (0, 0, 0, 0, 0),
    "ICICC": (Fraction(3, 5), 1.0, Fraction(1, 10), 1.0, 0),
    "CICCC": (Fraction(4, 5), 1.0, Fraction(4, 10), 1.0, 0),
    "CCIII": (Fraction(2, 5), Fraction(9, 10), 0, 1.0, 0),
}


@pytest.mark.parametrize("pattern", sorted(README_ROWS))
def test_readme_figure_per_sample(pattern: str) -> None:
    got = [reduce(pattern, r) for r in ("pass@1", "pass@3", "rel@3", "pass@5", "rel@5")]
    for actual, expected in zip(got, README_ROWS[pattern], strict=True):
        assert close(actual, expected), (pattern, got)


def test_pass_at_1_float_reprs_match_upstream_exactly() -> None:
    assert pass_at_k(5, 1, 1) == 0.19999999999999996
    assert pass_at_k(5, 2, 1) == 0.3999999999999999


def test_readme_figure_grouped_pass_at_3() -> None:
    values = [reduce(p, "pass@3") for _, p in README]
    assert group_means(values, README_GROUPS) == pytest.approx(
        {"1": 1.0, "2": 0.4, "3": 0.95}, rel=1e-12
    )
    assert close(grouped_mean(values, README_GROUPS), 2.35 / 3)
    assert six(grouped_mean(values, README_GROUPS), 0.783333)
    assert close(accuracy(values), 0.6875)
    assert six(all_samples_mean_stderr(values), 0.157477)
    assert six(se_over_group_means(values, README_GROUPS), 0.192209)
    assert six(clustered_stderr(values, README_GROUPS), 0.215897)
    stderrs = group_stderrs(values, README_GROUPS)
    assert list(stderrs) == ["1", "2", "3"]
    assert stderrs["1"] == 0.0
    assert six(stderrs["2"], 0.244949)
    assert close(stderrs["3"], 0.05)


def test_readme_figure_grouped_3_of_3() -> None:
    values = [reduce(p, "rel@3") for _, p in README]
    means = group_means(values, README_GROUPS)
    assert close(means["1"], 1.0) and close(means["2"], 0.025) and close(means["3"], 0.2)
    assert close(grouped_mean(values, README_GROUPS), 1.225 / 3)
    assert six(grouped_mean(values, README_GROUPS), 0.408333)
    assert six(all_samples_mean_stderr(values), 0.157477)


# --- (b) unbiased vs naive estimators ---------------------------------------------------

# (n, c) -> (pass@3, pass@5, 3/3, 5/5) as exact fractions, then the reference's printed values
UNBIASED = {
    (10, 3): (1 - Fraction(35, 120), 1 - Fraction(21, 252), Fraction(1, 120), 0),
    (10, 1): (1 - Fraction(84, 120), 1 - Fraction(126, 252), 0, 0),
    (10, 9): (1, 1, Fraction(84, 120), Fraction(126, 252)),
    (8, 6): (1, 1, Fraction(20, 56), Fraction(6, 56)),
}
PRINTED = {
    (10, 3): (0.708333, 0.916667, 0.008333, 0.0),
    (10, 1): (0.3, 0.5, 0.0, 0.0),
    (10, 9): (1.0, 1.0, 0.7, 0.5),
    (8, 6): (1.0, 1.0, 0.357143, 0.107143),
}
NAIVE = {
    (10, 3): (0.657, 0.83193, 0.027, 0.00243),
    (10, 1): (0.271, 0.40951, 0.001, 1e-5),
    (10, 9): (0.999, 0.99999, 0.729, 0.59049),
    (8, 6): (0.984375, 0.999023, 0.421875, 0.237305),
}


@pytest.mark.parametrize("nc", sorted(UNBIASED))
def test_unbiased_estimators(nc: tuple[int, int]) -> None:
    n, c = nc
    got = (pass_at_k(n, c, 3), pass_at_k(n, c, 5), reliability_at_k(n, c, 3))
    got += (reliability_at_k(n, c, 5),)
    for actual, exact, printed in zip(got, UNBIASED[nc], PRINTED[nc], strict=True):
        assert close(actual, exact), (nc, got)
        assert six(actual, printed), (nc, got)


@pytest.mark.parametrize("nc", sorted(NAIVE))
def test_naive_estimators_differ_from_unbiased(nc: tuple[int, int]) -> None:
    n, c = nc
    p = c / n
    naive = (1 - (1 - p) ** 3, 1 - (1 - p) ** 5, p**3, p**5)
    for value, printed in zip(naive, NAIVE[nc], strict=True):
        assert six(value, printed)
    unbiased = (pass_at_k(n, c, 3), pass_at_k(n, c, 5), reliability_at_k(n, c, 3))
    assert all(u != v for u, v in zip(unbiased, naive, strict=False))


def test_too_few_epochs() -> None:
    # k > n was never measured: NaN for both (inspect_evals' reliability_at gives 0.0, which
    # reads as "never reliable"; reference/statistics.md: show —, never 0)
    assert math.isnan(pass_at_k(3, 2, 5))
    assert math.isnan(reliability_at_k(3, 3, 5))
    assert math.isnan(reliability_at_k(1, 1, 5))


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "k_of_k"),
    [(5, 2, 2, 0.7, 0.1), (5, 3, 2, 0.9, 0.3), (5, 0, 5, 0.0, 0.0), (5, 5, 5, 1.0, 1.0)]
    + [(2, 1, 2, 1.0, 0.0)],
)
def test_reference_vectors_of_pass_at_k_and_k_of_k(n, c, k, at_k, k_of_k) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(at_k, abs=1e-12)
    assert reliability_at_k(n, c, k) == pytest.approx(k_of_k, abs=1e-12)


def test_upstream_reliability_tests() -> None:
    n, c = count_correct([1, 1, 1, 0, 0, 0])
    assert reliability_at_k(n, c, 3) == 1 / 20
    assert reliability_at_k(n, c, 4) == 0.0
    n, c = count_correct([0] * 6 + [1] * 4)
    assert reliability_at_k(n, c, 3) == 4 / 120
    assert reliability_at_k(n, c, 4) == 1 / 210
    assert reliability_at_k(n, c, 5) == 0.0
    n, c = count_correct([0.75] * 6)
    assert reliability_at_k(n, c, 3) == 0.0
    n, c = count_correct([0.75] * 6, threshold=0.5)
    assert reliability_at_k(n, c, 5) == 1.0


@pytest.mark.parametrize("k", [0, -1])
def test_reliability_rejects_non_positive_k(k: int) -> None:
    with pytest.raises(ValueError, match="k must be positive"):
        reliability_at_k(5, 3, k)


def test_counts_are_validated() -> None:
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)


# --- (c) main task end to end -----------------------------------------------------------


def test_main_task_end_to_end() -> None:
    patterns = ["CCCCC", "ICIII", "IIIII", "ICICC"]
    assert close(accuracy([reduce(p, "pass@1") for p in patterns]), 0.45)
    assert accuracy([reduce(p, "pass@5") for p in patterns]) == 0.75
    assert accuracy([reduce(p, "rel@5") for p in patterns]) == 0.25


# --- (d) subquestions end to end --------------------------------------------------------

# reducer -> accuracy, group means, grouped mean, group stderrs, all_samples_mean_stderr
SUBQUESTIONS = {
    "pass@1": (0.5, (1.0, 0.2, 0.6), 0.6, (0.0, 0.141421, 0.2), 0.146385),
    "pass@5": (0.75, (1.0, 0.5, 1.0), 0.833333, (0.0, 0.288675, 0.0), 0.163663),
    "rel@5": (0.25, (1.0, 0.0, 0.0), 0.333333, (0.0, 0.0, 0.0), 0.163663),
}


@pytest.mark.parametrize("reducer", sorted(SUBQUESTIONS))
def test_subquestions_end_to_end(reducer: str) -> None:
    acc, means, grouped, stderrs, se = SUBQUESTIONS[reducer]
    values = [reduce(p, reducer) for _, p in README]
    assert close(accuracy(values), acc)
    assert all(
        close(a, e) for a, e in zip(group_means(values, README_GROUPS).values(), means, strict=True)
    )
    assert six(grouped_mean(values, README_GROUPS), grouped)
    got_stderrs = group_stderrs(values, README_GROUPS).values()
    assert all(six(a, e) for a, e in zip(got_stderrs, stderrs, strict=True))
    assert six(all_samples_mean_stderr(values), se)


def test_subquestions_pass_at_1_standard_errors() -> None:
    values = [reduce(p, "pass@1") for _, p in README]
    assert close(all_samples_mean_stderr(values), math.sqrt(1.2 / 7) / math.sqrt(8))
    assert six(se_over_group_means(values, README_GROUPS), 0.230940)
    assert six(clustered_stderr(values, README_GROUPS), 0.241091)


def test_degenerate_inputs() -> None:
    assert math.isnan(accuracy([]))
    assert all_samples_mean_stderr([0.5]) == 0.0
    assert se_over_group_means([1.0, 0.0], ["a", "a"]) == 0.0
    assert clustered_stderr([1.0, 0.0], ["a", "a"]) == 0.0
    with pytest.raises(ValueError, match="2 values but 1 group labels"):
        grouped_mean([1.0, 0.0], ["a"])


# --- §4.6 item discrimination -----------------------------------------------------------


def test_point_biserial_reference_example() -> None:
    x = [1, 1, 0, 1, 0]
    y = [0.9, 0.7, 0.5, 0.3, 0.1]
    r = point_biserial(x, y)
    assert r is not None
    assert six(r, 0.577350)
    assert close(r, 1 / math.sqrt(3))
    assert close(r, statistics.correlation([float(v) for v in x], y))


def test_point_biserial_undefined() -> None:
    assert point_biserial([1, 1, 1], [0.1, 0.2, 0.3]) is None
    assert point_biserial([0, 0], [0.1, 0.2]) is None
    assert point_biserial([1, 0], [0.5, 0.5]) is None
    with pytest.raises(ValueError, match="0/1"):
        point_biserial([2, 0], [0.1, 0.2])
