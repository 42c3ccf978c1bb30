r"""Chart scorers: chartqa, chartqapro, charxiv_descriptive / charxiv_reasoning. All read
``extract_final_answer(out)``.

Upstream:

- chartqa: 1.0 when any gold (``all_answers``, else ``[answer]``) passes the relaxed check:
  numbers (commas removed, a trailing ``%`` noted) within 5 % relative error, a ratio on one
  side and a percentage on the other aligned by x100; else equal bracketed lists (items
  normalised and sorted); else equal text after lower-casing and deleting punctuation. A gold
  of 0 can never pass numerically (``0.0`` vs ``0`` fails).
- chartqapro (acf09e1; answers from metadata ``all_answers``, else the row's): single-turn rows
  score against the **last** answer only. "Fact Checking" and "Multi Choice" need exact text
  (Multi Choice reads ``b) ...`` as ``B`` when the target is one letter A-E); a ``YES`` year
  flag demands exact text; others use the relaxed check with a 5 % (+1e-10) tolerance, where a
  question mentioning "percentage" turns ratios in [0, 1.5] into percentages and a target of 0
  needs exactly 0. A ``[a, b]`` target is quoted with
  ``re.sub(r"(?<!['\w])(\w[^,]*?)(?!['\w])", r"'\1'", ...)`` and read as a Python list, which
  glues multi-word items (``[New York, Los Angeles]`` becomes ``["NewYork", "LosAngeles"]``);
  items are scored pairwise and averaged. Multi-turn rows score one turn against the first
  answer.
- charxiv: metadata ``question_type`` (missing means "descriptive"). Descriptive: "not
  applicable" must appear in the prediction when it is the answer, else equal text or equal
  numbers (commas and ``%`` removed). Anything else: equal text, or either text contained in the
  other (``A`` passes for ``Model A``).

Default mode changes:

- H1. chartqa: a gold of 0 passes numerically when the prediction is 0 too.
- H2. chartqapro single-turn rows score against every answer, the best winning, except
  "Conversational" rows, whose last answer answers the final turn (as in the official script).
- H3. chartqapro reads a ``[a, b]`` target by splitting on commas and stripping quotes, so
  multi-word items survive.
- H4. charxiv takes the question type from the dataset name (``charxiv_reasoning`` is
  reasoning) when the metadata has none.
- H5. charxiv reasoning passes on equal text or when the answer occurs in the prediction as
  whole words; a prediction contained in the answer no longer passes.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .base import ScoreDetails, ScorerInput, meta, or_none
from .extract import extract_final_answer


def normalise_text(answer: Any) -> str:
    if not answer:
        return ""
    answer = re.sub(r"[^\w\s]", "", str(answer).lower().strip())
    return re.sub(r"\s+", " ", answer).strip()


def _number(text: Any) -> tuple[float | None, bool]:
    text = str(text or "").strip().replace(",", "")
    percent = text.endswith("%")
    try:
        return float(text.rstrip("%") if percent else text), percent
    except ValueError:
        return None, False


def _bracket_items(text: Any) -> list[str]:
    text = str(text).strip() if isinstance(text, str) else ""
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        items = (normalise_text(item.strip()) for item in text[1:-1].split(","))
        return sorted(item for item in items if item)
    return []


def _align_percent(pred: float, pred_pct: bool, gold: float, gold_pct: bool) -> tuple[float, float]:
    if pred_pct != gold_pct:
        if not pred_pct and gold >= 2 and 0 <= pred <= 1.5:
            pred *= 100.0
        if not gold_pct and pred >= 2 and 0 <= gold <= 1.5:
            gold *= 100.0
    return pred, gold


def _text_or_list(prediction: Any, target: Any) -> bool:
    pred_items, gold_items = _bracket_items(prediction), _bracket_items(target)
    if pred_items and gold_items:
        return pred_items == gold_items
    return normalise_text(prediction) == normalise_text(target)


def chartqa_relaxed(prediction: str, target: str, compat: bool) -> bool:
    pred, pred_pct = _number(prediction)
    gold, gold_pct = _number(target)
    if pred is not None and gold is not None:
        pred, gold = _align_percent(pred, pred_pct, gold, gold_pct)
        if gold != 0:
            if abs(pred - gold) / abs(gold) <= 0.05:
                return True
            if abs(gold) < 1e-6 and abs(pred - gold) <= 1e-6:  # tiny targets
                return True
        elif not compat and pred == 0:
            return True
    return _text_or_list(prediction, target)


def score_chartqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    answer = sample.answer or None
    golds = sample.all_answers or ([answer] if answer else [])
    golds = [gold for gold in (golds if isinstance(golds, list) else [golds]) if gold]
    pred = extract_final_answer(out, compat)
    correct = any(chartqa_relaxed(pred, gold, compat) for gold in golds)
    details = {"ground_truth": answer, "all_ground_truth_answers": golds, "pred_answer": pred}
    return ScoreDetails(1.0 if correct else 0.0, or_none(pred), details)


# --------------------------------------------------------------------------- chartqapro

_QUOTE_ITEMS = re.compile(r"(?<!['\w])(\w[^,]*?)(?!['\w])")


def _pro_single(target: str, prediction: str, question: str | None) -> float:
    gold, gold_pct = _number(target)
    pred, pred_pct = _number(prediction)
    if (
        question is not None
        and "percentage" in question.lower()
        and gold is not None
        and pred is not None
    ):
        # Upstream also maps "x/100" ratios here, but float() has already rejected any "/".
        if not gold_pct and 0 <= gold <= 1.5:
            gold, gold_pct = gold * 100.0, True
        if not pred_pct and 0 <= pred <= 1.5:
            pred, pred_pct = pred * 100.0, True
    if gold is not None and pred is not None:
        pred, gold = _align_percent(pred, pred_pct, gold, gold_pct)
        if gold != 0:
            if abs(pred - gold) / abs(gold) <= 0.05 + 1e-10:
                return 1.0
            if abs(gold) < 1e-6 and abs(pred - gold) <= 1e-6:  # tiny targets
                return 1.0
        else:
            return 1.0 if pred == 0.0 else 0.0
    return 1.0 if _text_or_list(prediction, target) else 0.0


def _literal_list(text: str) -> list[str] | None:
    try:
        parsed = ast.literal_eval(text)
    except Exception:  # literal_eval raises many types on model text
        return None
    return [str(item).strip(" '") for item in parsed] if isinstance(parsed, list) else None


def _target_items(target: str, compat: bool) -> list[str]:
    match = re.match(r"^\[(.*)\]$", target.strip())
    if match and not compat:
        items = [item.strip().strip("\"'").strip() for item in match.group(1).split(",")]
        items = [item for item in items if item]
        return items or [target]
    fixed: Any = target
    if match:
        quoted = _QUOTE_ITEMS.sub(r"'\1'", match.group(1))
        try:
            fixed = ast.literal_eval(f"[{quoted}]")
        except Exception:  # upstream catches SyntaxError and ValueError only
            fixed = target
    return _literal_list(str(fixed)) or [str(target)]


def chartqapro_relaxed(
    target: str, prediction: str, flags: Any, exact: bool, question: str | None, compat: bool
) -> float:
    targets = _target_items(target, compat)
    preds = _literal_list(str(prediction)) or [str(prediction)]
    if flags is not None:
        flags = [str(flag).upper() for flag in (flags if isinstance(flags, list) else [flags])]
        if len(flags) < len(targets):
            flags = flags * len(targets)
    scores = []
    for index in range(max(len(targets), len(preds))):
        if index >= len(targets) or index >= len(preds):
            scores.append(0.0)
            continue
        flag = flags[index] if flags and index < len(flags) else "NO"
        if flag.upper() == "YES" or exact:
            equal = normalise_text(targets[index]) == normalise_text(preds[index])
            scores.append(1.0 if equal else 0.0)
        else:
            scores.append(_pro_single(targets[index], preds[index], question))
    return sum(scores) / len(scores) if scores else 0.0


def _choice_letter(text: str) -> str:
    text = str(text).strip()
    match = re.match(r"^([a-zA-Z])[).]", text)
    if match:
        return match.group(1).upper()
    if len(text) == 1 and text.isalpha():
        return text.upper()
    return text


def _pro_prediction(out: str, target: str, question_type: str, compat: bool) -> str:
    prediction = extract_final_answer(str(out), compat).strip(".").strip("\n")
    if question_type == "Multi Choice":
        letter_target = str(target).strip().upper()
        if len(letter_target) == 1 and letter_target in "ABCDE":
            prediction = _choice_letter(prediction)
    return prediction


def chartqapro_answers(sample: ScorerInput) -> list:
    answers = meta(sample, "all_answers")
    if isinstance(answers, list) and answers:
        return answers
    return list(sample.all_answers) if sample.all_answers else [sample.answer]


def score_chartqapro(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    answers = chartqapro_answers(sample)
    question_type = meta(sample, "question_type") or "unknown"
    flags = meta(sample, "year_flags", [])
    exact = question_type in ("Fact Checking", "Multi Choice")
    if meta(sample, "is_multi_turn", False):
        return _score_multi_turn(sample, out, answers, question_type, flags, exact, compat)
    if question_type == "Conversational":
        flags = flags[-1:] if isinstance(flags, list) else [flags]
    if compat or question_type == "Conversational":
        targets = [answers[-1]] if answers else [""]
    else:
        targets = list(answers) or [""]
    best_target, best, best_prediction = "", -1.0, ""
    for raw_target in targets:
        target = str(raw_target).strip(".").strip("\n")
        prediction = _pro_prediction(out, target, question_type, compat)
        value = chartqapro_relaxed(target, prediction, flags, exact, sample.question, compat)
        if value > best:
            best_target, best, best_prediction = target, value, prediction
    prediction = best_prediction
    details = {
        "ground_truth": best_target,
        "pred_answer": prediction,
        "question_type": question_type,
        "is_multi_turn": False,
    }
    return ScoreDetails(best, or_none(prediction), details)


def _score_multi_turn(
    sample: ScorerInput,
    out: str,
    answers: list,
    question_type: str,
    flags: Any,
    exact: bool,
    compat: bool,
) -> ScoreDetails:
    flags = flags if isinstance(flags, list) else [flags]
    outputs = [out]
    turns = min(len(answers), len(outputs), len(flags) if flags else len(answers))
    scores, turn_details = [], []
    for turn in range(turns):
        target = str(answers[turn]).strip(".").strip("\n")
        prediction = _pro_prediction(outputs[turn], target, question_type, compat)
        if question_type == "Conversational":
            turn_flags = flags[-1:]
        elif turn < len(flags):
            turn_flags = [flags[turn]]
        else:
            turn_flags = [flags[0]] if flags else []
        value = chartqapro_relaxed(target, prediction, turn_flags, exact, sample.question, compat)
        scores.append(value)
        turn_details.append(
            {"turn": turn + 1, "score": value, "ground_truth": target, "prediction": prediction}
        )
    predictions = [extract_final_answer(str(o), compat).strip(".").strip("\n") for o in outputs]
    details = {
        "ground_truth": answers,
        "pred_answer": predictions,
        "question_type": question_type,
        "is_multi_turn": True,
        "turn_scores": scores,
        "turn_details": turn_details,
    }
    value = sum(scores) / len(scores) if scores else 0.0
    return ScoreDetails(value, or_none(predictions[0]), details)


# --------------------------------------------------------------------------- charxiv


def _charxiv_number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("%", ""))
    except ValueError:
        return None


def score_charxiv(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    question_type = meta(sample, "question_type")
    if not question_type:
        is_reasoning = not compat and sample.dataset == "charxiv_reasoning"
        question_type = "reasoning" if is_reasoning else "descriptive"
    gold = sample.answer or ""
    pred = extract_final_answer(out, compat)
    value = 0.0
    if pred and gold:
        p, g = pred.strip().lower(), gold.strip().lower()
        if question_type == "descriptive":
            if g == "not applicable":
                value = 1.0 if "not applicable" in p else 0.0
            elif p == g:
                value = 1.0
            else:
                pn, gn = _charxiv_number(p), _charxiv_number(g)
                if pn is not None and gn is not None and abs(pn - gn) < 1e-6:
                    value = 1.0
        elif compat:
            value = 1.0 if p == g or g in p or p in g else 0.0
        else:
            contained = re.search(rf"(?<!\w){re.escape(g)}(?!\w)", p) is not None
            value = 1.0 if p == g or contained else 0.0
    details = {"ground_truth": gold, "pred_answer": pred, "question_type": question_type}
    return ScoreDetails(value, or_none(pred), details)
