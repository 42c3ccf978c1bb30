"""The leaderboard page's layout on a built board (fast: no run, no browser): contents, one
section per benchmark with its tables before its folded plots, the run column, escaping.
The browser half (sort, search, state in the URL) is tests/reports/test_leaderboard.py."""

from __future__ import annotations

import re

import pandas as pd

from evalfleet.reports.board_html import html_page
from evalfleet.reports.leaderboard import Board


def _row(benchmark: str, model: str, run_id: str, value: float, complete: bool = True) -> dict:
    return {
        "benchmark": benchmark,
        "scoring": "upstream",
        "item_set": f"is-{benchmark}",
        "items": f"4 samples of {benchmark}",
        "complete": complete,
        "rank": 1 if complete else None,
        "rank_unadjusted": 1 if complete else None,
        "band": 1 if complete else None,
        "model": model,
        "value": value,
        "ci95_low": value - 0.1,
        "ci95_high": value + 0.1,
        "units": 4,
        "coverage": "8/8" if complete else "3/8",
        "done": 8 if complete else 3,
        "expected": 8,
        "errors": 0,
        "mean_output_tokens": 40.0,
        "cost_per_correct_usd": 0.01,
        "new": False,
        "run_id": run_id,
        "version": "v-1",
    }


TABLE = pd.DataFrame(
    [
        _row("zerobench", "openai/a", "r<1>", 0.75),
        _row("zerobench", "openai/b", "r2", 0.25, complete=False),
        _row("rome", "openai/a", "r2", 0.5),
    ]
)
FILES = {
    f"{stem}--{benchmark}--is-{benchmark}.png": b"png"
    for stem in ("accuracy_ci", "accuracy_vs_tokens", "cost_per_correct")
    for benchmark in ("zerobench", "rome")
} | {"history--rome.png": b"png", "leaderboard.csv": b""}


def test_contents_sections_tables_before_their_folded_plots():
    board = Board(table=TABLE, new=[], runs=2, files={}, close_calls=["a vs b: 3 more items"])
    page = html_page(board, FILES)
    contents = re.findall(r"<li><a href='#([\w-]+)'>([^<]+)</a></li>", page)
    assert contents == [
        ("b-zerobench", "zerobench"),
        ("b-rome", "rome"),
        ("close", "What it would take"),
        ("history", "History"),
    ]
    sections = re.findall(r"<section id='([\w-]+)'>(.*?)</section>", page, re.S)
    assert [key for key, _ in sections] == ["b-zerobench", "b-rome", "close", "history"]
    zerobench = sections[0][1]
    # its ranked table, its partial rows apart, then its three plots in one closed fold
    assert zerobench.count("<table class='board'>") == 2
    assert zerobench.index("</table>") < zerobench.index("<details class='plots'>")
    assert re.findall(r"<details[^>]*><summary>([^<]+)</summary>", zerobench) == ["3 plots"]
    assert re.findall(r"alt='([^']+)'", zerobench) == [
        "accuracy_ci--zerobench--is-zerobench.png",
        "accuracy_vs_tokens--zerobench--is-zerobench.png",
        "cost_per_correct--zerobench--is-zerobench.png",
    ]
    assert re.findall(r"alt='([^']+)'", sections[3][1]) == ["history--rome.png"]
    assert "<details" not in sections[2][1]
    # the run column, escaped, linked to the run's report
    assert (
        "<td class='l run'><a href='../r%3C1%3E/results/v-1/report.html'>r&lt;1&gt;</a></td>"
        in zerobench
    )
    heads = re.findall(r"<thead><tr>(.*?)</tr></thead>", zerobench)
    assert [re.findall(r">([^<]+)</th>", h)[-1] for h in heads] == ["run", "run"]
    assert re.findall(r"<details[^>]*>", page) == ["<details class='plots'>"] * 3  # closed
