"""The leaderboard's three PNG plots, one panel per benchmark (its headline scoring mode):

- `accuracy_ci.png`: the headline metric per model with its 95 % interval, each model's rank
  interval beside it and the bands of models that cannot be told apart shaded alike;
- `accuracy_vs_tokens.png`: the metric against mean output tokens per answer, as the ROME
  leaderboard draws it (a model up and to the left answers well and briefly);
- `cost_per_correct.png`: dollars per correct answer (answers and judge together).
"""

from __future__ import annotations

import io
import math

import pandas as pd

DPI = 110


def plots(primary: pd.DataFrame) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    if primary.empty:
        return {}
    return {
        "accuracy_ci.png": _accuracy_ci(primary),
        "accuracy_vs_tokens.png": _accuracy_vs_tokens(primary),
        "cost_per_correct.png": _cost_per_correct(primary),
    }


def _panels(primary: pd.DataFrame, height_per_model: float = 0.45):
    import matplotlib.pyplot as plt

    benchmarks = list(dict.fromkeys(primary["benchmark"]))
    tallest = max((primary.benchmark == b).sum() for b in benchmarks)
    width = 6.0
    height = max(2.6, 1.2 + height_per_model * tallest)
    fig, axes = plt.subplots(
        1, len(benchmarks), figsize=(width * len(benchmarks), height), squeeze=False
    )
    return fig, list(zip(benchmarks, axes[0], strict=True))


def _save(fig) -> bytes:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return buffer.getvalue()


def _accuracy_ci(primary: pd.DataFrame) -> bytes:
    fig, panels = _panels(primary)
    for benchmark, ax in panels:
        part = primary[primary.benchmark == benchmark].sort_values(
            ["ranked_among", "value"], ascending=[False, True], na_position="first"
        )  # bottom to top: the partial rows, then the complete ones, best at the top
        values = part["value"].fillna(0.0)
        low = (values - part["ci95_low"].fillna(values)).clip(lower=0)
        high = (part["ci95_high"].fillna(values) - values).clip(lower=0)
        colors = ["#d98c00" if new else "#3a6ea5" for new in part["new"]]
        labels = [
            model + ("" if among == "complete" else " (partial)")
            for model, among in zip(part["model"], part["ranked_among"], strict=True)
        ]
        ax.barh(labels, values, xerr=[low, high], color=colors, capsize=3)
        right = max(1.0, float((values + high).max() or 0) * 1.05)
        ax.set_xlim(0, right * 1.25)  # room for the rank labels
        for y, row in enumerate(part.itertuples(index=False)):
            if row.ranked_among == "partial":  # ranked apart: hatched, not banded
                ax.axhspan(y - 0.5, y + 0.5, color="#f6e7d0", zorder=0)
            elif row.band % 2 == 0:  # bands shaded alternately
                ax.axhspan(y - 0.5, y + 0.5, color="#ececec", zorder=0)
            rank = (
                str(row.rank)
                if row.rank_low == row.rank_high
                else (f"{row.rank} ({row.rank_low}–{row.rank_high})")
            )
            ax.annotate(f"rank {rank}, band {row.band}", (right, y), fontsize=8, va="center")
        ax.set_title(f"{benchmark} ({part['scoring'].iloc[0]}): {part['metric'].iloc[0]}")
        ax.set_xlabel("value with 95% interval")
    return _save(fig)


def _accuracy_vs_tokens(primary: pd.DataFrame) -> bytes:
    fig, panels = _panels(primary, height_per_model=0.3)
    for benchmark, ax in panels:
        part = primary[primary.benchmark == benchmark]
        xs = part["mean_output_tokens"].fillna(0.0)
        ys = part["value"].fillna(0.0)
        ax.scatter(xs, ys, color="#3a6ea5")
        for x, y, model in zip(xs, ys, part["model"], strict=True):
            ax.annotate(model, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_title(f"{benchmark}: {part['metric'].iloc[0]} vs output tokens")
        ax.set_xlabel("mean output tokens per answer")
        ax.set_ylabel(part["metric"].iloc[0])
        ax.set_ylim(0, 1.05)
        ax.margins(x=0.3)
        ax.grid(alpha=0.3)
    return _save(fig)


def _cost_per_correct(primary: pd.DataFrame) -> bytes:
    fig, panels = _panels(primary)
    for benchmark, ax in panels:
        part = primary[primary.benchmark == benchmark].sort_values(
            "cost_per_correct_usd", na_position="first"
        )
        raw = part["cost_per_correct_usd"]
        costs = [0.0 if c is None or math.isnan(c) else float(c) for c in raw]
        ax.barh(part["model"], costs, color="#5a9e6f")
        for y, cost in enumerate(costs):
            label = f"${cost:.4f}" if cost else "no correct answer"
            ax.annotate(label, (cost, y), textcoords="offset points", xytext=(3, -3), fontsize=8)
        ax.set_title(f"{benchmark}: cost per correct answer")
        ax.set_xlabel("USD")
    return _save(fig)
