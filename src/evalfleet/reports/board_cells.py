"""What the leaderboard's Markdown and HTML pages share: the tables in page order, the
legend, one row's cells and the links from `leaderboard/` into a run's report."""

from __future__ import annotations

import urllib.parse

import pandas as pd

from evalfleet.reports import formatting as fmt

RANKED = ["rank", "band", "model", "value", "95% interval", "coverage", "errors"]
SPENT = ["tokens/answer", "$/correct", "new"]
PARTIAL = ["model", "value", "95% interval", "coverage", "errors", *SPENT]
METHODS = "docs/results.md, “Intervals and ranks”"  # where the table of methods is


def tables(frame: pd.DataFrame):
    """(benchmark, scoring, item set label, complete rows, partial rows), in page order."""
    for (benchmark, scoring, _), part in frame.groupby(
        ["benchmark", "scoring", "item_set"], sort=False
    ):
        yield (
            benchmark,
            scoring,
            part["items"].iloc[0],
            part[part["complete"]],
            part[~part["complete"]],
        )


def legend(board, unadjusted: bool = False) -> str:
    if unadjusted:
        family = (
            "each pair at an unadjusted 5 % (no correction for the table's many pairs: with "
            "8 equal models some pair differs by chance 4 times in 10); rows share a band as "
            "the adjusted ranks do"
        )
    else:
        family = (
            "at 5 % after Holm's adjustment across the table's pairs, so equal models are told "
            "apart by chance at most 1 time in 20 (`evalfleet leaderboard --unadjusted`, or "
            "the `rank_unadjusted` column: each pair at an unadjusted 5 %); rows that cannot "
            "be told apart share a band"
        )
    return (
        f"{board.runs} runs. A value is the benchmark's headline metric, a fraction of 1, with "
        f"its 95 % interval (methods: {METHODS}); “—, one unit”: one unit has no interval. "
        "Rows are compared only on the same items: each table is one item set. A rank is 1 "
        "plus the number of rows significantly better by the paired test `evalfleet compare` "
        "prints (exact McNemar on independent binary items, the clustered McNemar on grouped "
        f"units), {family}. Errors marked {fmt.MARK}: more than {fmt.ERROR_MARK:.0%} of the "
        "row's calls failed (they count as wrong). Partial results are not ranked."
    )


def cells(row, unadjusted: bool = False) -> dict[str, str]:
    """One row's cells, as both pages write them."""
    rank = row.rank_unadjusted if unadjusted else row.rank
    units = getattr(row, "units", None)
    interval = fmt.interval(row.ci95_low, row.ci95_high)
    return {
        "rank": "" if pd.isna(rank) else str(int(rank)),
        "band": "" if pd.isna(row.band) or unadjusted else str(int(row.band)),
        "model": row.model,
        "value": fmt.share(row.value),
        "95% interval": "—, one unit" if units == 1 else interval,
        "coverage": row.coverage,
        "errors": fmt.errors(int(row.errors), int(row.done) + int(row.errors)),
        "tokens/answer": fmt.tokens(row.mean_output_tokens),
        "$/correct": fmt.money(row.cost_per_correct_usd),
        "new": "new" if row.new else "",
    }


def report_link(row) -> str:
    """From `{store}/leaderboard/index.html` to the row's items in its run's report."""
    query = urllib.parse.urlencode(
        {"model": row.model, "benchmark": row.benchmark, "scoring": row.scoring},
        quote_via=urllib.parse.quote,
    )
    return f"{run_link(row)}#{query}"


def run_link(row) -> str:
    """From `{store}/leaderboard/index.html` to the row's run's report."""
    run, version = urllib.parse.quote(row.run_id), urllib.parse.quote(row.version)
    return f"../{run}/results/{version}/report.html"
