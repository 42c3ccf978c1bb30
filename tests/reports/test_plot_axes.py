"""The leaderboard's token axis: whole-number ticks, each label once, never below 0, however
close the means (ROME's demo: 34.7 and 35.0 mean output tokens, which a locator left alone
labelled "35 35 35 35 35")."""

from __future__ import annotations

import pytest

from evalfleet.reports.plots import token_axis


def drawn_labels(tokens: list[float]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3))
    ax.scatter(tokens, [0.5] * len(tokens))
    token_axis(ax, tokens)
    fig.canvas.draw()
    low, high = ax.get_xlim()
    shown = [
        t.get_text()
        for t, x in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True)
        if low <= x <= high
    ]
    plt.close(fig)
    return shown


@pytest.mark.parametrize(
    ("tokens", "labels"),
    [
        ([34.7, 35.0], ["33", "34", "35", "36", "37"]),
        ([39.7, 42.7], ["38", "39", "40", "41", "42", "43", "44"]),
        ([0.0, 0.0], ["0", "1", "2"]),
        ([100.0, 2500.0], ["0", "600", "1,200", "1,800", "2,400", "3,000"]),
    ],
)
def test_token_ticks_are_whole_distinct_and_not_negative(tokens, labels):
    assert drawn_labels(tokens) == labels
