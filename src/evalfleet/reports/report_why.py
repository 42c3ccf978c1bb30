"""Why each verdict of an item: the rule or evaluator that decided it and the answer it compared,
in words. A rule scoring's words come from the benchmark's own scorer, run again on the stored
response (scoring is deterministic and cheap next to reading the record); a judge's verdict
names the judge whose words are shown beside it."""

from __future__ import annotations

from evalfleet.core.types import Score
from evalfleet.engine.run.items import BenchmarkData
from evalfleet.engine.store.stored import StoredRun


def explanations(
    data: BenchmarkData,
    sample_id: str,
    response: str | None,
    scorings: list[str],
    kinds: list[str],
    judge_of: dict[str, str],
) -> list[str | None]:
    """One explanation per scoring mode of the item (None where there is nothing to say)."""
    rules: dict[str, Score] = {}
    if response is not None and "rule" in kinds:
        try:
            scored = data.benchmark.score(data.by_id[sample_id], response, data.options)
        except Exception:  # noqa: BLE001 - a scorer that fails now leaves the verdict unexplained
            scored = []
        rules = {score.scoring: score for score in scored}
    out: list[str | None] = []
    for name, kind in zip(scorings, kinds, strict=True):
        if response is None:
            out.append("the call failed for good: no response to score, counted wrong")
        elif kind == "rule":
            score = rules.get(name)
            out.append(score.explanation or None if score else None)
        else:
            judge = judge_of.get(name, "the judge")
            out.append(
                f"judge {judge} read the answer out and compared it (its words below)"
                if kind == "judge-extract"
                else f"judge {judge} graded the response against the target (its words below)"
            )
    return out


def judges_by_scoring(run: StoredRun, benchmark: str) -> dict[str, str]:
    """scoring mode -> the judge model that gives it."""
    judge = run.data[benchmark].benchmark.judge
    if judge is None:
        return {}
    from evalfleet.engine.scoring.shards import judge_scoring

    return {
        judge_scoring(s, model, position == 0): model
        for position, model in enumerate(run.judges)
        for s in judge.scorings
    }
