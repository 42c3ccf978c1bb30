"""Every figure the aggregation wrote for a run, for the report's "Every metric" section: each
model, benchmark, scoring mode, metric and group (the headline and the rest: ZeroBench's pass@k
and k/k, counts, per-category and per-task breakdowns), with its interval where it has one and
the note the aggregation gave it. inspect view shows its scorers' metrics in a dialog; the report
shows the same figures, and their intervals, in one table."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from evalfleet.reports import formatting as fmt

if TYPE_CHECKING:
    import pandas as pd

ALL = "all items"  # the group of a figure over the whole item set


def every_metric(metrics: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per row of the metrics table, in its order (the aggregation's)."""
    rows = []
    for row in metrics.itertuples(index=False):
        rows.append(
            {
                "model": row.model,
                "benchmark": row.benchmark,
                "scoring": row.scoring,
                "metric": row.metric,
                "group": _text(getattr(row, "group", None)) or ALL,
                "value": _number(row.value),
                "low": _number(getattr(row, "ci95_low", None)),
                "high": _number(getattr(row, "ci95_high", None)),
                "n": int(row.n),
                "note": _text(getattr(row, "note", None)),
            }
        )
    return rows


def figure(value: float | None) -> str:
    """A metric's value: a whole number as one (a count: n_epochs 6, num_correct 1), else a
    share's 3 decimals."""
    if fmt.missing(value):
        return fmt.MISSING
    assert value is not None
    return str(int(value)) if float(value).is_integer() else fmt.share(value)


def metric_cells(row: dict[str, Any]) -> tuple:
    """The section's cells of one row: model, benchmark, scoring, metric, group, value,
    95% interval, n, note."""
    interval = "" if fmt.missing(row["low"]) else fmt.interval(row["low"], row["high"])
    return (
        row["model"],
        row["benchmark"],
        row["scoring"],
        row["metric"],
        row["group"],
        figure(row["value"]),
        interval,
        row["n"],
        row["note"],
    )


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)
