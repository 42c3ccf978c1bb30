"""Helpers benchmark packages use to lay out their wide summary from long-table rows.

The long table has one row per (model, benchmark, scoring, metric, group) with columns
`value, se, n` (see `engine.scoring.score.LONG_COLUMNS`); `group` is "" for whole-benchmark
figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

KEYS = ["model", "benchmark", "scoring"]


def metric_lookup(part: pd.DataFrame):
    """A function (metric, column="value") -> the whole-benchmark figure or None."""
    import pandas as pd

    overall = part[part["group"] == ""].drop_duplicates("metric").set_index("metric")

    def value(metric: str, column: str = "value"):
        if metric not in overall.index or column not in overall.columns:
            return None
        found = overall.at[metric, column]
        return None if pd.isna(found) else found

    return value


def default_summary(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, benchmark, scoring); per whole-benchmark metric its value, and
    its SE in `<metric>_se` when it has one; `n` is the largest n of those metrics."""
    import pandas as pd

    overall = long[long["group"] == ""]
    metrics = list(dict.fromkeys(overall["metric"]))
    with_se = {m for m in metrics if overall.loc[overall["metric"] == m, "se"].notna().any()}
    with_ci = {m for m in metrics if _has(overall.loc[overall["metric"] == m], "ci95_low")}
    columns = [*KEYS]
    for metric in metrics:
        columns.append(metric)
        if metric in with_se:
            columns.append(f"{metric}_se")
        if metric in with_ci:
            columns += [f"{metric}_ci95_low", f"{metric}_ci95_high"]
    columns.append("n")
    rows = []
    for key, part in overall.groupby(KEYS, sort=False):
        value = metric_lookup(part)
        row = dict(zip(KEYS, key, strict=True))
        for metric in metrics:
            row[metric] = value(metric)
            if metric in with_se:
                row[f"{metric}_se"] = value(metric, "se")
            if metric in with_ci:
                row[f"{metric}_ci95_low"] = value(metric, "ci95_low")
                row[f"{metric}_ci95_high"] = value(metric, "ci95_high")
        row["n"] = int(part["n"].max()) if len(part) else 0
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def breakdown_summary(long: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per (model, benchmark, scoring, breakdown, group) for `metric`: the overall
    figure first (breakdown "all"), then each group of each breakdown ("by=value")."""
    import pandas as pd

    rows = []
    part = long[long["metric"] == metric]
    for key, frame in part.groupby(KEYS, sort=False):
        for record in frame.itertuples(index=False):
            by, _, group = record.group.partition("=")
            rows.append(
                {
                    **dict(zip(KEYS, key, strict=True)),
                    "breakdown": by or "all",
                    "group": group if by else "",
                    metric: record.value,
                    "se": record.se,
                    "ci95_low": getattr(record, "ci95_low", None),
                    "ci95_high": getattr(record, "ci95_high", None),
                    "n": record.n,
                }
            )
    columns = [*KEYS, "breakdown", "group", metric, "se", "ci95_low", "ci95_high", "n"]
    frame = pd.DataFrame(rows, columns=columns)
    if not _has(frame, "ci95_low"):  # not the headline: no interval to show
        frame = frame.drop(columns=["ci95_low", "ci95_high"])
    return frame


def _has(frame: pd.DataFrame, column: str) -> bool:
    return column in frame and bool(frame[column].notna().any())
