r"""Counting scorers: countbench and tallyqa. Both read ``extract_final_answer(out)`` and score
1.0 when the number they parse equals the integer answer.

Upstream:

- countbench: the last ``\b\d+\b``; else the first of the words zero..ten (checked in that
  order) occurring anywhere in the lower-cased text, *as a substring*: "none" and "someone"
  read 1, "seventeen" reads 7. The gold is ``int(answer)``; a non-integer gold never matches.
- tallyqa: a compound "twenty-one"; then answer phrases ("so the answer is four", "there are
  2 ...", "final answer: 3"); then sentence patterns; then the last ``\b\d+\b`` of at most 9
  digits; then the last whole word in the 0-20, tens, hundred, thousand word map. A gold that is
  not all digits never matches.

Default mode changes:

- N1. countbench matches number words as whole words only, reads zero..twenty, and takes the
  word that occurs last (as it takes the last digit group): "None" reads nothing, "seventeen"
  reads 17.

tallyqa is the same in both modes.
"""

from __future__ import annotations

import re

from .base import ScoreDetails, ScorerInput, meta
from .extract import extract_final_answer

_UPSTREAM_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
)  # fmt: skip
WORD_VALUES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20,
}  # fmt: skip
_TALLY_WORDS = WORD_VALUES | {
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100, "thousand": 1000,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}  # fmt: skip
_ONES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "eight": 8, "nine": 9, "zero": 0}  # fmt: skip
_COMPOUND = re.compile(
    r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[\-\s]+"
    r"(one|two|three|four|five|six|seven|eight|nine|zero)\b"
)
_ANSWER_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"(?:therefore|thus|hence|so),?\s*(?:the\s+)?(?:number\s+of\s+\w+\s+is\s+|answer\s+is\s+)(\w+)",
        r"(?:the\s+)?(?:total\s+)?(?:number\s+of\s+\w+\s+is\s+|count\s+is\s+)(\w+)",
        r"(?:i\s+count\s+|there\s+are\s+)(\w+)",
        r"(?:the\s+)?answer\s+is\s+(\w+)",
        r"(?:final\s+answer:?\s*)(\w+)",
        r"(?:result:?\s*)(\w+)",
        r"there\s+are\s+(\w+)\s+\w+\s+in\s+the\s+image",
        r"there\s+are\s+(\w+)\s+\w+",
        r"i\s+(?:can\s+)?see\s+(\w+)\s+\w+",
        r"contains\s+(\w+)\s+\w+",
        r"shows\s+(\w+)\s+\w+",
    )
)
_WORD_PATTERN = re.compile(r"\b(" + "|".join(WORD_VALUES) + r")\b")


def countbench_number(text: str, compat: bool) -> int | None:
    if not text:
        return None
    digits = re.findall(r"\b\d+\b", text)
    if digits:
        return int(digits[-1])
    lowered = text.lower()
    if compat:
        for value, word in enumerate(_UPSTREAM_WORDS):
            if word in lowered:
                return value
        return None
    words = _WORD_PATTERN.findall(lowered)
    return WORD_VALUES[words[-1]] if words else None


def score_countbench(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    extracted = extract_final_answer(out, compat)
    parsed = countbench_number(extracted, compat)
    gold: int | str | None
    try:
        gold = int(sample.answer.strip()) if sample.answer else None
    except ValueError:
        gold = sample.answer
    correct = parsed is not None and parsed == gold
    return ScoreDetails(
        1.0 if correct else 0.0,
        None if parsed is None else str(parsed),
        {"ground_truth": gold, "parsed_answer": parsed},
    )


def tallyqa_number(text: str) -> int | None:
    if not text:
        return None
    text = str(text).strip()
    lowered = text.lower()
    compounds = list(_COMPOUND.finditer(lowered))
    if compounds:
        last = compounds[-1]
        return _TENS[last.group(1)] + _ONES[last.group(2)]
    for pattern in _ANSWER_PATTERNS:
        matches = pattern.findall(lowered)
        if matches:
            candidate = matches[-1]
            if candidate.isdigit():
                return int(candidate)
            if candidate in _TALLY_WORDS:
                return _TALLY_WORDS[candidate]
    digits = re.findall(r"\b\d+\b", text)
    if digits and len(digits[-1]) <= 9:
        return int(digits[-1])
    words = [re.sub(r"[^\w]", "", word) for word in lowered.split()]
    numbers = [_TALLY_WORDS[word] for word in words if word in _TALLY_WORDS]
    return numbers[-1] if numbers else None


def score_tallyqa(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    extracted = extract_final_answer(out, compat)
    parsed = tallyqa_number(extracted)
    gold = sample.answer or None
    gold_int = int(gold.strip()) if gold and gold.strip().isdigit() else None
    correct = parsed is not None and gold_int is not None and parsed == gold_int
    return ScoreDetails(
        1.0 if correct else 0.0,
        None if parsed is None else str(parsed),
        {
            "ground_truth": gold,
            "parsed_answer": parsed,
            "extracted_output": extracted,
            "is_simple": meta(sample, "is_simple"),
        },
    )
