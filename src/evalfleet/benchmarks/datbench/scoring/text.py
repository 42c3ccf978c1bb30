"""String primitives shared by the DatBench scorers: Levenshtein distance and the two ANLS
variants upstream uses.

- Raw ANLS (DocVQA and OCR-VQA since upstream 010e3e7): strip, lower-case and collapse
  whitespace; similarity ``1 - Lev/max(len)``; both empty gives 1, exactly one empty gives 0;
  no threshold.
- Package ANLS (the ``anls`` PyPI package upstream calls for InfoVQA): the same normalisation,
  ``NL = Lev/max(len of the upper-cased strings)``, a gold counts ``1 - NL`` only when
  ``NL < threshold`` (strict), the best gold wins. Upstream's in-module fallback (``NL > 0.5``
  gives 0) only runs when the package is missing, so it is not reproduced.

These are the same in both modes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence


def levenshtein(first: Sequence[Hashable], second: Sequence[Hashable]) -> int:
    """Plain Levenshtein distance (insert, delete, substitute cost 1) of strings or token lists."""
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:  # pragma: no cover - rapidfuzz is a dependency
        return _levenshtein_python(first, second)
    return Levenshtein.distance(first, second)


def _levenshtein_python(first: Sequence[Hashable], second: Sequence[Hashable]) -> int:
    if len(first) < len(second):
        first, second = second, first
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, start=1):
        current = [i]
        for j, b in enumerate(second, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def similarity(first: str, second: str) -> float:
    """``1 - Lev/max(len)``; 0.0 when both are empty (OCRBench's convention)."""
    longest = max(len(first), len(second))
    if longest == 0:
        return 0.0
    return 1.0 - levenshtein(first, second) / longest


def normalise_ws(text: str | None) -> str:
    """Strip, lower-case and collapse whitespace."""
    if not text:
        return ""
    return " ".join(text.strip().lower().split())


def anls_raw(prediction: str, gold: str) -> float:
    """Raw ANLS of two already-normalised strings, without a threshold."""
    if not prediction and not gold:
        return 1.0
    if not prediction or not gold:
        return 0.0
    return 1.0 - levenshtein(prediction, gold) / max(len(prediction), len(gold))


def anls_package(prediction: str, golds: Iterable[str], threshold: float = 0.5) -> float:
    """The ``anls`` package's score: best gold, ``1 - NL`` only when ``NL < threshold``."""
    pred = normalise_ws(prediction)
    best = 0.0
    for gold in golds:
        norm = normalise_ws(gold)
        longest = max(len(pred.upper()), len(norm.upper()))  # as the package measures
        distance = 0.0 if longest == 0 else levenshtein(pred, norm) / longest
        value = 1.0 - distance if distance < threshold else 0.0
        best = max(best, value)
    return best
