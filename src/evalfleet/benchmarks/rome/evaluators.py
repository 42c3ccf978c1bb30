"""ROME's rule evaluators, each a function of the extracted answer and the item's
`evaluator_kwargs`, returning a score (0/1, or a float for location credit) and the answer as
upstream writes it back (choice letters replace the text).

``upstream`` reproduces ROME-evaluation (interval and multi-interval as FlagEvalMM defines
them) exactly; ``fixed`` changes, beyond the extraction fixes of `extract`:

- F4. Numbers: thousands separators and exponents are read (``1,000`` is 1000, ``1e3`` is
  1000), the tolerance is inclusive (``<=``), and a float target of 0.0 gets the integer
  tolerance 1e-3 instead of none (upstream can never match it).

Everything else is kept on purpose in both modes: a single label compares only the first letter
named; key items are substrings without word boundaries; an ordered list is a character
subsequence; the last number of the answer is the one compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalfleet.benchmarks.rome.extract import choice_letters

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_NUMBER_FIXED = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::(\d{2}))?\b")


@dataclass
class Judged:
    """An evaluator's verdict: the score and the answer as upstream records it (plus the
    side-effect fields FlagEvalMM's interval evaluators add)."""

    score: float
    answer: str
    extra: dict[str, int] = field(default_factory=dict)


def key_items_matching(answer: str, mode: str, key_items: list, remove_space: bool = False):
    def process(text: str) -> str:
        return (text.replace(" ", "") if remove_space else text).lower()

    pred = process(answer)
    if not key_items:
        raise ValueError("key_items is empty")
    if isinstance(key_items[0], list):
        ok = all(any(process(v) in pred for v in variants) for variants in key_items)
    else:
        ok = any(process(v) in pred for v in key_items)
    return Judged(int(ok), answer)


def choices_matching(answer: str, mode: str, label: str):
    letters = choice_letters(answer, mode)
    label = label.upper()
    if len(label) > 1:
        label = "".join(sorted(label))
        letters = "".join(sorted(set(letters)))
    elif len(letters) > 1:
        letters = letters[0]
    return Judged(int(label == letters), letters)


def ordered_list_matching(answer: str, mode: str, order: list | str):
    if isinstance(order, list):
        order = ",".join(order)
    target = order.lower().replace(" ", "")
    pred = answer.lower()
    i = 0
    for char in pred:
        if i < len(target) and char == target[i]:
            i += 1
    return Judged(int(i == len(target)), answer)


def number_matching(answer: str, mode: str, value_to_match: int | float):
    if mode == "upstream":
        found = _NUMBER.findall(answer)
        if not found:
            return Judged(0, answer)
        value = float(found[-1])
        tolerance = abs(value_to_match) * 0.1 if isinstance(value_to_match, float) else 1e-3
        return Judged(int(abs(value - value_to_match) < tolerance), answer)
    found = _NUMBER_FIXED.findall(answer)
    if not found:
        return Judged(0, answer)
    value = float(found[-1].replace(",", ""))
    tolerance = 1e-3
    if isinstance(value_to_match, float) and value_to_match != 0.0:
        tolerance = abs(value_to_match) * 0.1
    return Judged(int(abs(value - value_to_match) <= tolerance), answer)


def location_matching(
    answer: str,
    mode: str,
    location_fine_grained: list[str],
    location_coarse_grained: list[str] | None = None,
    fine_grained_score: float = 1.0,
    coarse_grained_score: float = 0.5,
):
    pred = answer.lower()
    if any(c.lower() in pred for c in location_fine_grained):
        return Judged(fine_grained_score, answer)
    if any(c.lower() in pred for c in location_coarse_grained or []):
        return Judged(coarse_grained_score, answer)
    return Judged(0, answer)


def _seconds(parts: list[str]) -> int:
    scales = (3600, 60, 1)
    return sum(scales[i] * int(p) for i, p in enumerate(parts) if p)


def _in_interval(answer: str, interval: list, units: list[str], extra: dict[str, int]) -> int:
    if isinstance(interval[0], str):
        left, right = _seconds(interval[0].split(":")), _seconds(interval[1].split(":"))
        found = _TIME.findall(answer)
        if not found:
            return 0
        value: float = _seconds(list(found[0]))
    else:
        left, right = interval[0], interval[1]
        match = _NUMBER.search(answer)
        if not match:
            return 0
        value = float(match.group(0))
    if value < left or value > right:
        return 0
    extra["number_correct"] = 1
    if len(units) == 0:
        return 1
    for unit in units:
        if unit in answer:
            extra["unit_correct"] = 1
            return 1
    return 0


def interval_matching(answer: str, mode: str, interval: list, units: list[str]):
    extra: dict[str, int] = {}
    return Judged(_in_interval(answer, interval, units, extra), answer, extra)


def multi_interval_matching(answer: str, mode: str, intervals: list, units: list):
    extra: dict[str, int] = {}
    for interval, unit in zip(intervals, units, strict=False):
        if _in_interval(answer, interval, unit, extra) == 1:
            return Judged(1, answer, extra)
    return Judged(0, answer, extra)


EVALUATORS: dict[str, Callable[..., Judged]] = {
    "key_items_matching": key_items_matching,
    "choices_matching": choices_matching,
    "ordered_list_matching": ordered_list_matching,
    "number_matching": number_matching,
    "location_matching": location_matching,
    "interval_matching": interval_matching,
    "multi_interval_matching": multi_interval_matching,
}


def evaluate(evaluator: str, answer: str, mode: str, kwargs: dict[str, Any]) -> Judged:
    """Score an extracted answer with the item's evaluator and arguments."""
    return EVALUATORS[evaluator](answer, mode, **kwargs)
