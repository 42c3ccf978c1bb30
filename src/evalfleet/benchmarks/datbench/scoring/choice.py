r"""Multiple-choice scorers: ai2d, mmbench, mmmu, mmmupro, realworldqa, mme-realworld-*.

Upstream, per dataset:

- ai2d: letter from ``extract_final_answer`` (a lone A-D, else the first ``\b[ABCD]\b`` of the
  upper-cased extraction, else the MMMU fallback with no choices, which finds nothing); the
  0-based index ``ord(letter) - 65`` is compared with the row's *string* answer, so every row
  scores 0.
- mmbench / mmmupro: ``mcq.letter_cascade`` with choices from metadata ``all_choices`` and
  ``index2ans``, or built from ``options`` (mmmupro parses a string options value as a Python
  list; mmbench iterates its characters); case-insensitive comparison with the answer.
- mmmu: the last ``Answer: X`` line (X in A-E), else the MMMU fallback with metadata
  ``all_choices``/``index2ans`` (empty when the metadata has only ``options``); no
  ``extract_final_answer``, so ``\boxed{B}`` reads nothing; case-sensitive comparison.
- realworldqa: ``extract_final_answer``, number words zero-ten to digits; when the bare question
  lists ``A. ...`` choices (else metadata ``options``): a lone letter, else a letter from the last
  ``Answer:`` line and then from the last line of at most 10 tokens (``\b[A-Ea-e]\b``, then a
  bracketed form), else token overlap >= 0.8 with a choice text; equality after lower-casing and
  stripping a trailing ``.``.
- mme-realworld: on the raw output, delete phrases such as "The answer is" (case-sensitive);
  the first ``\boxed{X}`` or pipe box; else the **first** standalone ``[A-Ea-e]``; else for
  texts of at most 10 words (or holding an upper-case A-E) the choice ``(X) ...`` containing the
  text; case-insensitive comparison.

Default mode changes (compat keeps the above, quirks included):

- A1. ai2d compares as strings: the gold may be the 0-based index (``"1"``), the letter
  (``"B"``) or the option text; choices come from the metadata when it has them (else A-D).
  Letters are read with the mcq D1 rules.
- A2. mmbench, mmmupro: the mcq D1/D2 letter rules; mmbench parses a string ``options`` value as
  a list, as mmmupro does.
- A3. mmmu: after the answer line (mcq D3), the mcq letter cascade (so ``\boxed{B}``,
  ``ANSWER: (C)`` and a lone letter are read); choices fall back to ``options`` and then A-E;
  the comparison ignores case.
- A4. realworldqa: a letter found in the answer line or last line must be upper-case, stand
  alone (``a``, ``(b)``, ``c.``) or be bracketed (``(c) three``); upstream reads the article in
  ``Answer: a truck`` as A.
- A5. mme-realworld: a standalone letter must be upper-case unless it is the whole text or
  bracketed; the letter after the last ``Answer:`` marker beats the first standalone letter; an
  empty text matches no option and is never correct.
"""

from __future__ import annotations

import re
import string

from .base import ScoreDetails, ScorerInput, meta, or_none
from .extract import extract_final_answer
from .mcq import (
    answer_line_letter,
    bracketed_letters,
    choices_from_options,
    letter_cascade,
    lone_letter,
    mmmu_fallback,
)


def _choices(sample: ScorerInput, parse_strings: bool) -> tuple[list[str], dict]:
    all_choices = meta(sample, "all_choices") or []
    index2ans = meta(sample, "index2ans") or {}
    if not all_choices or not index2ans:
        all_choices, index2ans = choices_from_options(meta(sample, "options"), parse_strings)
    return list(all_choices), dict(index2ans)


def _letters(all_choices: list[str], default: str) -> str:
    letters = "".join(c for c in all_choices if len(c) == 1 and c.isalpha() and c.isupper())
    return letters or default


# --------------------------------------------------------------------------- ai2d


def score_ai2d(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    gold = sample.answer or None
    if compat:
        extracted = extract_final_answer(str(out), True).strip().upper()
        letter: str | None
        if len(extracted) == 1 and extracted in "ABCD":
            letter = extracted
        else:
            match = re.search(r"\b([ABCD])\b", extracted)
            letter = match.group(1) if match else mmmu_fallback(out, [], {})
        index = ord(letter) - ord("A") if letter and letter in "ABCD" else None
        correct = False  # upstream: ``index == answer`` compares an int with a str
    else:
        all_choices, index2ans = _choices(sample, parse_strings=True)
        if not all_choices:
            all_choices, index2ans = ["A", "B", "C", "D"], {}
        letter = letter_cascade(out, all_choices, index2ans, compat=False)
        index = ord(letter) - ord("A") if letter else None
        correct = letter is not None and _ai2d_matches(
            (gold or "").strip(), letter, index, index2ans
        )
    return ScoreDetails(
        1.0 if correct else 0.0,
        letter,
        {
            "extracted_output": letter,
            "predicted_index": index,
            "is_correct": correct,
            "pred_answer": letter,
            "ground_truth": gold,
        },
    )


def _ai2d_matches(gold: str, letter: str, index: int | None, index2ans: dict) -> bool:
    if not gold:
        return False
    option = str(index2ans.get(letter, "")).strip().lower()
    return gold == str(index) or gold.upper() == letter or (bool(option) and gold.lower() == option)


# --------------------------------------------------------------------------- mmbench / mmmupro


def score_mmbench(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    all_choices, index2ans = _choices(sample, parse_strings=not compat)
    letter = letter_cascade(out, all_choices, index2ans, compat)
    correct = letter is not None and str(sample.answer).upper() == letter.upper()
    return _mcq_details(letter, correct)


def score_mmmupro(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    all_choices, index2ans = _choices(sample, parse_strings=True)
    letter = letter_cascade(out, all_choices, index2ans, compat)
    correct = letter is not None and str(sample.answer).upper() == letter.upper()
    return _mcq_details(letter, correct)


def _mcq_details(letter: str | None, correct: bool) -> ScoreDetails:
    return ScoreDetails(
        1.0 if correct else 0.0,
        letter,
        {"extracted_output": letter, "pred_answer": letter, "is_correct": correct},
    )


# --------------------------------------------------------------------------- mmmu


def score_mmmu(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    if compat:
        all_choices = list(meta(sample, "all_choices") or [])
        index2ans = dict(meta(sample, "index2ans") or {})
        letter = answer_line_letter(out, "ABCDE", True) or mmmu_fallback(
            out, all_choices, index2ans
        )
        correct = str(sample.answer) == str(letter)
    else:
        all_choices, index2ans = _choices(sample, parse_strings=True)
        if not all_choices:
            all_choices, index2ans = list("ABCDE"), {}
        letter = answer_line_letter(out, _letters(all_choices, "ABCDE"), False)
        if letter is None:
            letter = letter_cascade(out, all_choices, index2ans, compat=False)
        correct = letter is not None and sample.answer.strip().upper() == letter.upper()
    return _mcq_details(letter, correct)


# --------------------------------------------------------------------------- realworldqa

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
_QUESTION_CHOICE = re.compile(r"\s*([A-Ea-e])\s*\.\s*(.+)$")
_THINK = re.compile(r"<think>[\s\S]*?</think>", re.IGNORECASE)
_RWQA_ANSWER_LINE = re.compile(r"(?i)^\s*answer\s*:\s*(.+)$")
_RWQA_WORD = {True: re.compile(r"\b([A-Ea-e])\b"), False: re.compile(r"\b([A-E])\b")}
_RWQA_FORM = {
    True: re.compile(r"(?:^|\s)[\(\[]?([A-Ea-e])[\)\]\.!?,]?(?:\s|$)"),
    False: re.compile(r"(?:^|\s)[\(\[]?([A-E])[\)\]\.!?,]?(?:\s|$)"),
}


def _rwqa_normalise_choice(text: str) -> str:
    text = text.lower().translate(str.maketrans("", "", string.punctuation))
    return re.sub(r"\s+", " ", text).strip()


def _rwqa_tokens(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9\s]", " ", (text or "").lower())).strip()


def _rwqa_letter_in(text: str, compat: bool) -> str | None:
    if not compat:
        lone = lone_letter(text)
        if lone and lone in "ABCDE":
            return lone
    for pattern in (_RWQA_WORD[compat], _RWQA_FORM[compat]):
        match = pattern.search(text)
        if match:
            return match.group(1).upper()
    bracketed = [] if compat else bracketed_letters(text, "ABCDE")
    return bracketed[0] if bracketed else None


def _rwqa_output_letter(out: str, compat: bool) -> str | None:
    lines = [line for line in _THINK.sub("", out).splitlines() if line.strip()]
    for line in reversed(lines):
        match = _RWQA_ANSWER_LINE.match(line.strip())
        if match:
            letter = _rwqa_letter_in(match.group(1).strip(), compat)
            if letter:
                return letter
            break
    for line in reversed(lines):
        if len(line.split()) <= 10:  # the last line of at most 10 tokens
            return _rwqa_letter_in(line.strip(), compat)
    return None


def score_realworldqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    gold = sample.answer or ""
    final = extract_final_answer(out, compat)
    pred = _NUMBER_WORDS.get(final.lower().strip(), final)
    choices: dict[str, str] = {}
    for line in (sample.question or "").splitlines():
        match = _QUESTION_CHOICE.match(line)
        if match:
            choices[match.group(1).lower()] = _rwqa_normalise_choice(match.group(2))
    if not choices:
        options = meta(sample, "options") or []
        if isinstance(options, (list, tuple)):
            choices = {
                chr(ord("a") + i): _rwqa_normalise_choice(str(opt)) for i, opt in enumerate(options)
            }
    if choices:
        upper = final.strip().upper()
        letter = upper if upper in {"A", "B", "C", "D", "E"} else None
        if letter and letter.lower() in choices:
            pred = letter
        else:
            letter = _rwqa_output_letter(out if isinstance(out, str) else "", compat)
            if letter and letter.lower() in choices:
                pred = letter
            else:
                pred = _rwqa_fuzzy(pred, choices) or pred
    pred_norm = (pred or "").lower().strip().rstrip(".")
    correct = pred_norm == str(gold).lower().strip() and pred_norm != ""
    return ScoreDetails(
        1.0 if correct else 0.0, or_none(pred), {"ground_truth": gold, "pred_answer": pred}
    )


def _rwqa_fuzzy(pred: str, choices: dict[str, str]) -> str | None:
    pred_tokens = set(_rwqa_tokens(pred).split())
    if not pred_tokens:
        return None
    best, best_overlap = None, 0.0
    for letter, text in choices.items():
        choice_tokens = set(_rwqa_tokens(text).split())
        if not choice_tokens:
            continue
        overlap = len(choice_tokens & pred_tokens) / len(choice_tokens)
        if overlap > best_overlap:
            best, best_overlap = letter, overlap
    return best.upper() if best is not None and best_overlap >= 0.8 else None


# --------------------------------------------------------------------------- mme-realworld

_MME_PREFIXES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
)
_MME_BOXES = (
    re.compile(r"\\+boxed\{\s*([A-Ea-e])\s*\}"),
    re.compile(r"<\|begin_of_box\|>\s*([A-Ea-e])\s*<\|end_of_box\|>"),
)
_MME_STANDALONE = {
    True: re.compile(r"(?<![A-Za-z0-9])([A-Ea-e])(?![A-Za-z0-9])"),
    False: re.compile(r"(?<![A-Za-z0-9])([A-E])(?![A-Za-z0-9])"),
}
_MME_MARKER = re.compile(r"(?i:\banswer)\s*(?::|is)?\s*[\(\[]?([A-E])(?![A-Za-z0-9])")


def mme_letter(text: object, choices: list, compat: bool) -> str:
    """The MME-RealWorld letter of a raw output ("" when none)."""
    text = text.strip() if isinstance(text, str) else ""
    for prefix in _MME_PREFIXES:
        text = text.replace(prefix, "")
    for pattern in _MME_BOXES:
        match = pattern.search(text)
        if match:
            return match.group(1).upper()
    if not compat:
        lone = lone_letter(text)
        if lone and lone in "ABCDE":
            return lone
        markers = _MME_MARKER.findall(text)
        if markers:
            return markers[-1]
    letters = _MME_STANDALONE[compat].findall(text)
    if not compat and not letters:
        letters = bracketed_letters(text, "ABCDE")
    if letters:
        return letters[0].upper()
    if len(text.split()) > 10 and not re.search("[ABCDE]", text):
        return ""
    if not compat and not text.strip():
        return ""
    for choice in choices:
        choice = str(choice)
        if text.lower() in choice.lower() and len(choice) >= 2 and choice[1] in "ABCDE":
            return choice[1]
    return ""


def score_mme_realworld(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    gold = sample.answer or ""
    choices = meta(sample, "options") or []
    letter = mme_letter(out, list(choices) if isinstance(choices, (list, tuple)) else [], compat)
    correct = letter.upper() == gold.upper() and (compat or letter != "")
    return ScoreDetails(
        1.0 if correct else 0.0,
        or_none(letter),
        {"extracted_letter": letter, "ground_truth": gold},
    )
