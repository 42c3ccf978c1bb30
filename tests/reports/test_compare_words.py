"""compare's lines say what they count: the flipped samples are counted and named as sample
ids, and the reported-version row says whose version it is."""

from __future__ import annotations

from evalfleet.reports.compare import _reported_label, flips_line, to_markdown


def row(flips_a: list[str], flips_b: list[str]) -> dict:
    return {
        "benchmark": "zerobench",
        "scoring": "upstream",
        "model_a": "openai/sim-0.5",
        "model_b": "openai/sim-0.5",
        "a": 0.5,
        "b": 0.25,
        "difference": 0.25,
        "low": None,
        "high": None,
        "no_interval": "too few shared items for an interval (n=4)",
        "p": 0.5,
        "units": 4,
        "only_in_a": 0,
        "only_in_b": 0,
        "flips_a": flips_a,
        "flips_b": flips_b,
        "epoch": 0,
        "what_it_would_take": "more items",
    }


def test_flips_are_counted_and_their_ids_labelled():
    assert flips_line(row(["2"], [])) == (
        "Epoch 0: 1 item right in A, wrong in B (sample ids 2); 0 items right in B, wrong in A"
    )
    assert flips_line(row(["2_1", "3_1"], ["4_3"])) == (
        "Epoch 0: 2 items right in A, wrong in B (sample ids 2_1, 3_1); 1 item right in B, "
        "wrong in A (sample ids 4_3)"
    )


def test_the_printed_comparison_holds_the_counted_line():
    result = {
        "a": {"label": "r1"},
        "b": {"label": "r2"},
        "identity": [],
        "rows": [row(["2"], [])],
        "apart": [],
        "note": "A note.",
    }
    words = " ".join(to_markdown(result).split())
    assert "Epoch 0: 1 item right in A, wrong in B (sample ids 2); 0 items right in B" in words
    assert "right only in A" not in words


def test_the_reported_version_row_says_whose_version_it_is():
    assert _reported_label("openai/sim-0.5", "openai/sim-0.5") == (
        "openai/sim-0.5: model version its provider reported"
    )
    assert _reported_label("openai/sim-0.5", "anthropic/sim-0.9") == (
        "model version each provider reported (A: openai/sim-0.5; B: anthropic/sim-0.9)"
    )
