"""The one escaping helper every writer uses (`core.escape`), and the Markdown tables of the
summaries and the leaderboard (`evalfleet.core.text_tables.markdown`), with exact outputs."""

from __future__ import annotations

import json

import pandas as pd

from evalfleet.core.escape import html_text, json_for_html, markdown_cell, markdown_rows
from evalfleet.core.text_tables import markdown

IMG = "<img src=x onerror=alert(1)>"


def test_markdown_cell_keeps_a_pipe_in_its_cell_and_shows_html_as_text():
    assert markdown_cell("a|b") == "a\\|b"
    assert markdown_cell(IMG) == "&lt;img src=x onerror=alert(1)&gt;"
    assert markdown_cell("a\\|b") == "a\\\\\\|b"  # a backslash cannot unescape the pipe
    assert markdown_cell("[x](javascript:y) `z` & w\nv") == (
        "\\[x\\](javascript:y) \\`z\\` &amp; w v"
    )
    assert markdown_cell("openai/gpt-4o_mini:2024@x") == "openai/gpt-4o_mini:2024@x"
    assert [markdown_cell(v) for v in (1, 0.5, None, True)] == [1, 0.5, None, True]
    assert markdown_rows([{"a|b": "<b>", "n": 2}]) == [{"a\\|b": "&lt;b&gt;", "n": 2}]


def test_html_text_escapes_quotes_for_attributes_too():
    assert html_text("<a href='x'>\"&") == "&lt;a href=&#x27;x&#x27;&gt;&quot;&amp;"
    assert html_text(None) == ""
    assert html_text(3) == "3"


def test_json_for_html_has_no_markup_and_parses_back():
    value = {"t": "<!--<script></script>&\u2028", "k": ["</", ">"]}
    text = json_for_html(value)
    assert text == (
        '{"t":"\\u003c!--\\u003cscript\\u003e\\u003c/script\\u003e\\u0026\\u2028",'
        '"k":["\\u003c/","\\u003e"]}'
    )
    assert json.loads(text) == value


def test_a_markdown_table_has_one_column_per_field_whatever_the_names_hold():
    frame = pd.DataFrame(
        {
            "model": ["openai/sim-0.9|x", IMG],
            "benchmark": ["zerobench", "zerobench"],
            "accuracy": [0.5, 0.25],
        }
    )
    assert markdown(frame).splitlines() == [
        "| model                              | benchmark   |   accuracy |",
        "|:-----------------------------------|:------------|-----------:|",
        "| openai/sim-0.9\\|x                  | zerobench   |     0.5000 |",
        "| &lt;img src=x onerror=alert(1)&gt; | zerobench   |     0.2500 |",
    ]
