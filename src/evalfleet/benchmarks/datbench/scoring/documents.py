"""Document QA scorers: docvqa, ocr-vqa, infovqa. All read ``extract_final_answer(out)``.

Upstream:

- docvqa (010e3e7): golds = ``all_answers`` (else ``[answer]``), empty ones dropped;
  score = the best *raw* ANLS, continuous and unthresholded (0.3 adds 0.3 to the mean) - a
  design choice kept in both modes.
- ocr-vqa (010e3e7): raw ANLS against ``answer`` only (``all_answers`` is ignored by design:
  OCR-VQA has one answer per question); 0 when the answer is empty.
- infovqa: the ``anls`` package score (threshold 0.5, strict ``NL < 0.5``) against golds read
  from the scorer-sample key ``answers``, which the harness never sets, so only ``[answer]``
  counts.

Default mode changes:

- V1. infovqa scores against ``all_answers`` (falling back to ``[answer]``), the best gold
  winning; upstream ignores every answer but the first.
"""

from __future__ import annotations

from .base import ScoreDetails, ScorerInput, or_none
from .extract import extract_final_answer
from .text import anls_package, anls_raw, normalise_ws


def _golds(sample: ScorerInput) -> list[str]:
    answers = sample.all_answers or ([sample.answer] if sample.answer else [])
    if not isinstance(answers, list):
        answers = [answers]
    return [answer for answer in answers if answer]


def _thresholds(raw: float) -> dict:
    return {
        "anls": raw,
        "anls_thresholded_0_5": raw if raw >= 0.5 else 0.0,
        "threshold_0_5_accuracy": 1.0 if raw >= 0.5 else 0.0,
    }


def score_docvqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    golds = _golds(sample)
    pred = extract_final_answer(out, compat)
    pred_norm = normalise_ws(pred)
    raw = max((anls_raw(pred_norm, normalise_ws(gold)) for gold in golds), default=0.0)
    details = _thresholds(raw) | {
        "ground_truth": sample.answer or None,
        "all_ground_truth_answers": golds,
        "pred_answer": pred,
    }
    return ScoreDetails(raw, or_none(pred), details)


def score_ocrvqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    pred = extract_final_answer(out, compat)
    pred_norm, gold_norm = normalise_ws(pred), normalise_ws(sample.answer)
    raw = anls_raw(pred_norm, gold_norm) if sample.answer else 0.0
    details = _thresholds(raw) | {
        "exact_match": 1.0 if pred_norm == gold_norm else 0.0,
        "ground_truth": sample.answer,
        "pred_answer": pred,
    }
    return ScoreDetails(raw, or_none(pred), details)


def score_infovqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    golds = [sample.answer] if sample.answer else []
    if not compat:
        golds = _golds(sample)
    pred = extract_final_answer(out, compat)
    value = anls_package(pred, golds) if golds else 0.0
    details = {
        "anls": value,
        "ground_truth": sample.answer or None,
        "all_ground_truth_answers": golds,
        "pred_answer": pred,
    }
    return ScoreDetails(value, or_none(pred), details)
