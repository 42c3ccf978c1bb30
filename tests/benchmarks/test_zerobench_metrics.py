"""ZeroBench's pass@k and k/k are for the epochs the run asked: the k of a run with 2 sampled
epochs is 2, and what was never measured is left out with its reason, never shown as 0."""

from __future__ import annotations

import pandas as pd
import pytest

from evalfleet.benchmarks.interface import ScoredItem
from evalfleet.benchmarks.zerobench.metrics import metric_rows, summary_table

GROUPS = {"a": "a", "b": "b"}


def item(sample: str, epoch: int, correct: bool) -> ScoredItem:
    return ScoredItem(sample, sample, epoch, float(correct), correct, False, False, None)


def rows_of(items, epochs: int, protocol: str = "zerobench-paper") -> dict:
    rows = metric_rows(items, GROUPS, protocol=protocol, epochs=epochs, grouped=False)
    return {r.metric: r for r in rows}


def test_two_sampled_epochs_give_pass_at_2_and_2_of_2():
    # a: greedy right, sampled right then wrong; b: wrong every time
    items = [item("a", 0, True), item("a", 1, True), item("a", 2, False)]
    items += [item("b", 0, False), item("b", 1, False), item("b", 2, False)]
    rows = rows_of(items, epochs=3)  # zerobench-paper with --epochs 2: greedy + 2 sampled
    assert list(rows) == [
        "n_questions",
        "n_epochs",
        "pass@1",
        "pass@2",
        "2/2",
        "num_correct",
        "accuracy",
    ]
    assert rows["pass@1"].value == 0.5  # the greedy epoch
    # a: n=2, c=1: 1 - C(1,2)/C(2,2) = 1; b: 0
    assert rows["pass@2"].value == pytest.approx(0.5)
    # a: C(1,2)/C(2,2) = 0, b: 0: measured, and 0
    assert (rows["2/2"].value, rows["2/2"].n, rows["2/2"].note) == (0.0, 2, "")


def test_one_sampled_epoch_gives_1_of_1_and_no_pass_at_5():
    items = [item("a", 0, True), item("a", 1, True), item("b", 0, False), item("b", 1, True)]
    rows = rows_of(items, epochs=2)  # zerobench-paper with --epochs 1
    assert "pass@5" not in rows and "5/5" not in rows
    assert rows["1/1"].value == 1.0  # both right at their one sampled epoch


def test_what_was_not_measured_is_no_value_with_its_reason():
    # five sampled epochs asked, one answered so far: 5/5 and pass@5 were not measured
    items = [item("a", 0, True), item("a", 1, True), item("b", 0, True), item("b", 1, True)]
    rows = rows_of(items, epochs=6)
    for name in ("pass@5", "5/5"):
        assert rows[name].value is None and rows[name].n == 0
        assert rows[name].note == (
            f"{name} not measured: it needs 5 sampled epochs of a question, the answers hold "
            "at most 1"
        )


def test_sampled_k_takes_k_from_every_epoch():
    items = [item("a", e, e < 2) for e in range(3)] + [item("b", e, False) for e in range(3)]
    rows = rows_of(items, epochs=3, protocol="sampled-k")
    assert rows["pass@1"].value == pytest.approx((2 / 3 + 0) / 2)  # unbiased: mean of c/n
    # a: n=3, c=2: pass@3 = 1, 3/3 = 0
    assert (rows["pass@3"].value, rows["3/3"].value) == (0.5, 0.0)
    assert rows["num_correct"].value is None


def test_the_summary_has_the_columns_of_the_k_asked():
    items = [item("a", 0, True), item("a", 1, True), item("a", 2, False)]
    long = pd.DataFrame(
        [
            {
                "model": "m",
                "benchmark": "zerobench",
                "scoring": "upstream",
                "metric": r.metric,
                "group": r.group,
                "value": r.value,
                "se": r.se,
                "n": r.n,
            }
            for r in metric_rows(
                items, {"a": "a"}, protocol="zerobench-paper", epochs=3, grouped=False
            )
        ]
    )
    summary = summary_table(long)
    assert "pass@2" in summary.columns and "2/2" in summary.columns
    assert "pass@5" not in summary.columns and "5/5" not in summary.columns
    assert list(summary.columns[:8]) == [
        "model",
        "benchmark",
        "scoring",
        "n_questions",
        "n_epochs",
        "pass@1",
        "pass@2",
        "2/2",
    ]
