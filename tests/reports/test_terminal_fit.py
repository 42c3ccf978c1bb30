"""What the terminal prints fits a terminal: a result table split for width keeps in each piece
the columns that tell its rows apart (ROME's `task`), and `evalfleet compare` fits 120 columns
however long the run ids, model names and identity values, with A, B and the models named in
legends and every share to 3 decimals."""

from __future__ import annotations

import re

import pandas as pd

from evalfleet.core.text_tables import key_columns, markdown
from evalfleet.reports.compare import NOTE, to_markdown

LONG_A = "nightly-frontier-evaluation-2026-11-26@v-0123456789ab:anthropic/claude-sonnet-4-6"
LONG_B = "nightly-frontier-evaluation-2026-11-27@v-ba9876543210:anthropic/claude-sonnet-4-6"


def rome_summary() -> pd.DataFrame:
    rows = []
    for model in ("openai/sim-0.3", "openai/sim-0.7"):
        for scoring in ("upstream", "judge"):
            for task in ("all", "diagrams", "geo"):
                rows.append(
                    {
                        "model": model,
                        "scoring": scoring,
                        "task": task,
                        "accuracy_mean_pct": 45.0,
                        "ci95_pct_over_questions": "35.0–57.5",
                        "accuracy_std_pct_ddof1": 10.0,
                        "upstream_mean_std_over_epochs": "45.0 ± 10.0",
                        "epochs": 4,
                        "n": 10,
                        "mean_output_tokens": 34.7,
                        "mean_reasoning_tokens": 0.0,
                        "input_tokens": 2700,
                        "output_tokens": 347,
                        "cost_usd": 0.0041,
                        "judge_cost_usd": 0.012,
                    }
                )
    return pd.DataFrame(rows)


def test_every_piece_of_a_split_table_keeps_what_tells_its_rows_apart():
    table = rome_summary()
    assert key_columns(table) == ["model", "scoring", "task"]
    pieces = markdown(table).split("\n\n")
    assert len(pieces) > 1
    for piece in pieces:
        lines = piece.splitlines()
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        assert head[:3] == ["model", "scoring", "task"]
        assert len(lines) == 2 + len(table)
        assert max(len(line) for line in lines) <= 120


def test_a_table_whose_keys_already_tell_rows_apart_adds_none():
    table = pd.DataFrame(
        {"model": ["a/x", "a/y"], "scoring": ["s", "s"], "note": ["p", "q"], "value": [0.5, 0.25]}
    )
    assert key_columns(table) == ["model", "scoring"]


def comparison() -> dict:
    def row(scoring: str, model: str, **extra) -> dict:
        return {
            "benchmark": "zerobench_subquestions",
            "scoring": scoring,
            "model_a": model,
            "model_b": model,
            "a": 0.4583333,
            "b": 0.5416667,
            "difference": -0.0833333,
            "low": None,
            "high": None,
            "no_interval": "too few shared items for an interval (n=4)",
            "p": 1.0,
            "units": 4,
            "only_in_a": 0,
            "only_in_b": 0,
            "flips_a": ["2_1", "3_1"],
            "flips_b": ["1_1", "3_2", "4_3"],
            "epoch": 0,
            "what_it_would_take": "with 4 main questions the smallest difference 80 % power "
            "detects is 0.447; detecting -0.083 needs about 116 main questions and "
            "zerobench_subquestions has 100: it cannot be settled on this benchmark",
            **extra,
        }

    long_model = "openai-compatible/meta-llama/Llama-3.1-405B-Instruct-Turbo-FP8-dynamic"
    return {
        "a": {"label": LONG_A},
        "b": {"label": LONG_B},
        "identity": [
            {
                "field": "zerobench_subquestions dataset revision",
                "a": "sha256:" + "c2211ff46ec320901083dc7e192c49fe9b0078f7" * 2,
                "b": "sha256:" + "551f644261001da868c7960979a87831b8331bd3" * 2,
            }
        ],
        "rows": [
            row("upstream", long_model),
            row("robust", long_model, low=-0.35, high=-0.15, no_interval=None, p=0.0004),
            row("upstream", "anthropic/claude-sonnet-4-6"),
        ],
        "apart": [],
        "note": NOTE,
    }


def test_compare_fits_120_columns_with_legends_and_one_precision():
    text = to_markdown(comparison())
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[2:4] == [f"- A: {LONG_A}", f"- B: {LONG_B}"]
    table = [line for line in lines if line.startswith("| zerobench_subquestions | ")]
    assert table == [
        "| zerobench_subquestions | upstream | M1 | 0.458 | 0.542 | -0.083 | — | 1.000 | 4 |",
        "| zerobench_subquestions | robust | M1 | 0.458 | 0.542 | -0.083 | -0.350 to -0.150 "
        "| <0.001 | 4 |",
        "| zerobench_subquestions | upstream | M2 | 0.458 | 0.542 | -0.083 | — | 1.000 | 4 |",
    ]
    assert "M1: openai-compatible/meta-llama/Llama-3.1-405B-Instruct-Turbo-FP8-dynamic" in lines
    assert "M2: anthropic/claude-sonnet-4-6" in lines
    shares = re.findall(r"\b\d\.\d+\b", "\n".join(table))
    assert shares and all(len(x) == 5 for x in shares)
    words = " ".join(text.split())
    assert (
        "- zerobench_subquestions (upstream, anthropic/claude-sonnet-4-6): p by exact McNemar; "
        "no interval: too few "
        "shared items for an interval (n=4); with 4 main questions" in words
    )


def test_two_models_of_one_run_name_their_models_in_the_legend_only():
    result = comparison()
    for r in result["rows"]:
        r["model_a"], r["model_b"] = "openai/sim-0.3", "openai/sim-0.7"
    lines = to_markdown(result).splitlines()
    header = next(line for line in lines if line.startswith("| benchmark"))
    assert header == "| benchmark | scoring | A | B | A − B | 95% interval | p | units |"
    assert max(len(line) for line in lines) <= 120
