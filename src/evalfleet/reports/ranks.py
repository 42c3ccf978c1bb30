"""The leaderboard's ranks: within one table (a benchmark, a scoring mode, one item set), among
complete results only, by paired significance (`evalfleet.metrics.ranking`): the same units and the
same interval function `compare` uses, so a rank never claims what `compare` would not.
Partial results are not ranked."""

from __future__ import annotations

import pandas as pd

from evalfleet.metrics.intervals import UnitValues
from evalfleet.metrics.ranking import significance_ranks
from evalfleet.reports.board_rows import units_key

TABLE = ["benchmark", "scoring", "item_set"]


def rank_rows(
    frame: pd.DataFrame, units: dict[tuple[str, str, str, str], UnitValues]
) -> pd.DataFrame:
    """`frame` with `rank` and `band` set on complete rows (missing on partial ones)."""
    frame = frame.copy()
    frame["rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame["band"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    complete = frame[frame["complete"]]
    for _, part in complete.groupby(TABLE, sort=False):
        rows = [units[row_units(row)] for row in part.itertuples(index=False)]
        ranked = significance_ranks(rows)
        frame.loc[part.index, "rank"] = [r.rank for r in ranked]
        frame.loc[part.index, "band"] = [r.band for r in ranked]
    return frame


def row_units(row) -> tuple[str, str, str, str]:
    return units_key(row.run_id, row.model, row.benchmark, row.scoring)
