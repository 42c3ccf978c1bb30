"""The leaderboard's plots: one figure per benchmark and item set (its headline scoring mode),
each named `<plot>--<benchmark>--<item set>.png` and titled with the items it was measured on:

- `accuracy_ci`: the headline per model with its 95 % interval, labelled with its rank and
  band; partial results grey and hatched, labelled `partial (done/expected)`, never ranked;
- `accuracy_vs_tokens`: the headline against mean output tokens per answer, as the ROME
  leaderboard draws it (up and to the left answers well and briefly);
- `cost_per_correct`: dollars per correct answer (answers and judge together).
"""

from __future__ import annotations

import io
import textwrap

import pandas as pd

from evalfleet.reports import formatting as fmt

DPI = 110
WIDTH_IN = 7.5  # 825 px
PLOT_STEMS = ("accuracy_ci", "accuracy_vs_tokens", "cost_per_correct")
BLUE, NEW, GREY = "#3a6ea5", "#d98c00", "#b0b0b0"


def plots(primary: pd.DataFrame) -> dict[str, bytes]:
    if primary.empty:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    files = {}
    for (benchmark, item_set), part in primary.groupby(["benchmark", "item_set"], sort=False):
        title = f"{benchmark} ({part['scoring'].iloc[0]})"
        items = textwrap.shorten(f"items: {part['items'].iloc[0]}", 110)
        for stem, draw in (
            ("accuracy_ci", _accuracy_ci),
            ("accuracy_vs_tokens", _accuracy_vs_tokens),
            ("cost_per_correct", _cost_per_correct),
        ):
            files[f"{stem}--{benchmark}--{item_set}.png"] = draw(part, title, items)
    return files


def _label(row) -> str:
    if not row.complete:
        return f"{row.model}: partial ({row.coverage})"
    return f"{row.model}: rank {int(row.rank)}, band {int(row.band)}"


def _figure(rows: int):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(WIDTH_IN, max(2.4, 1.4 + 0.42 * rows)))


def _save(fig, title: str, items: str) -> bytes:
    import matplotlib.pyplot as plt

    fig.suptitle(f"{title}\n{items}", fontsize=9, x=0.01, ha="left")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return buffer.getvalue()


def _accuracy_ci(part: pd.DataFrame, title: str, items: str) -> bytes:
    # bottom to top: partial rows, then the complete ones, best at the top
    part = part.assign(_p=part["complete"], _v=part["value"].fillna(0.0))
    part = part.sort_values(["_p", "_v"], ascending=[True, True], kind="stable")
    fig, ax = _figure(len(part))
    values = part["_v"]
    low = (values - part["ci95_low"].fillna(values)).clip(lower=0)
    high = (part["ci95_high"].fillna(values) - values).clip(lower=0)
    for y, (row, v, lo, hi) in enumerate(
        zip(part.itertuples(index=False), values, low, high, strict=True)
    ):
        color = GREY if not row.complete else (NEW if row.new else BLUE)
        ax.barh(
            y,
            v,
            xerr=[[lo], [hi]],
            color=color,
            hatch="//" if not row.complete else None,
            edgecolor="#666" if not row.complete else color,
            capsize=3,
        )
    ax.set_yticks(range(len(part)), [_label(r) for r in part.itertuples(index=False)], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"{part['metric'].iloc[0]} with its 95 % interval")
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, title, items)


def _accuracy_vs_tokens(part: pd.DataFrame, title: str, items: str) -> bytes:
    fig, ax = _figure(max(4, len(part) // 2))
    for row in part.itertuples(index=False):
        x = row.mean_output_tokens if not pd.isna(row.mean_output_tokens) else 0.0
        y = row.value if not pd.isna(row.value) else 0.0
        color = GREY if not row.complete else BLUE
        ax.scatter([x], [y], color=color, marker="o" if row.complete else "x")
        name = row.model if row.complete else f"{row.model} (partial {row.coverage})"
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("mean output tokens per answer")
    ax.set_ylabel(part["metric"].iloc[0])
    ax.set_ylim(0, 1.05)
    token_axis(ax, part["mean_output_tokens"].fillna(0.0).tolist())
    ax.grid(alpha=0.3)
    return _save(fig, title, items)


def token_axis(ax, tokens: list[float]) -> None:
    """An x axis of whole tokens: ticks on whole numbers only, each label once. Means a
    fraction of a token apart (34.7 and 35.0) get a range of a few tokens around them, where
    a locator left alone would put five ticks between them that all read "35"."""
    import math

    from matplotlib.ticker import FuncFormatter, MaxNLocator

    low, high = min(tokens), max(tokens)
    spread = max(high - low, 4.0)
    ax.set_xlim(max(0, math.floor(low - 0.3 * spread)), math.ceil(high + 0.3 * spread))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, min_n_ticks=1))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt.tokens(v)))


def _cost_per_correct(part: pd.DataFrame, title: str, items: str) -> bytes:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    part = part.sort_values("cost_per_correct_usd", na_position="first", kind="stable")
    fig, ax = _figure(len(part))
    costs = [0.0 if pd.isna(c) else float(c) for c in part["cost_per_correct_usd"]]
    for y, (row, cost) in enumerate(zip(part.itertuples(index=False), costs, strict=True)):
        color = GREY if not row.complete else "#5a9e6f"
        ax.barh(y, cost, color=color, hatch="//" if not row.complete else None)
        label = fmt.money(cost) if cost else "no correct answer"
        ax.annotate(label, (cost, y), textcoords="offset points", xytext=(3, -3), fontsize=8)
    names = [
        r.model if r.complete else f"{r.model} (partial)" for r in part.itertuples(index=False)
    ]
    ax.set_yticks(range(len(part)), names, fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt.money(v)))
    ax.set_xlim(0, max(costs + [0.0]) * 1.35 or 1.0)
    ax.set_xlabel("USD per correct answer")
    return _save(fig, title, items)
