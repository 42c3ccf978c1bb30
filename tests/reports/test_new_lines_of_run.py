"""A run's log says "X is new" for its own models only: a model another run added stays
flagged on the board until another model comes, but later runs' logs do not repeat it."""

from __future__ import annotations

import pandas as pd

from evalfleet.reports.leaderboard import Board, new_lines_of_run

NEW = [
    "openai/sim-0.6 is new: rank 1 of 2 on zerobench (upstream; 4 items)",
    "anthropic/sim-0.7 is new: a partial result (3/24) on zerobench (upstream; 4 items), "
    "not ranked",
]


def board() -> Board:
    table = pd.DataFrame(
        {
            "model": ["openai/sim-0.5", "openai/sim-0.6", "openai/sim-0.5", "anthropic/sim-0.7"],
            "run_id": ["first", "grown", "later", "third"],
        }
    )
    return Board(table, NEW, runs=4, files={})


def test_the_run_that_brought_a_model_says_it_is_new():
    assert new_lines_of_run(board(), "grown") == NEW[:1]
    assert new_lines_of_run(board(), "third") == NEW[1:]


def test_a_later_run_of_other_models_does_not_repeat_it():
    assert new_lines_of_run(board(), "later") == []
    assert new_lines_of_run(board(), "no-such-run") == []


def test_an_empty_board_has_nothing_to_say():
    empty = Board(pd.DataFrame(columns=["model", "run_id"]), [], runs=0, files={})
    assert new_lines_of_run(empty, "later") == []
