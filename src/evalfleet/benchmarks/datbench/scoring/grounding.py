r"""Grounding scorers: pixmo_points_eval (points in masks) and refcoco_* (boxes).

pixmo_points_eval upstream: points are parsed from the raw output (the last ``\boxed{...}``
holding pairs, checked from last to first; else ``(x, y)`` pairs; else ``[x, y]``; else bare
``x, y``; minus signs are never read). A prediction is on a 0-1 scale when both values are at
most 1, else on a 0-1000 scale; ground-truth points may also be percentages (0-100). Rows with
``has_target`` false score 1 when the output says so ("no such object", "not present", ...).
Otherwise predictions are matched to ground-truth points by minimum total distance (Hungarian);
a matched prediction is a hit when it falls in its point's mask (a list of rows of booleans);
score = F1 of precision ``hits/predictions`` and recall ``hits/ground-truth points``.

refcoco upstream: four numbers from the last ``\boxed{...}``, else from the first ``[...]``
(zeros when neither holds four); values above 1.5 mean the 0-1000 convention (divide by 1000);
clamp to [0, 1]; IoU against the metadata ``bbox`` (xyxy, used as is); score = recall@0.5,
a binary 0/1 (a design choice kept in both modes).

Default mode changes:

- G1. pixmo: a point on the right or bottom edge (x or y exactly 1.0) lies in the last mask
  column or row; upstream's ``int(x * width)`` puts it outside the mask.
- G2. refcoco: parenthesised boxes ``(x1, y1, x2, y2)`` are read like bracketed ones, and the
  last bracketed or parenthesised group holding four numbers wins (upstream reads only the
  first ``[...]`` and ignores parentheses, scoring ``(100, 200, 300, 400)`` as no box).
"""

from __future__ import annotations

import json
import math
import re

from .base import ScoreDetails, ScorerInput, meta

_NUMBER = r"(\d+(?:\.\d+)?)"
_PIXMO_BOXED = re.compile(r"\\+boxed\{([^}]*)\}")
_PIXMO_IN_BOX = (
    re.compile(rf"{_NUMBER}\s*,\s*{_NUMBER}"),
    re.compile(rf"{_NUMBER}\s+([0-9]+(?:\.\d+)?)"),
)
_PIXMO_PAREN = re.compile(rf"\({_NUMBER}\s*,\s*{_NUMBER}\)")
_PIXMO_BRACKET = re.compile(rf"\[{_NUMBER}\s*,\s*{_NUMBER}\]")
_PIXMO_BARE = re.compile(rf"{_NUMBER}\s*,\s*{_NUMBER}")
NO_TARGET_PHRASES = (
    "no target", "no such object", "no object", "no object found", "no target found",
    "no target present", "target not found", "object not found", "not present",
    "is not present", "absent", "missing", "cannot find", "cannot locate", "can't find",
    "can't locate",
)  # fmt: skip

Point = tuple[float, float]


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def _normalise_pred(x: float, y: float) -> Point | None:
    if max(abs(x), abs(y)) <= 1.0:
        return _clamp(x), _clamp(y)
    if min(x, y) < 0.0:
        return None
    return _clamp(min(x, 1000.0) / 1000.0), _clamp(min(y, 1000.0) / 1000.0)


def _normalise_gt(x: float, y: float) -> Point | None:
    largest = max(abs(x), abs(y))
    if largest <= 1.0:
        return _clamp(x), _clamp(y)
    if largest <= 100.0:
        return _clamp(x / 100.0), _clamp(y / 100.0)
    return _normalise_pred(x, y)


def parse_points(response: str) -> list[Point]:
    """Predicted points, normalised to [0, 1]."""
    response = response.strip()
    for content in reversed(_PIXMO_BOXED.findall(response)):
        points = [
            point
            for pattern in _PIXMO_IN_BOX
            for x, y in pattern.findall(content)
            if (point := _normalise_pred(float(x), float(y))) is not None
        ]
        if points:
            return points
    for pattern in (_PIXMO_PAREN, _PIXMO_BRACKET, _PIXMO_BARE):
        points = [
            point
            for x, y in pattern.findall(response)
            if (point := _normalise_pred(float(x), float(y))) is not None
        ]
        if points or pattern is _PIXMO_BARE:
            return points
    return []


def ground_truth_points(raw: object) -> list[Point]:
    points: list[Point] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            if isinstance(item, dict) and "x" in item and "y" in item:
                x, y = float(item["x"]), float(item["y"])
            elif isinstance(item, (list, tuple)) and len(item) >= 2:
                x, y = float(item[0]), float(item[1])
            else:
                continue
        except (TypeError, ValueError):
            continue
        point = _normalise_gt(x, y)
        if point is not None:
            points.append(point)
    return points


def _in_mask(point: Point, mask: object, compat: bool) -> bool:
    if not isinstance(mask, list) or not mask or not mask[0]:
        return False
    height, width = len(mask), len(mask[0])
    col, row = int(point[0] * width), int(point[1] * height)
    if not compat:
        col, row = min(col, width - 1), min(row, height - 1)
    if row < 0 or row >= height or col < 0 or col >= width:
        return False
    try:
        return bool(mask[row][col])
    except (IndexError, TypeError):
        return False


def _assign(predicted: list[Point], truth: list[Point]) -> list[tuple[int, int]]:
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    cost = np.array([[math.dist(p, g) for g in truth] for p in predicted], dtype=float)
    rows, cols = linear_sum_assignment(cost)
    return [(int(r), int(c)) for r, c in zip(rows, cols, strict=True)]


def score_pixmo(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    predicted = parse_points(out)
    truth = ground_truth_points(meta(sample, "points_target"))
    masks = meta(sample, "points_mask") or []
    has_target = meta(sample, "has_target")
    score = precision = recall = 0.0
    if not has_target:
        lowered = out.lower()
        score = 1.0 if any(phrase in lowered for phrase in NO_TARGET_PHRASES) else 0.0
    elif truth and predicted:
        try:
            hits = sum(
                1
                for p, g in _assign(predicted, truth)
                if g < len(masks) and _in_mask(predicted[p], masks[g], compat)
            )
        except (ValueError, TypeError):
            hits = 0
        precision, recall = hits / len(predicted), hits / len(truth)
        score = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    answer = json.dumps([list(p) for p in predicted]) if predicted else None
    return ScoreDetails(
        score,
        answer,
        {
            "predicted_points": [list(p) for p in predicted],
            "ground_truth_points": [list(p) for p in truth],
            "has_target": has_target,
            "precision": precision,
            "recall": recall,
        },
    )


# --------------------------------------------------------------------------- refcoco

_REFCOCO_BOXED = re.compile(r"\\+boxed\{([^}]*)\}")
_REFCOCO_BRACKET = re.compile(r"\[([^\]]+)\]")
_REFCOCO_GROUP = re.compile(r"\[([^\]]+)\]|\(([^)]+)\)")
_REFCOCO_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
RECALL_THRESHOLDS = (0.3, 0.5, 0.7)


def parse_box(text: str, compat: bool) -> list[float] | None:
    """Four raw numbers of the predicted box, or None when the output holds none."""
    if not text:
        return None
    candidates: list[str] = []
    boxed = _REFCOCO_BOXED.findall(text)
    if boxed:
        candidates.append(boxed[-1])
    if compat:
        bracket = _REFCOCO_BRACKET.search(text)
        if bracket:
            candidates.append(bracket.group(0))
    else:
        candidates.extend(m.group(0) for m in reversed(list(_REFCOCO_GROUP.finditer(text))))
    for candidate in candidates:
        numbers = _REFCOCO_NUMBER.findall(candidate)
        if len(numbers) >= 4:
            return [float(n) for n in numbers[:4]]
    return None


def iou(first: list[float], second: list[float]) -> float:
    inter_w = max(0.0, min(first[2], second[2]) - max(first[0], second[0]))
    inter_h = max(0.0, min(first[3], second[3]) - max(first[1], second[1]))
    inter = inter_w * inter_h
    area1 = max(0.0, first[2] - first[0]) * max(0.0, first[3] - first[1])
    area2 = max(0.0, second[2] - second[0]) * max(0.0, second[3] - second[1])
    denominator = area1 + area2 - inter
    return inter / denominator if denominator > 0 else 0.0


def score_refcoco(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    raw = parse_box(out, compat)
    box = raw if raw is not None else [0.0, 0.0, 0.0, 0.0]
    if max(abs(v) for v in box) > 1.5:
        box = [v / 1000.0 for v in box]
    box = [_clamp(v) for v in box]
    gt = [float(v) for v in meta(sample, "bbox")]
    overlap = iou(gt, box)
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    center = 1.0 if gt[0] <= cx <= gt[2] and gt[1] <= cy <= gt[3] else 0.0
    details: dict = {"iou": overlap, "center_acc": center, "pred_bbox": box, "gt_bbox": gt}
    for threshold in RECALL_THRESHOLDS:
        details[f"recall@{threshold}"] = 1.0 if overlap >= threshold else 0.0
    answer = json.dumps(box) if raw is not None else None
    return ScoreDetails(details["recall@0.5"], answer, details)


def check_refcoco_bbox(sample: ScorerInput) -> str | None:
    """Why the metadata ``bbox`` is unusable, or None when it is four numbers."""
    bbox = meta(sample, "bbox")
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return "must be a list of 4 numbers"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox):
        return "must be a list of 4 numbers"
    return None
