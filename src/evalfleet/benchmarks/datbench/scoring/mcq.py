r"""Multiple-choice letter reading shared by the MCQ scorers (ai2d, mmbench, mmmu, mmmupro,
logicvista).

``mmmu_fallback`` is the MMMU parser every one of them ends with: strip ``, . ! ? ; : '`` from
the ends, pad with spaces, then collect candidates in stages: ``(X)``; else ``"X "``; else
``"X."``; else, for responses of more than 5 tokens, options whose text occurs in the
response. No candidate gives ``None`` (upstream never guesses); several give the one that
occurs last (``(X)``, the option text, or ``" X "``, whose -1 ties go to the first listed).
It is the same in both modes.

``letter_cascade`` is the mmbench/mmmupro reader: ``e = extract_final_answer(out)``; a lone
valid letter; else the first standalone choice letter in ``e``; else ``mmmu_fallback`` on the
raw output. Upstream upper-cases ``e`` first and searches ``\b([A|B|C|D])\b`` (the ``|`` is a
literal member of the character class).

Default mode changes:

- D1. The standalone-letter search runs on ``e`` in its original case and only upper-case
  letters count, so the article "a" in "It is a cat" is not choice A. A lone letter is still
  read in either case, also when bracketed or followed by ``.``/``)`` (``c``, ``(c)``, ``c.``),
  and so is a bracketed letter inside a text (``Option (c)``) when no upper-case one is found.
- D2. The character class holds only the choice letters (no stray ``|``).
- D3. ``answer_line_letter`` (the "last ``Answer: X`` line" rule of mmmu and logicvista) takes
  an upper-case letter, or a lower-case one only when it is all the line says: upstream's
  case-insensitive match reads ``Answer: a truck`` as A.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from .extract import extract_final_answer

_STRIP_CHARS = (",", ".", "!", "?", ";", ":", "'")
_LONE_LETTER = re.compile(r"[\(\[]?([A-Za-z])[\)\]]?[.):]?")
_BRACKETED_LETTER = re.compile(r"[\(\[]([A-Za-z])[\)\]]")


def mmmu_fallback(
    response: object, all_choices: Sequence[str], index2ans: Mapping[str, object]
) -> str | None:
    """MMMU's ``parse_multi_choice_response`` without the random guess."""
    if not isinstance(response, str):
        response = ""
    for char in _STRIP_CHARS:
        response = response.strip(char)
    response = f" {response} "
    candidates = [c for c in all_choices if f"({c})" in response]
    bracketed = bool(candidates)
    by_content = False
    if not candidates:
        candidates = [c for c in all_choices if f"{c} " in response]
    if not candidates:
        candidates = [c for c in all_choices if f"{c}." in response]
    if not candidates and len(response.split()) > 5:
        lowered = response.lower()
        candidates = [key for key, text in index2ans.items() if str(text).lower() in lowered]
        by_content = bool(candidates)
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    if by_content:
        lowered = response.lower()
        positions = [lowered.rfind(str(index2ans[c]).lower()) for c in candidates]
    elif bracketed:
        positions = [response.rfind(f"({c})") for c in candidates]
    else:
        positions = [response.rfind(f" {c} ") for c in candidates]
    return candidates[positions.index(max(positions))]


def choices_from_options(options: object, parse_strings: bool) -> tuple[list[str], dict]:
    """Letters A, B, ... and their texts from an options list.

    A string value is parsed as a Python list literal when ``parse_strings`` (mmmupro), else it is
    iterated character by character (what mmbench upstream does with one).
    """
    if isinstance(options, str) and parse_strings:
        try:
            options = ast.literal_eval(options)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            options = []
    if not isinstance(options, (list, tuple, str)):
        options = []
    letters = [chr(ord("A") + i) for i in range(len(options))]
    return letters, {letter: str(option) for letter, option in zip(letters, options, strict=True)}


def letter_cascade(
    out: str, all_choices: Sequence[str], index2ans: Mapping[str, object], compat: bool
) -> str | None:
    """The mmbench/mmmupro letter reader (see the module docstring)."""
    extracted = extract_final_answer(str(out), compat).strip()
    if not all_choices:
        return None
    if compat:
        upper = extracted.upper()
        if len(upper) == 1 and upper in all_choices:
            return upper
        members = "|".join(re.escape(c) for c in all_choices)
        match = re.search(rf"\b([{members}])\b", upper)
        if match:
            return match.group(1)
    else:
        lone = lone_letter(extracted)
        if lone in all_choices:
            return lone
        alternatives = "|".join(re.escape(c) for c in all_choices)
        match = re.search(rf"\b({alternatives})\b", extracted)
        if match:
            return match.group(1)
        bracketed = bracketed_letters(extracted, all_choices)
        if bracketed:
            return bracketed[0]
    return mmmu_fallback(out, all_choices, index2ans)


def lone_letter(text: str) -> str | None:
    """The letter, upper-cased, when ``text`` is one letter, maybe bracketed or dotted."""
    match = _LONE_LETTER.fullmatch(text.strip())
    return match.group(1).upper() if match else None


def bracketed_letters(text: str, letters: Sequence[str] | str) -> list[str]:
    """Every ``(x)`` / ``[x]`` letter of ``text``, upper-cased, that is one of ``letters``."""
    found = (match.upper() for match in _BRACKETED_LETTER.findall(text))
    return [letter for letter in found if letter in letters]


def answer_line_letter(out: str, letters: str, compat: bool) -> str | None:
    """The letter of the last line ``Answer: X`` / ``Final Answer: X`` (X in ``letters``)."""
    lines = [line.strip() for line in str(out).splitlines() if line.strip()]
    upstream = re.compile(rf"^(?:final\s+answer|answer)\s*:\s*([{letters}])\b", re.IGNORECASE)
    label = re.compile(r"^(?:final\s+answer|answer)\s*:\s*", re.IGNORECASE)
    for line in reversed(lines):
        if compat:
            match = upstream.match(line)
            if match:
                return match.group(1).upper()
            continue
        head = label.match(line)
        if not head:
            continue
        rest = line[head.end() :]
        lone = lone_letter(rest)
        if lone and lone in letters:
            return lone
        match = re.match(rf"([{letters}])\b", rest)
        if match:
            return match.group(1)
    return None
