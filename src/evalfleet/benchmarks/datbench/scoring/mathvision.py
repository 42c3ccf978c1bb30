r"""MathVision (``mathvision``): lmms-eval's MathVision answer matching.

Upstream: the gold letter is metadata ``correct_choice_letter`` or the answer; with options
(``options_struct`` texts, else ``options``) the gold option text is the option at that letter.
The raw output is reduced to an answer: a trailing `` C.`` / `` (C).`` or a leading ``C\n``
style letter; a number after the last ``is ``; without ``\boxed{`` the text after the last
"the (final|correct) answer is" / "the answer should be" (first line, first sentence); with
several boxes the last one. ``find_math_answer`` then lower-cases it, takes the greedy
``\boxed{...}`` content, the part after the last ``=`` and ``\approx``, and applies the MATH
``_strip_string`` normalisation. Correct when it equals the gold letter or the gold option text:
equal strings, equal tuples after evaluating their items, or equal values rounded to 2 decimals,
where a value is ``eval(str(latex2sympy(text)))``.

Compat mode evaluates that string with no names in scope, so a value is only found when sympy
prints plain arithmetic (``1/2``, ``0.5``); upstream's module namespace holds no maths names
either, so ``sqrt(2)`` or ``pi`` fail there too (they raise ``NameError``).

Default mode changes:

- X1. Values are computed by sympy itself (``expr.evalf()``), never by Python's ``eval``:
  ``2\sqrt{2}`` equals ``\sqrt{8}`` and ``\pi`` has a value.
"""

from __future__ import annotations

import re
import sys
import types
import typing
import warnings
from typing import Any

from .base import ScoreDetails, ScorerInput, meta

_FLAGS = ("the final answer is", "the answer is", "the correct answer is", "the answer should be")
_BOXED_GREEDY = re.compile(r"\\+boxed\{(.*)\}", flags=re.S)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _latex2sympy() -> Any:
    """latex2sympy2's function. The ANTLR runtime it pins (4.7.2) imports `TextIO` from
    `typing.io`, deprecated since Python 3.8 and gone in 3.13: where it is gone, a module of that
    name lends `typing.TextIO` for the import and is taken back after it."""
    lent = "typing.io" not in sys.modules and sys.version_info >= (3, 13)
    if lent:
        module = sys.modules["typing.io"] = types.ModuleType("typing.io")
        module.TextIO = typing.TextIO  # type: ignore[attr-defined]
    try:
        with warnings.catch_warnings():  # before 3.13, typing.io warns that it is deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            from latex2sympy2 import latex2sympy
    finally:
        if lent:
            del sys.modules["typing.io"]
    return latex2sympy


def _value(text: str, compat: bool) -> Any:
    expr = _latex2sympy()(text)
    if compat:
        return eval(str(expr), {"__builtins__": {}}, {})  # noqa: S307 - upstream evaluates it
    return float(expr.evalf())


def _eval_tuple(text: str, compat: bool) -> str:
    items = text[1:-1].split(",")
    try:
        if len(items) > 1 and ((text[0], text[-1]) in (("(", ")"), ("[", "]"))):
            values = [
                sub if "infty" in sub or sub in ("a", "-a") else str(round(_value(sub, compat), 2))
                for sub in items
            ]
            return text[0] + ",".join(values) + text[-1]
    except Exception:  # latex2sympy and eval raise many types; upstream keeps the text
        return text
    return text


def is_equal(first: str, second: str, compat: bool) -> bool:
    first, second = first.lower(), second.lower()
    if first.replace(" ", "") == "" or second.replace(" ", "") == "":
        return False
    if first.strip() == second.strip():
        return True
    first, second = _eval_tuple(first, compat), _eval_tuple(second, compat)
    if first == second:
        return True
    try:
        return round(_value(first, compat), 2) == round(_value(second, compat), 2)
    except Exception:  # any parse or evaluation failure means "not equal", as upstream
        return False


def _fix_sqrt(text: str) -> str:
    if "\\sqrt" not in text:
        return text
    pieces = text.split("\\sqrt")
    out = pieces[0]
    for piece in pieces[1:]:
        if piece and piece[0] != "{":
            out += "\\sqrt{" + piece[0] + "}" + piece[1:]
        else:
            out += "\\sqrt" + piece
    return out


def _fix_fracs(text: str) -> str:
    pieces = text.split("\\frac")
    out = pieces[0]
    for piece in pieces[1:]:
        out += "\\frac"
        if piece and piece[0] == "{":
            out += piece
            continue
        if len(piece) < 2:
            return text
        a, b, rest = piece[0], piece[1], piece[2:]
        out += "{" + a + "}{" + b + "}" + rest if b != "{" else "{" + a + "}" + b + rest
    return out


def _fix_a_slash_b(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        return text
    return "\\frac{" + str(a) + "}{" + str(b) + "}" if text == f"{a}/{b}" else text


def strip_string(text: str) -> str:
    """The MATH answer normalisation as MathVision applies it."""
    for old, new in (
        ("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"),
        ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", ""),
        ("$", ""),
    ):  # fmt: skip
        text = text.replace(old, new)
    text = text.split("\\text{ ")[0]
    text = text.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    if len(text.split("=")) == 2:
        text = text.split("=")[-1]
    if len(text.split("\\approx")) == 2:
        text = text.split("\\approx")[-1]
    if "sqrt" in text:
        text = _fix_sqrt(text)
    text = text.replace(" ", "")
    if "sqrt" in text:
        text = _fix_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_a_slash_b(text)


def find_math_answer(text: str) -> str:
    text = text.lower().replace("{}", "")
    matches = _BOXED_GREEDY.findall(text)
    answer = matches[-1] if matches else text
    close, open_ = answer.find("}"), answer.find("{")
    if close != -1 and (open_ == -1 or close < open_):
        answer = answer.split("}")[0]
    answer = answer.split("=")[-1].split("\\approx")[-1]
    for old, new in (
        (" ", ""), ("\\,", ""), ("∞", "\\infty"), ("+\\infty", "\\infty"), ("\\\\", "\\"),
        ("\n", ""), ("\\text", ""), ("\\mbox", ""), ("bmatrix", "pmatrix"), ("\\left", ""),
        ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("{m}^3", ""), ("m^3", ""),
        ("{units}", ""), ("units", ""), ("{km}", ""), ("km", ""),
    ):  # fmt: skip
        answer = answer.replace(old, new)
    return strip_string(answer)


def reduce_answer(output: str) -> str:
    """The model answer MathVision compares (see the module docstring)."""
    answer = output.strip()
    for c in "ABCDE":
        if (
            answer.endswith(f" {c}.")
            or answer.endswith(f" ({c}).")
            or answer.startswith(f"{c}\n")
            or answer.startswith(f"({c})\n")
            or answer.startswith(f"({c}) {c}\n")
        ):
            answer = c
    tail = answer.split("is ")[-1].rstrip(".")
    if _is_number(tail):
        answer = tail
    if "\\boxed{" not in answer:
        for flag in _FLAGS:
            for variant in (flag, flag.replace("the", "The")):
                before = answer
                answer = answer.split(variant)[-1].strip()
                if variant in before:
                    answer = answer.split("\n")[0].split(". ")[0]
    elif answer.count("\\\\boxed{") > 1:
        answer = "\\\\boxed{" + answer.split("\\\\boxed{")[-1]
    elif answer.count("\\boxed{") > 1:
        answer = "\\boxed{" + answer.split("\\boxed{")[-1]
    answer = find_math_answer(answer)
    for letter in "abcde":
        answer = answer.replace(f"({letter})", letter).replace("{" + letter + "}", letter)
    return answer.rstrip(".").lstrip(":").strip()


def _option_texts(sample: ScorerInput) -> list[str]:
    struct = meta(sample, "options_struct")
    if struct:
        return [str(pair.get("text", "")) if isinstance(pair, dict) else "" for pair in struct]
    texts = []
    for index, option in enumerate(meta(sample, "options") or []):
        text = str(option).strip()
        texts.append(text if text else chr(ord("A") + index))
    return texts


def score_mathvision(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    options = _option_texts(sample)
    gold = str(meta(sample, "correct_choice_letter") or sample.answer or "").strip()
    gold_value = ""
    if options and len(gold) == 1:
        index = ord(gold) - ord("A")
        gold_value = options[index] if 0 <= index < len(options) else ""
    prediction = reduce_answer(str(out))
    correct = is_equal(gold, prediction, compat) or is_equal(gold_value, prediction, compat)
    details = {
        "pred_answer": out,
        "normalized_prediction": str(out).strip(),
        "normalized_target": gold,
        "reduced_prediction": prediction,
    }
    return ScoreDetails(1.0 if correct else 0.0, prediction or None, details)
