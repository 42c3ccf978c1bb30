"""Issue 48 case 10: failed calls are marked above 5 % on the leaderboard and in the run
summary, a run whose every call failed says so in its first line, and one unit shows no
interval."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from evalfleet.reports import formatting as fmt
from evalfleet.reports.board_cells import cells
from evalfleet.reports.tables import headline, shown_summary


def test_the_errors_cell():
    assert fmt.errors(0, 120) == "0"
    assert fmt.errors(6, 120) == "6"  # 5 %: not above the threshold
    assert fmt.errors(35, 120) == "35 (29%) !"
    assert fmt.errors(120, 120) == "120 ! every call failed"
    assert fmt.errors(7, 120, threshold=0.1) == "7"


def row(**changes):
    values = dict(
        rank=1,
        band=1,
        rank_unadjusted=1,
        model="openai/sim-0.4",
        value=0.5,
        ci95_low=0.4,
        ci95_high=0.6,
        coverage="120/120",
        errors=35,
        done=85,
        units=120,
        mean_output_tokens=40.0,
        cost_per_correct_usd=0.01,
        new=False,
    )
    values.update(changes)
    return SimpleNamespace(**values)


def test_a_leaderboard_row_with_29_percent_errors_is_marked():
    assert cells(row())["errors"] == "35 (29%) !"
    assert cells(row(errors=0, done=120))["errors"] == "0"
    one = cells(row(units=1, ci95_low=None, ci95_high=None))
    assert one["95% interval"] == "—, one unit"
    unadjusted = cells(row(rank=1, rank_unadjusted=3), unadjusted=True)
    assert (unadjusted["rank"], unadjusted["band"]) == ("3", "")


def test_the_run_summary_marks_a_model_whose_every_call_failed():
    table = pd.DataFrame(
        [
            {"model": "a", "benchmark": "zerobench", "pass@1": 0.0, "errors": 40},
            {"model": "b", "benchmark": "zerobench", "pass@1": 0.3, "errors": 1},
        ]
    )
    answers = {("a", "zerobench"): 40, ("b", "zerobench"): 40}
    shown = shown_summary(table, [], answers)
    assert list(shown["errors"]) == ["40 ! every call failed", "1"]
    assert "errors" not in shown_summary(table.assign(errors=0), [], answers).columns


def test_the_headline_says_every_call_failed():
    result = {"store": "s", "run_id": "r", "version": "v1"}
    spend = [{"model": "a", "benchmark": "zerobench", "answers": 40, "errors": 40}]
    assert headline({**result, "spend": spend}) == (
        "run r — every call failed (40 of 40): its scores measure nothing — results in "
        "s/r/results/v1/"
    )
    spend[0]["errors"] = 39
    assert headline({**result, "spend": spend}) == "run r — results in s/r/results/v1/"


def test_a_missing_text_is_a_dash_never_nan():
    table = pd.DataFrame(
        [
            {"model": "a", "benchmark": "rome", "task": "all", "ci95_pct_over_questions": "1–2"},
            {"model": "a", "benchmark": "rome", "task": "x", "ci95_pct_over_questions": None},
        ]
    )
    assert list(shown_summary(table, [])["ci95_pct_over_questions"]) == ["1–2", "—"]
