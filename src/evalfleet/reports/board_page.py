"""The leaderboard as Markdown (the `.md` file, the terminal, the Prefect artifact), laid out
as the HTML page (`board_html`) and written with the same cells (`board_cells`): per benchmark
and scoring mode, one table per item set, its complete rows ranked, its partial rows apart and
not ranked."""

from __future__ import annotations

import pandas as pd

from evalfleet.reports import formatting as fmt
from evalfleet.reports.board_cells import PARTIAL, RANKED, SPENT, cells, legend, tables


def markdown_page(board, unadjusted: bool = False) -> str:
    """The Markdown page; `unadjusted`: ranked without Holm's adjustment (band left blank)."""
    lines = ["# evalfleet leaderboard", "", legend(board, unadjusted), ""]
    if board.new:
        lines += ["## New models", "", *(f"- {fmt.md_text(n)}" for n in board.new), ""]
    section = None
    for benchmark, scoring, label, complete, partial in tables(board.table):
        if (benchmark, scoring) != section:
            section = (benchmark, scoring)
            lines += [f"## {fmt.md_text(benchmark)} — {fmt.md_text(scoring)}", ""]
        lines += [f"Items: {fmt.md_text(label)}", ""]
        if not complete.empty:
            lines += [_md_table(complete, [*RANKED, *SPENT], unadjusted), ""]
        if not partial.empty:
            lines += ["Partial results, not ranked:", "", _md_table(partial, PARTIAL), ""]
    if board.close_calls:
        lines += ["## What it would take", ""]
        lines += [f"- {fmt.md_text(line)}" for line in board.close_calls] + [""]
    if board.damaged:
        lines += ["## Runs left out, and why", ""]
        lines += [f"- {fmt.md_text(line)}" for line in board.damaged] + [""]
    return "\n".join(lines)


def _md_table(part: pd.DataFrame, columns: list[str], unadjusted: bool = False) -> str:
    rows = [cells(r, unadjusted) for r in part.itertuples(index=False)]
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join(":---" if c == "model" else "---:" for c in columns) + "|"
    body = ["| " + " | ".join(fmt.md_text(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])
