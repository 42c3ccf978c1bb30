"""Hostile cases for the flags of issue 48 on the matrix's store (`tests/support/hostile.py`):
`leaderboard --unadjusted` (given a value, on an empty store, beside a damaged run), `judge
--panel` with one judge and with an unknown rule, and a labelled slice (`--labels`) that is
malformed in each way a hand-written file can be. Refused in one line before any judge is
asked, or done with nothing lost."""

from __future__ import annotations

from pathlib import Path

from tests.support.hostile import BASE_RUN, JUDGE, Case, damage_of
from tests.support.hostile_fleet import emptied_store

BOARD = ("leaderboard/",)
LABELS = "labels.jsonl"  # written into the copied store by the case's damage
GOOD = '{"model": "openai/sim-0.3", "sample_id": "q1", "epoch": 0, "correct": true}'
MALFORMED = {
    "not JSON": "{oops",
    "empty": "",
    "a field missing": '{"model": "openai/sim-0.3", "sample_id": "q1", "epoch": 0}',
    "correct not a boolean": GOOD.replace("true", '"yes"'),
    "epoch negative": GOOD.replace('"epoch": 0', '"epoch": -1'),
    "epoch a boolean": GOOD.replace('"epoch": 0', '"epoch": true'),
    "a list, not an object": "[1, 2, 3]",
    "one good line, then garbage": GOOD + "\n\x00\x01garbage",
}


def labels_file(text: str):
    def write(store: Path) -> None:
        (store / LABELS).write_text(text, encoding="utf-8")

    return write


def numbers_cases() -> list[Case]:
    store = ("--store", "{store}")
    judge = ("judge", BASE_RUN, "--judge", JUDGE, *store, "--simulator-url", "{sim}")
    cases = [
        Case(
            "leaderboard --unadjusted",
            ("leaderboard", "--unadjusted", *store),
            may_change=BOARD,
            must_show=("each pair at an unadjusted 5 %",),
            exit_codes=(0,),
        ),
        Case(
            "leaderboard --unadjusted given a value",
            ("leaderboard", "--unadjusted=1", *store),
            exit_codes=(2,),
        ),
        Case(
            "leaderboard --unadjusted on an empty store",
            ("leaderboard", "--unadjusted", *store),
            emptied_store,
            exit_codes=(2,),
        ),
        Case(
            "leaderboard --unadjusted beside a damaged run",
            ("leaderboard", "--unadjusted", *store),
            damage_of("samples.parquet", "garbage"),
            BOARD,
            ("each pair at an unadjusted 5 %",),
            (0,),
        ),
        Case("judge --panel with one judge", (*judge, "--panel", "majority"), exit_codes=(2,)),
        Case("judge --panel unknown rule", (*judge, "--panel", "unanimous"), exit_codes=(2,)),
        Case("judge --panel empty rule", (*judge, "--panel", ""), exit_codes=(2,)),
        Case(
            "judge --labels a missing file",
            (*judge, "--labels", "{store}/no-such-labels.jsonl"),
            exit_codes=(2,),
        ),
        Case("judge --labels a directory", (*judge, "--labels", "{store}"), exit_codes=(2,)),
    ]
    for what, text in MALFORMED.items():
        cases.append(
            Case(
                f"judge --labels {what}",
                (*judge, "--labels", f"{{store}}/{LABELS}"),
                labels_file(text),
                exit_codes=(2,),
            )
        )
    return cases
