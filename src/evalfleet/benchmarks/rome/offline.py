"""Scoring ROME predictions made elsewhere, as upstream's `evaluate.py` does: the same inputs
(a predictions file as a single object, an array, or an object keyed by question id; JSON or
JSON lines, JSON tried first), the same `scores.json` and `updated_predictions.json`.

With a judge (a function from grader prompt to reply, supplied by the caller), every
prediction is judged instead of ruled, as upstream's `--use_llm_evaluator` does.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalfleet.benchmarks.rome.dataset import annotation_items, check_item
from evalfleet.benchmarks.rome.files import read_json
from evalfleet.benchmarks.rome.judge import grader_prompt, parse_robust, parse_upstream
from evalfleet.benchmarks.rome.scoring import (
    bucket_of,
    score_annotation,
    scores_json,
    updated_prediction,
)
from evalfleet.core.types import DatasetError

Judge = Callable[[list[str]], list[str | None]]  # grader prompts -> replies (None: failed)


PREDICTION_FIELDS = ("question_id", "answer")
SHOWN = 5  # ids named in a message


def read_annotations(path: Path) -> dict[str, dict[str, Any]]:
    """The annotations by question id; a question id given twice is refused."""
    read = read_json(path)
    items = annotation_items(read.data, str(path))
    ids = [str(item.get("question_id")) for item in items]
    given = Counter(str(i["question_id"]) for i in items if i.get("question_id") is not None)
    twice = sorted({qid for qid, n in given.items() if n > 1} | set(read.repeated_keys))
    if twice:
        raise DatasetError(
            f"annotations {path}: question_id {_ids(twice)} given more than once: keep one "
            "annotation per question"
        )
    return dict(zip(ids, items, strict=True))


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """Upstream's shapes (one object, a list of them, or an object keyed by question_id; JSON
    or JSON lines), each prediction checked: an object with question_id and answer, and one
    prediction per question (upstream would count a repeated one twice)."""
    read = read_json(path)
    data = read.data
    if isinstance(data, dict) and "question_id" in data and "answer" in data:
        found = [("the prediction", data)]
    elif isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        if read.repeated_keys:
            raise DatasetError(
                f"predictions {path}: question_id {_ids(list(read.repeated_keys))} given more "
                "than once: keep one prediction per question (upstream would keep the last)"
            )
        found = [(f"question_id {q!r}", {"question_id": q, **v}) for q, v in data.items()]
    elif isinstance(data, list):
        found = [(read.where(i), p) for i, p in enumerate(data)]
    else:
        raise DatasetError(
            f"predictions {path} must be one prediction object, a list of them, or an object "
            "keyed by question_id"
        )
    for where, prediction in found:
        _check_prediction(path, where, prediction)
    return _once_each(path, found)


def _check_prediction(path: Path, where: str, prediction: Any) -> None:
    if not isinstance(prediction, dict):
        raise DatasetError(
            f"predictions {path} {where}: a prediction is an object with question_id and "
            f"answer, not {type(prediction).__name__}"
        )
    missing = [name for name in PREDICTION_FIELDS if name not in prediction]
    if missing:
        has = ", ".join(map(str, prediction)) or "no field"
        raise DatasetError(
            f"predictions {path} {where}: no {' or '.join(missing)}: a prediction has the "
            f"fields question_id and answer (this one has {has})"
        )
    qid = prediction["question_id"]
    if isinstance(qid, bool) or not isinstance(qid, str | int) or qid == "":
        raise DatasetError(
            f"predictions {path} {where}: question_id must be a string or a number, not {qid!r}"
        )


def _once_each(path: Path, found: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    places: dict[str, list[str]] = defaultdict(list)
    for where, prediction in found:
        places[str(prediction["question_id"])].append(where)
    twice = {qid: at for qid, at in places.items() if len(at) > 1}
    if twice:
        named = "; ".join(f"{qid} ({', '.join(at)})" for qid, at in list(twice.items())[:SHOWN])
        more = f" and {len(twice) - SHOWN} more" if len(twice) > SHOWN else ""
        raise DatasetError(
            f"predictions {path}: more than one prediction for question_id {named}{more}: "
            "keep one prediction per question (upstream would count each)"
        )
    return [prediction for _, prediction in found]


def unpredicted(annotations: dict[str, Any], predictions: list[dict[str, Any]]) -> list[str]:
    """The annotated questions no prediction answers, in the annotations' order. Upstream
    scores the predictions only: these count neither in the sum nor in the denominator."""
    predicted = {str(p["question_id"]) for p in predictions}
    return [qid for qid in annotations if qid not in predicted]


def _ids(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def score_predictions(
    annotations: dict[str, dict[str, Any]],
    predictions: list[dict[str, Any]],
    *,
    mode: str = "upstream",
    tracker: str = "task",
    subtracker: str | None = None,
    judge: Judge | None = None,
    judge_parse: str = "upstream",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(scores.json, updated_predictions.json) contents."""
    if not predictions:
        raise DatasetError("the predictions file holds no prediction")
    unknown = [str(p.get("question_id")) for p in predictions]
    unknown = [qid for qid in unknown if qid not in annotations]
    if unknown:
        raise DatasetError(
            f"prediction question_id {_ids(unknown)} is not in the annotations: score them "
            "against the annotations they were made for"
        )
    for prediction in predictions:
        if "answer" not in prediction:
            raise DatasetError(f"prediction {prediction.get('question_id')} has no answer")
        check_item(annotations[str(prediction["question_id"])])
    replies: list[str | None] = [None] * len(predictions)
    if judge is not None:
        prompts = [
            grader_prompt(
                annotations[str(p["question_id"])]["question"],
                annotations[str(p["question_id"])]["reference"],
                p["answer"] if isinstance(p["answer"], str) else str(p["answer"]),
            )
            for p in predictions
        ]
        replies = judge(prompts)
    buckets: list[tuple[str, str, Any]] = []
    updated = []
    for prediction, reply in zip(predictions, replies, strict=True):
        annotation = annotations[str(prediction["question_id"])]
        merged = dict(prediction)
        if judge is None:
            result = score_annotation(annotation, str(prediction["answer"]), mode)
            score: Any = result.value
        else:
            result = None
            parsed = (
                parse_upstream(reply or "")
                if judge_parse == "upstream"
                else parse_robust(reply or "")
            )
            score = parsed or 0
        bucket = bucket_of(merged, annotation, tracker)
        sub = bucket_of(merged, annotation, subtracker) if subtracker else bucket
        buckets.append((bucket, sub, score))
        updated.append(updated_prediction(merged, annotation, result, score, reply))
    return scores_json(buckets), updated
