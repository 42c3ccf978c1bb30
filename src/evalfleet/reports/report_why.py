"""Why each verdict of an item: the rule or evaluator that decided it and the answer it compared,
in words. A rule scoring's words come from the benchmark's own scorer, run again on the stored
response (scoring is deterministic and cheap next to reading the record); a judge's verdict
names the judge whose words are shown beside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalfleet.benchmarks.interface import Judgement
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
    letters: str = "",
    replies: dict[str, str | None] | None = None,
) -> list[str | None]:
    """One explanation per scoring mode of the item (None where there is nothing to say).
    `letters`: the stored verdicts (`report_data`'s letters); where the scorer run now
    disagrees with one (the results were scored by older code), the words say so. `replies`:
    each judge's stored reply, which a judged mode's words are read from again."""
    if response is None:
        return ["the call failed for good: no response to score, counted wrong"] * len(scorings)
    sample = data.by_id[sample_id]
    rules = _scored(lambda: data.benchmark.score(sample, response, data.options))
    out: list[str | None] = []
    for k, (name, kind) in enumerate(zip(scorings, kinds, strict=True)):
        stored = letters[k] if k < len(letters) else "-"
        if kind == "rule":
            score = rules.get(name)
        elif stored in "RW":  # a judge's mode the rules decided (a row the judge is not asked)
            score = _judged(data, sample, response, None).get(name.split("@", 1)[0])
        else:
            judge = judge_of.get(name, "the judge")
            reply = (replies or {}).get(judge)
            if stored not in "rw" or reply is None:
                out.append(f"judge {judge} graded the response (its words below)")
                continue
            found = _judged(data, sample, response, Judgement(reply))
            score = found.get(name.split("@", 1)[0])
            if score is not None and score.explanation:
                out.append(f"judge {judge}: {score.explanation}")
                continue
        words = score.explanation or None if score else None
        if score and words and stored.upper() in "RW" and (stored.upper() == "R") != score.correct:
            words += " (today's scorer; the stored verdict, scored by older code, stands)"
        out.append(words)
    return out


def _judged(
    data: BenchmarkData, sample: Any, response: str, judgement: Judgement | None
) -> dict[str, Score]:
    judge = data.benchmark.judge
    if judge is None:
        return {}
    return _scored(lambda: judge.score(sample, response, data.options, judgement))


def _scored(score: Callable[[], list[Score]]) -> dict[str, Score]:
    try:
        return {found.scoring: found for found in score()}
    except Exception:  # noqa: BLE001 - a scorer that fails now leaves the verdict unexplained
        return {}


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
