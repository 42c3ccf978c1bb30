"""ROME rule scoring of one response, and the files upstream's `evaluate.py` writes:
`scores.json` (buckets by task) and `updated_predictions.json` (each prediction merged with its
annotation), in upstream's exact shape and serialisation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evalfleet.benchmarks.rome.evaluators import evaluate
from evalfleet.benchmarks.rome.extract import extract
from evalfleet.core.types import Sample, Score


@dataclass
class RuleResult:
    value: float  # int 0/1, or a float for location credit (kept as upstream returns it)
    answer: str  # what upstream writes back as `answer`
    correct: bool
    extra: dict[str, int] = field(default_factory=dict)


def score_annotation(annotation: dict[str, Any], response: str, mode: str) -> RuleResult:
    """Extract, normalise, evaluate (reference §2.3-2.4)."""
    extracted = extract(response, mode)
    judged = evaluate(annotation["evaluator"], extracted, mode, annotation["evaluator_kwargs"])
    return RuleResult(judged.score, judged.answer, judged.score >= 1, judged.extra)


def rule_score(sample: Sample, response: str, mode: str) -> Score:
    annotation = sample.metadata["annotation"]
    result = score_annotation(annotation, response, mode)
    why = (
        f"ROME evaluator {annotation['evaluator']} ({mode} extraction) read {result.answer!r}; "
        f"against {_kwargs_words(annotation['evaluator_kwargs'])}: score {result.value:g}"
    )
    return Score(mode, result.answer, result.correct, float(result.value), explanation=why)


def _kwargs_words(kwargs: dict[str, Any]) -> str:
    """What the evaluator compared against, in one short line."""
    text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in kwargs.items())
    return text if len(text) <= 160 else text[:159] + "…"


def scores_json(items: list[tuple[str, str, float]]) -> dict[str, Any]:
    """upstream's scores.json from (bucket, sub-bucket, score) per prediction, in order:
    `final_score` [sum, n], `accuracy` in percent, then per bucket
    [sum, count, fraction, {sub: [sum, count, fraction]}]. Sums start from the int 0, so they
    stay ints unless a score was a float, as upstream's do."""
    totals: dict[str, list[Any]] = {}
    for bucket, sub, score in items:
        tracker = totals.setdefault(bucket, [0, 0, {}])
        tracker[0] += score
        tracker[1] += 1
        sub_tracker = tracker[2].setdefault(sub, [0, 0])
        sub_tracker[0] += score
        sub_tracker[1] += 1
    final = sum(t[0] for t in totals.values())
    out: dict[str, Any] = {
        "final_score": [final, len(items)],
        "accuracy": round(final / len(items) * 100, 3) if items else 0.0,
    }
    for bucket, (total, count, subs) in totals.items():
        out[bucket] = [
            total,
            count,
            round(total / count, 3),
            {s: [v, c, round(v / c, 3)] for s, (v, c) in subs.items()},
        ]
    return out


def bucket_of(prediction: dict, annotation: dict, tracker: str) -> str:
    return prediction.get(tracker) or annotation.get(tracker) or "all"


def updated_prediction(
    prediction: dict[str, Any],
    annotation: dict[str, Any],
    result: RuleResult | None,
    score: float,
    judgement_response: str | None = None,
) -> dict[str, Any]:
    """The prediction as upstream leaves it: rule mode adds `raw_answer` and rewrites
    `answer`; then every annotation field is merged in; `correct` and `judgement_response`
    come last."""
    merged = dict(prediction)
    if result is not None:
        merged["raw_answer"] = merged["answer"]
        merged["answer"] = result.answer
        merged.update(result.extra)
    merged.update(annotation)
    merged["correct"] = score
    merged["judgement_response"] = judgement_response
    return merged


def dumps(obj: Any) -> bytes:
    """upstream's serialisation: UTF-8, two-space indent, no ASCII escapes, no final newline."""
    return json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8")
