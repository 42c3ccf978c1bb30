"""The leaderboard's ranks: within one table (a benchmark, a scoring mode, one item set), among
complete results only, by paired significance (`evalfleet.metrics.ranking`): the same units and the
same paired test `compare` prints, so a rank never claims what `compare` would not. The
p-values of a table's pairs are adjusted by Holm's method (`rank`, `band`); the ranks without
it are kept beside them (`rank_unadjusted`). Partial results are not ranked."""

from __future__ import annotations

import pandas as pd

from evalfleet.metrics.intervals import UnitValues
from evalfleet.metrics.ranking import HOLM, NONE, significance_ranks
from evalfleet.reports.board_rows import units_key

TABLE = ["benchmark", "scoring", "item_set"]


def rank_rows(
    frame: pd.DataFrame, units: dict[tuple[str, str, str, str], UnitValues]
) -> pd.DataFrame:
    """`frame` with `rank`, `band` (Holm) and `rank_unadjusted` set on complete rows (missing
    on partial ones)."""
    frame = frame.copy()
    for column in ("rank", "band", "rank_unadjusted"):
        frame[column] = pd.array([pd.NA] * len(frame), dtype="Int64")
    complete = frame[frame["complete"]]
    for _, part in complete.groupby(TABLE, sort=False):
        rows = [units[row_units(row)] for row in part.itertuples(index=False)]
        ranked = significance_ranks(rows, HOLM)
        frame.loc[part.index, "rank"] = [r.rank for r in ranked]
        frame.loc[part.index, "band"] = [r.band for r in ranked]
        plain = significance_ranks(rows, NONE)
        frame.loc[part.index, "rank_unadjusted"] = [r.rank for r in plain]
    return frame


def row_units(row) -> tuple[str, str, str, str]:
    return units_key(row.run_id, row.model, row.benchmark, row.scoring)
