"""Tables as a terminal and a Markdown file show them: 120 columns wide, a wider table split
into several that each repeat the columns telling its rows apart, never squeezed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalfleet.core.escape import markdown_cell

if TYPE_CHECKING:
    import pandas as pd

WIDTH = 120
MISSING = "—"  # a figure that was not measured: never shown as 0 or left blank


def markdown(frame: pd.DataFrame, width: int = WIDTH) -> str:
    """A Markdown table; one wider than `width` is split into several, each repeating the
    key columns (model, scoring, ... and what else tells the rows apart), never squeezed.
    Every name and value is escaped (`core.escape.markdown_cell`): a `|` stays in its cell,
    HTML shows as text."""
    if frame.empty:
        return "_no rows_"
    keys = [markdown_cell(str(c)) for c in key_columns(frame)]
    shown = frame.astype(object).where(frame.notna(), None).map(markdown_cell)
    shown.columns = [markdown_cell(str(c)) for c in shown.columns]
    rest = [c for c in shown.columns if c not in keys]
    # A pipe table is "| a | b |": each column adds its own width and 3, whatever is beside it.
    adds = {c: _width(_render(shown, [c])) - 1 for c in [*keys, *rest]}
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 1 + sum(adds[c] for c in keys)
    for column in rest:
        if current and used + adds[column] > width:
            chunks.append(current)
            current = []
            used = 1 + sum(adds[c] for c in keys)
        current.append(column)
        used += adds[column]
    chunks.append(current)
    return "\n\n".join(_render(shown, [*keys, *chunk]) for chunk in chunks)


KEY_COLUMNS = ("model", "benchmark", "scoring", "breakdown", "group")


def key_columns(frame: pd.DataFrame) -> list[str]:
    """The columns every piece of a split table repeats: the usual keys, then as many of the
    text columns before the first figure as it takes to tell the rows apart (ROME's `task`)."""
    from pandas.api.types import is_numeric_dtype

    keys = [c for c in KEY_COLUMNS if c in frame.columns]
    leading = []
    for column in frame.columns:
        if is_numeric_dtype(frame[column]):
            break
        if column not in keys:
            leading.append(column)
    for column in leading:
        if not frame.duplicated(subset=keys or None).any():
            break
        keys.append(column)
    return [c for c in frame.columns if c in keys]


def _render(frame: pd.DataFrame, columns: list[str]) -> str:
    text: str = frame[columns].to_markdown(index=False, floatfmt=".4f", missingval=MISSING)
    return text


def _width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)
