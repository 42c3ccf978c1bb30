r"""Maths scorers: mathvista, mathverse_*, logicvista (mathvision has its own module).

Upstream:

- mathvista: always the free-form path (the harness never sets ``question_type``). The
  prediction ``x = extract_final_answer(out)`` is normalised MMMU-style: a number becomes
  ``[round(float, 2)]``, a text ``[x.lower()]`` (one character c becomes ``[" c", "c "]``); an
  empty ``x`` falls back to MMMU's open-response parse of the raw output. Correct when a text
  prediction *contains* a text gold, or a number prediction equals a number gold; a text
  prediction never matches a number gold (``Answer: x = 2`` fails gold ``2``), and an empty gold
  is contained in every text prediction.
- mathverse: upstream raises ``NotImplementedError("MathVerse uses LM-judge scoring only.")``,
  which crashes the whole run. Compat mode returns score 0 with
  ``details["error"] = "upstream mathverse scorer is not implemented"`` instead, so runs finish.
- logicvista: letter *sets*. S(x): every A-H character of the upper-cased extraction,
  **including letters inside words** (``The answer is B`` gives {H, E, A, B}); else letters after
  "answer:" / "answer is"; else every A-H of the whole upper-cased text when there are 1-4. The
  gold set is S(answer), the predicted set S(out) plus the single letter of the last
  ``Answer: X`` line or of the MMMU fallback (choices ``A. ...`` parsed from the bare question,
  else metadata ``options``). Correct when the sets are equal (all correct letters, no extras).

Default mode changes:

- M1. mathvista: when the gold is a number and the prediction is text, the last number in the
  prediction is compared too (``x = 2`` matches ``2``); an empty gold is never matched.
- M2. mathverse is scored with the generic fallback (case-insensitive exact match of
  ``extract_final_answer(out)`` with the answer), reported as ``details["scorer"] = "fallback"``.
- M3. logicvista reads a letter set only from standalone letters: a list of letters
  (``A, C``, ``(b) and (d)``) in either case, else the upper-case standalone letters of the
  extraction (or, failing those, its bracketed letters in either case), else the upper-case
  letters after "answer:" / "answer is"; letters inside words never count, and the whole-text
  letter harvest is gone. The ``Answer: X`` line letter follows the mcq D3 rule. A gold that
  yields no letters is never matched (upstream: two empty sets are equal).
"""

from __future__ import annotations

import re
from typing import Any

from .base import ScoreDetails, ScorerInput, meta, or_none
from .extract import extract_final_answer
from .mcq import answer_line_letter, bracketed_letters, mmmu_fallback

# --------------------------------------------------------------------------- mathvista

_NUMBERS_COMMAS = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")
_NUMBERS_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")
_NUMBERS_SIMPLE = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")
_KEY_INDICATORS = (
    "could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ",
)  # fmt: skip
_TRIVIAL = frozenset({":", ",", ".", "!", "?", ";", "'"})


def normalise_open(text: str) -> list[Any]:
    """MMMU's ``normalize_str``: ``[round(float, 2)]`` for a number, else lower-cased text."""
    text = text.strip()
    try:
        return [round(float(text.replace(",", "")), 2)]
    except ValueError:
        pass
    text = text.lower()
    return [" " + text, text + " "] if len(text) == 1 else [text]


def extract_numbers(text: str) -> list[str]:
    return (
        _NUMBERS_COMMAS.findall(text)
        + _NUMBERS_SCIENTIFIC.findall(text)
        + _NUMBERS_SIMPLE.findall(text)
    )


def _key_responses(response: str) -> list[str]:
    response = response.strip().strip(".").lower()
    pieces = re.split(r"\.\s(?=[A-Z])|\n", response)
    indicators = list(_KEY_INDICATORS)
    keys = []
    for index, piece in enumerate(pieces):
        if index == len(pieces) - 1:
            indicators.append("=")
        shortest = None
        for indicator in indicators:
            if indicator in piece:
                tail = piece.split(indicator)[-1].strip()
                if not shortest or len(tail) < len(shortest):
                    shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            keys.append(shortest)
    return keys or [response]


def parse_open_response(response: str, compat: bool) -> list[Any]:
    """MMMU's open-response parse (upstream tries ``extract_final_answer`` first)."""
    short = extract_final_answer(response, compat)
    keys = [short] if short else _key_responses(response)
    candidates = keys + [number for key in keys for number in extract_numbers(key)]
    parsed: list[Any] = []
    for candidate in candidates:
        for value in normalise_open(candidate):
            if value not in parsed:
                parsed.append(value)
    return parsed


def open_correct(gold: str, parsed: list[Any]) -> bool:
    """MMMU's ``eval_open``: a text gold contained in a text prediction, or equal numbers."""
    golds = normalise_open(gold)
    for pred in parsed:
        if isinstance(pred, str):
            if any(isinstance(g, str) and g in pred for g in golds):
                return True
        elif pred in golds:
            return True
    return False


def score_mathvista(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    gold = sample.answer or ""
    extracted = extract_final_answer(str(out), compat).strip()
    parsed = normalise_open(extracted) if extracted else parse_open_response(out, compat)
    correct = open_correct(gold, parsed)
    if not compat:
        if not gold.strip():
            correct = False
        elif not correct and not any(isinstance(p, float) for p in parsed):
            numbers = extract_numbers(extracted)
            if numbers and any(isinstance(g, float) for g in normalise_open(gold)):
                correct = open_correct(gold, normalise_open(numbers[-1]))
    details = {
        "ground_truth": gold,
        "question_type": "free_form",
        "parsed_response": parsed,
    }
    return ScoreDetails(1.0 if correct else 0.0, or_none(extracted), details)


# --------------------------------------------------------------------------- mathverse


def score_mathverse(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    if compat:
        return ScoreDetails(0.0, None, {"error": "upstream mathverse scorer is not implemented"})
    extracted = extract_final_answer(out, compat)
    correct = extracted.strip().lower() == sample.answer.strip().lower()
    return ScoreDetails(1.0 if correct else 0.0, or_none(extracted), {"scorer": "fallback"})


# --------------------------------------------------------------------------- logicvista

_LV_PATTERNS = (
    re.compile(r"(?:answer|final\s+answer)\s*:\s*([A-H,\s]+)", re.IGNORECASE),
    re.compile(r"answer\s+is\s+([A-H,\s]+)", re.IGNORECASE),
    re.compile(r"correct\s+answer\s+is\s+([A-H,\s]+)", re.IGNORECASE),
)
_LV_LIST = re.compile(
    r"\(?[A-Ha-h]\)?(?:\s*(?:,|;|&|\band\b|\s)\s*\(?[A-Ha-h]\)?)*\.?", re.IGNORECASE
)
_LV_CHOICE = re.compile(r"([A-H])\.\s+([^\n]+)")


def letter_set(text: str, compat: bool) -> set[str]:
    """S(x): the set of choice letters a text gives (see the module docstring)."""
    if not text:
        return set()
    extracted = extract_final_answer(text, compat).strip()
    if compat:
        letters = set(re.findall(r"[A-H]", extracted.upper()))
        if letters:
            return letters
    elif _LV_LIST.fullmatch(extracted):
        return set(re.findall(r"(?<![A-Za-z])([A-Ha-h])(?![A-Za-z])", extracted.upper()))
    else:
        letters = set(re.findall(r"\b([A-H])\b", extracted))
        letters = letters or set(bracketed_letters(extracted, "ABCDEFGH"))
        if letters:
            return letters
    for pattern in _LV_PATTERNS:
        match = pattern.search(text)
        if match:
            part = match.group(1).strip()
            if compat:
                letters = set(re.findall(r"[A-H]", part.upper()))
            else:
                letters = set(re.findall(r"\b([A-H])\b", part))
            if letters:
                return letters
    if compat:
        letters = set(re.findall(r"[A-H]", text.upper().replace(" ", "").replace(",", "")))
        if 0 < len(letters) <= 4:
            return letters
    return set()


def score_logicvista(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    gold = letter_set(sample.answer or "", compat)
    predicted = letter_set(out, compat)
    choices: dict[str, str] = {}
    for letter, text in _LV_CHOICE.findall(sample.question or ""):
        choices[letter] = text.strip()
    texts = [choices[k] for k in sorted(choices)] or list(meta(sample, "options") or [])
    single = None
    if texts:
        single = answer_line_letter(out, "ABCDEFGH", compat)
        if single is None:
            letters = [chr(ord("A") + i) for i in range(min(len(texts), 8))]
            index2ans = {letter: str(text) for letter, text in zip(letters, texts, strict=False)}
            single = mmmu_fallback(out, letters, index2ans)
        if single:
            predicted.add(single)
    correct = predicted == gold and (compat or bool(gold))
    extracted = ", ".join(sorted(predicted)) if predicted else single
    index = ord(next(iter(predicted))) - ord("A") if len(predicted) == 1 else None
    details = {
        "extracted_output": extracted,
        "predicted_index": index,
        "is_correct": correct,
        "pred_answer": extracted,
    }
    return ScoreDetails(1.0 if correct else 0.0, or_none(extracted), details)
