"""VQA soft-accuracy scorers: text-vqa and vqa-v2. Both read ``extract_final_answer(out)``.

Upstream normalises the prediction and every human answer (EvalAI's processor for TextVQA, the
official VQA-v2 one for VQA-v2; see ``vqa_normalise``) and scores the leave-one-out mean over
the n answers of ``min(1, matches among the other n-1 / 3)``, which equals the official metric
for n = 10 (no answers scores 0). TextVQA adds a fallback when that gives 0 and a currency or
percent sign (``$ £ € ¥ ₹ %``) appears on either side: the digits-and-dot forms of the
prediction and of a gold holding a digit must be equal (``5 dollars`` matches ``$5``).
VQA-v2 needs metadata ``answer_type`` and ``question_type`` (only echoed).

Both modes are identical: these are the official metrics.
"""

from __future__ import annotations

import re

from .base import ScoreDetails, ScorerInput, meta, or_none
from .extract import extract_final_answer
from .vqa_normalise import evalai_normalise, vqa_v2_normalise

_SYMBOLS = ("$", "£", "€", "¥", "₹", "%")


def soft_accuracy(prediction: str, golds: list[str]) -> float:
    """Leave-one-out mean of ``min(1, matches/3)`` over the (already normalised) golds."""
    n = len(golds)
    if n == 0:
        return 0.0
    total = 0.0
    for i in range(n):
        matches = sum(1 for j in range(n) if j != i and golds[j] == prediction)
        total += min(1.0, matches / 3.0)
    return total / n


def _numeric_form(text: str) -> str:
    if not text:
        return ""
    text = text.replace("$", "").replace("£", "").replace("€", "").replace("%", "")
    text = re.sub(r"[^0-9\.]", "", text.replace(",", ""))
    if text.count(".") > 1:
        parts = [part for part in text.split(".") if part != ""]
        if parts:
            text = parts[0] + "." + "".join(parts[1:])
    return text.strip(".")


def score_textvqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    golds = list(sample.all_answers or [])
    pred = extract_final_answer(out, compat)
    value = soft_accuracy(evalai_normalise(pred or ""), [evalai_normalise(g) for g in golds])
    if value == 0.0 and (
        any(s in pred for s in _SYMBOLS) or any(s in str(g) for g in golds for s in _SYMBOLS)
    ):
        pred_num = _numeric_form(pred)
        if any(char.isdigit() for char in pred) and pred_num:
            for gold in golds:
                if gold and any(char.isdigit() for char in str(gold)):
                    gold_num = _numeric_form(str(gold))
                    if gold_num and gold_num == pred_num:
                        value = 1.0
                        break
    return ScoreDetails(value, or_none(pred), {"ground_truth_answers": golds, "pred_answer": pred})


def score_vqav2(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    golds = list(sample.all_answers or [])
    pred = extract_final_answer(out, compat)
    value = soft_accuracy(vqa_v2_normalise(pred), [vqa_v2_normalise(g) for g in golds])
    details = {
        "ground_truth_answers": golds,
        "pred_answer": pred,
        "answer_type": meta(sample, "answer_type"),
        "question_type": meta(sample, "question_type"),
    }
    return ScoreDetails(value, or_none(pred), details)
