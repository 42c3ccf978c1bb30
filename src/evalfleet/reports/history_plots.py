"""The leaderboard's history: one small plot per benchmark (its headline scoring mode), a
line and a 95 % interval band per model over time, `history--<benchmark>.png`. Only runs on
the same item set are joined by a line; a model's runs on another item set are another line
(dashed), so a change of data never reads as a change of the model."""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any

from evalfleet.benchmarks import registry
from evalfleet.reports.history import Point

DPI = 110
WIDTH_IN, HEIGHT_IN = 7.5, 3.2


def history_plots(found: list[Point]) -> dict[str, bytes]:
    """`history--<benchmark>.png` per benchmark with at least one point."""
    if not found:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    files = {}
    for benchmark in dict.fromkeys(p.benchmark for p in found):
        headline = _headline_scoring(benchmark)
        mine = [p for p in found if p.benchmark == benchmark and p.scoring in (headline, None)]
        if not mine:
            scorings = [p.scoring for p in found if p.benchmark == benchmark]
            mine = [p for p in found if p.benchmark == benchmark and p.scoring == scorings[0]]
        files[f"history--{benchmark}.png"] = _draw(benchmark, mine)
    return files


def _headline_scoring(benchmark: str) -> str | None:
    if benchmark not in registry.names():
        return None
    return registry.get(benchmark).scorings[0]


def _when(point: Point) -> datetime:
    return datetime.fromisoformat(point.when.replace("Z", "+00:00"))


def _draw(benchmark: str, found: list[Point]) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    models = list(dict.fromkeys(p.model for p in found))
    for i, model in enumerate(models):
        color = colors[i % len(colors)]
        sets = list(dict.fromkeys(p.item_set for p in found if p.model == model))
        for j, item_set in enumerate(sets):
            line = [p for p in found if p.model == model and p.item_set == item_set]
            x: Any = [_when(p) for p in line]  # datetimes: matplotlib converts them itself
            y = [p.value if p.value is not None else float("nan") for p in line]
            low = [p.low if p.low is not None else v for p, v in zip(line, y, strict=True)]
            high = [p.high if p.high is not None else v for p, v in zip(line, y, strict=True)]
            label = model if j == 0 else f"{model} (other items)"
            ax.plot(x, y, "o-" if j == 0 else "o--", color=color, label=label, markersize=4)
            ax.fill_between(x, low, high, color=color, alpha=0.15, linewidth=0)
    ax.set_ylim(0, 1)
    ax.set_ylabel(f"headline ({found[0].scoring})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.autofmt_xdate()
    fig.suptitle(
        f"{benchmark}: each model over time, 95 % intervals", fontsize=9, x=0.01, ha="left"
    )
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return buffer.getvalue()
