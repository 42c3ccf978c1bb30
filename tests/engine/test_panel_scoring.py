"""A panel of three judges or more is its own scoring mode, from its judges' scores of each
answer: the majority verdict where every judge graded, the rule score where none did, no
verdict (a score error) where one has none yet."""

from __future__ import annotations

from evalfleet.core.types import Score
from evalfleet.engine.scoring.panel import panel_scores

MODES = ("judge", "judge_upstream")


def graded(*verdicts: bool) -> list[list[Score]]:
    return [[Score(m, str(int(v)), v, float(v), judged=True) for m in MODES] for v in verdicts]


def test_the_majority_of_three():
    assert [(s.scoring, s.correct, s.answer) for s in panel_scores(MODES, graded(1, 1, 0))] == [
        ("judge@panel", True, "2 of 3"),
        ("judge_upstream@panel", True, "2 of 3"),
    ]
    assert [s.correct for s in panel_scores(MODES, graded(1, 0, 0))] == [False, False]
    assert [s.correct for s in panel_scores(MODES, graded(1, 1, 0, 0))] == [False, False]  # tie
    assert all(s.judged for s in panel_scores(MODES, graded(1, 1, 1)))


def test_no_panel_below_three_judges():
    assert panel_scores(MODES, graded(True, True)) == []


def test_not_graded_is_the_rule_score_and_a_missing_verdict_is_no_verdict():
    rule = [[Score(m, "B", True, 1.0) for m in MODES] for _ in range(3)]
    assert [(s.correct, s.judged, s.answer) for s in panel_scores(MODES, rule)] == [
        (True, False, "B"),
        (True, False, "B"),
    ]
    members = graded(True, True)
    members.append([Score(m, None, False, 0.0, judged=True, error="not judged yet") for m in MODES])
    found = panel_scores(MODES, members)
    assert [(s.error, s.correct) for s in found] == [("panel: not judged yet", False)] * 2
