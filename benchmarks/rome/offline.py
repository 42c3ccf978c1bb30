"""Scoring ROME predictions made elsewhere, as upstream's `evaluate.py` does: the same inputs
(a predictions file as a single object, an array, or an object keyed by question id; JSON or
JSON lines, JSON tried first), the same `scores.json` and `updated_predictions.json`.

With a judge (a function from grader prompt to reply, supplied by the caller), every
prediction is judged instead of ruled, as upstream's `--use_llm_evaluator` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.rome.dataset import annotation_items, check_item, read_json_file
from benchmarks.rome.judge import grader_prompt, parse_robust, parse_upstream
from benchmarks.rome.scoring import bucket_of, score_annotation, scores_json, updated_prediction
from core.types import DatasetError

Judge = Callable[[list[str]], list[str | None]]  # grader prompts -> replies (None: failed)


def read_annotations(path: Path) -> dict[str, dict[str, Any]]:
    items = annotation_items(read_json_file(path), str(path))
    return {str(item.get("question_id")): item for item in items}


def read_predictions(path: Path) -> list[dict[str, Any]]:
    data = read_json_file(path)
    if isinstance(data, dict) and "question_id" in data and "answer" in data:
        return [data]
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        return [{"question_id": qid, **item} for qid, item in data.items()]
    if isinstance(data, list) and all(isinstance(p, dict) for p in data):
        return data
    raise DatasetError(
        f"predictions {path} must be one prediction object, a list of them, or an object "
        "keyed by question_id"
    )


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
    for prediction in predictions:
        qid = str(prediction.get("question_id"))
        if qid not in annotations:
            raise DatasetError(f"prediction question_id {qid} is not in the annotations")
        if "answer" not in prediction:
            raise DatasetError(f"prediction {qid} has no answer")
        check_item(annotations[qid])
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
