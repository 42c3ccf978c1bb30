"""The report's comparison names the paired test behind each p, as compare prints it."""

from __future__ import annotations

from evalfleet.reports.report_about import comparison_html


def comparison(test: str) -> dict:
    row = {
        "benchmark": "zerobench_subquestions",
        "scoring": "upstream",
        "model_a": "openai/sim-0.8",
        "model_b": "openai/sim-0.4",
        "a": 0.75,
        "b": 0.25,
        "difference": 0.5,
        "no_interval": "",
        "low": 0.1,
        "high": 0.9,
        "p": 0.0312,
        "test": test,
        "flips_a": [],
        "flips_b": [],
        "units": 11,
        "only_in_a": 0,
        "only_in_b": 0,
        "what_it_would_take": "settled",
    }
    return {
        "a": {"label": "run a"},
        "b": {"label": "run b"},
        "identity": [],
        "rows": [row],
        "note": "",
    }


def test_each_p_names_its_test():
    page = comparison_html(comparison("clustered McNemar (Durkalski)"), ["openai/sim-0.8"])
    assert "<th>p (test)</th>" in page
    assert "(clustered McNemar (Durkalski))" in page
    assert "McNemar p" not in page
