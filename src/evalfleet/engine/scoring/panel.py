"""A panel of judges as its own scoring mode: a run with `PANEL_FROM` judges or more also has,
for each of its judge's scoring modes, the majority verdict of all its judges
(`{mode}@panel`). It is computed from the judges' own stored judgements, so it is checkpointed
and resumed with them: nothing is asked for it.

On an answer the judge does not grade, every judge's score is the benchmark's rule score, and
so is the panel's. On a graded answer the panel is right when more than half its judges say
so (a tie is wrong: with an even panel, half is not a majority); when any judge has no verdict
yet (not judged, failed, unparsable), the panel has none either (a score error, counted
apart, never as a wrong answer)."""

from __future__ import annotations

from collections.abc import Sequence

from evalfleet.core.types import Score

PANEL_FROM = 3
SUFFIX = "@panel"


def panel_scoring(scoring: str) -> str:
    return f"{scoring}{SUFFIX}"


def panel_scores(base: Sequence[str], members: Sequence[Sequence[Score]]) -> list[Score]:
    """The panel's score in each of the judge's scoring modes `base`, from each member's
    scores of one answer (members[i] is judge i's list, by mode name). No panel below
    `PANEL_FROM` members."""
    if len(members) < PANEL_FROM:
        return []
    by_mode = [{score.scoring: score for score in scores} for scores in members]
    out = []
    for scoring in base:
        votes = [mine[scoring] for mine in by_mode if scoring in mine]
        if len(votes) < len(members):
            continue  # a mode not every judge scored
        name = panel_scoring(scoring)
        if not any(v.judged for v in votes):  # not graded: the rule score, as every judge's
            first = votes[0]
            out.append(Score(name, first.answer, first.correct, first.value))
            continue
        missing = [v.error for v in votes if v.error is not None]
        if missing:
            out.append(Score(name, None, False, 0.0, judged=True, error=f"panel: {missing[0]}"))
            continue
        right = sum(bool(v.correct) for v in votes)
        correct = 2 * right > len(votes)
        answer = f"{right} of {len(votes)}"
        out.append(Score(name, answer, correct, float(correct), judged=True))
    return out
