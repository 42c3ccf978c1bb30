"""OmniBench answer parsers: evalscope HEAD (the default) and the original scripts (compat).

Both return an option letter or None; neither ever guesses. The rules are in reference §3.2
(evalscope `parse_answers`, single answer, at fde259d2) and §3.3 (OmniBench
`inference/answer_parsing.py`, MMMU style).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

LETTERS = ("A", "B", "C", "D")
EVALSCOPE_VERSION = "evalscope@fde259d2"
ORIGINAL_VERSION = "omnibench-inference@21a7f75"

_MARKER = re.compile(r"ANSWER\s*:\s*\**\s*", re.IGNORECASE)
_BRACKETED_LABEL = re.compile(r"[\(\[（【]\s*([A-Za-z\d](?:\s*[,，]\s*[A-Za-z\d])*)\s*[\)\]）】]")
_PLAIN_LABEL = re.compile(r"([A-Za-z\d][A-Za-z\d ,]*)")
_LABEL_TOKEN = re.compile(r"[A-Za-z\d]+")
_STRIP_CHARS = (",", ".", "!", "?", ";", ":", "'")


# --- evalscope HEAD ------------------------------------------------------------------------


def parse_answer_evalscope(completion: str, letters: Collection[str] = LETTERS) -> str | None:
    """The letter evalscope HEAD reads from a completion, or None.

    A label found after an ANSWER marker is final: if it is not exactly one valid letter
    (e.g. "AB" or "A, B") there is no answer, and the upper-case fallback is not tried.
    """
    label = _last_marked_label(completion, letters)
    if label is None:
        return _last_upper_case(completion, letters)
    label = label.strip().rstrip(".")
    return label if label in letters else None


def _last_marked_label(text: str, letters: Collection[str]) -> str | None:
    """The label of the last ANSWER marker that is followed by one; earlier markers are
    only consulted when later ones carry no label (an echoed "[LETTER]", prose)."""
    for marker in reversed(list(_MARKER.finditer(text))):
        tail = text[marker.end() :]
        for pattern in (_BRACKETED_LABEL, _PLAIN_LABEL):
            match = pattern.match(tail)
            if match is not None and (prefix := _letter_prefix(match.group(1), letters)):
                return prefix
    return None


def _letter_prefix(capture: str, letters: Collection[str]) -> str:
    """The leading run of tokens made only of valid letters ("B" of "B because A is wrong")."""
    end = 0
    for token in _LABEL_TOKEN.finditer(capture):
        if not set(token.group(0)) <= set(letters):
            break
        end = token.end()
    return capture[:end]


def _last_upper_case(text: str, letters: Collection[str]) -> str | None:
    """The last upper-case character of the text if it is a valid letter, else None."""
    for char in reversed(text):
        if char.isupper():
            return char if char in letters else None
    return None


# --- original scripts (compat) -------------------------------------------------------------


def parse_multi_choice_original(
    response: str,
    options: Sequence[str],
    *,
    default: str | None = None,
    do_strip: bool = False,
) -> str | None:
    """OmniBench `parse_multi_choice_response` with a fixed `default` instead of a random pick.

    Stages, each tried only if the previous found nothing: "(X)"; "X " anywhere; "X."; if the
    padded response has more than five words, options whose text occurs in it (any case).
    Several candidates: the one whose last occurrence is right-most (ties: the first letter;
    after the "X " and "X." stages the position is that of " X ", as upstream).
    `do_strip=True` strips `,.!?;:'` from both ends first (upstream 5744aa1).
    """
    letters = [chr(ord("A") + i) for i in range(len(options))]
    if do_strip:
        for char in _STRIP_CHARS:
            response = response.strip(char)
    padded = f" {response} "
    lowered = padded.lower()

    bracketed = [x for x in letters if f"({x})" in padded]
    if bracketed:
        return _right_most(bracketed, [padded.rfind(f"({x})") for x in bracketed])
    for pattern in ("{} ", "{}."):
        found = [x for x in letters if pattern.format(x) in padded]
        if found:
            return _right_most(found, [padded.rfind(f" {x} ") for x in found])
    if len(padded.split()) > 5:
        texts = {x: text.lower() for x, text in zip(letters, options, strict=True)}
        found = [x for x in letters if texts[x] in lowered]
        if found:
            return _right_most(found, [lowered.rfind(texts[x]) for x in found])
    return default


def _right_most(candidates: list[str], positions: list[int]) -> str:
    """The candidate at the largest position; the first such on ties (numpy argmax)."""
    best = max(range(len(candidates)), key=positions.__getitem__)
    return candidates[best]
