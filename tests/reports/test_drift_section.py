"""The leaderboard page's "Drift" section, from a built `leaderboard/drift.csv` (fast: no run)."""

from __future__ import annotations

import io
import re

import pandas as pd

from evalfleet.reports.board_html import drift_section, html_page
from evalfleet.reports.drift import drift_table
from evalfleet.reports.leaderboard import Board


def _row(model: str, diff: float, version_after: str, flagged: bool, reason: str = "") -> dict:
    return {
        "model": model,
        "benchmark": "zerobench",
        "scoring": "upstream",
        "item_set": "abc",
        "run_before": "week1",
        "run_after": "week2",
        "before": 0.825,
        "after": round(0.825 + diff, 3),
        "diff": diff,
        "low": round(diff - 0.1, 3),
        "high": round(diff + 0.1, 3),
        "p": 0.001 if flagged else 0.9,
        "test": "mcnemar",
        "changed": flagged,
        "version_before": "drifty fp_1",
        "version_after": version_after,
        "version_changed": version_after != "drifty fp_1",
        "judge_before": "",
        "judge_after": "",
        "judge_changed": False,
        "flagged": flagged,
        "reason": reason,
    }


def _csv(rows: list[dict]) -> bytes:
    buffer = io.StringIO()
    drift_table(rows).to_csv(buffer, index=False)
    return buffer.getvalue().encode()


DRIFT = _csv(
    [
        _row("openai-compatible/drifty", -0.45, "drifty fp_2", True),
        _row("openai-compatible/steady", 0.0, "drifty fp_1", False),
    ]
)


def _cells(html: str) -> list[tuple[str, list[str]]]:
    rows = re.findall(r"<tr( class='flagged')?>(.*?)</tr>", html)
    return [(cls, re.findall(r"<td[^>]*>(.*?)</td>", body)) for cls, body in rows]


def test_drift_section_marks_the_flagged_rows_only() -> None:
    html = drift_section(DRIFT)
    assert html.startswith("<h2>Drift</h2>")
    assert "1 of 2 rows flagged" in html
    rows = [r for r in _cells(html) if r[1]]
    assert rows == [
        (
            " class='flagged'",
            [
                "openai-compatible/drifty", "zerobench", "upstream", "week1", "week2", "0.825",
                "0.375", "-0.45", "[-0.55, -0.35]", "0.001", "drifty fp_1 → drifty fp_2",
                "", "flagged", "",
            ],
        ),
        (
            "",
            [
                "openai-compatible/steady", "zerobench", "upstream", "week1", "week2", "0.825",
                "0.825", "0.0", "[-0.1, 0.1]", "0.9", "same", "", "", "",
            ],
        ),
    ]  # fmt: skip


def test_no_drift_csv_no_section_and_a_damaged_one_says_so() -> None:
    assert drift_section(None) == ""
    assert drift_section(b"\x00\xff not a table") == (
        "<h2>Drift</h2><p>leaderboard/drift.csv cannot be read: run `evalfleet drift` again.</p>"
    )


def test_the_page_shows_the_section_when_drift_csv_exists() -> None:
    empty = pd.DataFrame(columns=["benchmark", "scoring", "item_set", "items", "complete"])
    board = Board(table=empty, new=[], runs=2, files={})
    assert "<h2>Drift</h2>" not in html_page(board, {})
    board.drift_csv = DRIFT
    page = html_page(board, {})
    assert page.count("<h2>Drift</h2>") == 1
    assert page.count("<tr class='flagged'>") == 1
    assert page.index("<h2>Drift</h2>") < page.index("</body>")
