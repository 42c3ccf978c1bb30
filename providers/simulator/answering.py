"""The deterministic answering model.

A model named ``sim-<p>[-suffix]`` answers a known prompt correctly with probability ``p``. The
draw is ``sha256(model, sha256(prompt text), seed)``: the same inputs always give the same answer
and a different seed (or model suffix) gives an independent draw. Tests and benchmarks can call
``draw_correct`` to know in advance what the server will answer.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

AnswerFormat = Literal["braces", "answer_letter"]
UNKNOWN_ANSWER = "I do not know. {unknown}"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_ACCURACY_RE = re.compile(r"sim-(\d+(?:\.\d*)?|\.\d+)")
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")
_WRONG_WORDS = (
    "circle",
    "blue",
    "seven",
    "north",
    "triangle",
    "red",
    "left",
    "none",
    "square",
    "green",
)
_STEPS = (
    "Let me work through this step by step.\n"
    "1. Read the question and identify what is asked.\n"
    "2. Collect the relevant details.\n"
    "3. Combine them to get the result.\n",
    "I will reason about this carefully.\n"
    "First, I look at the information given.\n"
    "Then I check each candidate against it.\n",
    "Step by step:\n- extract the facts\n- compute the quantity\n- double-check the count\n",
)


class AnswerKeyError(ValueError):
    """An answer key that cannot be read or parsed (one-line message)."""


def prompt_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_accuracy(model: str) -> float | None:
    """The first number after ``sim-`` in the model name, clamped to [0, 1]; None if absent."""
    match = _ACCURACY_RE.search(model)
    if match is None:
        return None
    return min(1.0, max(0.0, float(match.group(1))))


def is_thinking_model(model: str) -> bool:
    return "think" in model


def estimate_tokens(chars: int) -> int:
    """About four characters per token; never zero for non-empty text."""
    return math.ceil(chars / 4)


@dataclass(frozen=True)
class KeyEntry:
    target: str
    format: AnswerFormat
    choices: tuple[str, ...] | None = None


class AnswerKey:
    """prompt_sha256 -> expected answer, loaded from JSONL."""

    def __init__(self, entries: dict[str, KeyEntry] | None = None) -> None:
        self.entries: dict[str, KeyEntry] = dict(entries or {})

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, sha: str | None) -> KeyEntry | None:
        return None if sha is None else self.entries.get(sha)

    @classmethod
    def load(cls, path: str | Path) -> AnswerKey:
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or str(err)
            raise AnswerKeyError(f"cannot read answer key {path}: {reason}") from None
        entries: dict[str, KeyEntry] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                sha, entry = _parse_line(line)
            except (ValueError, TypeError, KeyError) as err:
                raise AnswerKeyError(f"answer key {path} line {number}: {err}") from None
            entries[sha] = entry
        return cls(entries)


def _parse_line(line: str) -> tuple[str, KeyEntry]:
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    sha = record["prompt_sha256"]
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise ValueError("prompt_sha256 must be 64 lowercase hex digits")
    fmt = record.get("format", "braces")
    if fmt not in ("braces", "answer_letter"):
        raise ValueError(f"format must be 'braces' or 'answer_letter', not {fmt!r}")
    choices = record.get("choices")
    if choices is not None:
        if not isinstance(choices, list):
            raise ValueError("choices must be a list")
        choices = tuple(str(c) for c in choices)
    return sha, KeyEntry(target=str(record["target"]), format=fmt, choices=choices)


@dataclass(frozen=True)
class Answer:
    text: str
    correct: bool | None  # None: the prompt is not in the key
    reasoning_text: str | None
    reasoning_tokens: int


def _digest(model: str, sha: str | None, seed: int | None) -> bytes:
    return hashlib.sha256(f"{model}\n{sha}\n{seed}".encode()).digest()


def _unit(digest: bytes, offset: int) -> float:
    return int.from_bytes(digest[offset : offset + 8], "big") / 2.0**64


def draw_correct(model: str, sha: str | None, seed: int | None, accuracy: float) -> bool:
    """Whether ``model`` answers the prompt with hash ``sha`` correctly (if the key knows it)."""
    return _unit(_digest(model, sha, seed), 0) < accuracy


def wrong_value(entry: KeyEntry, pick: int) -> str:
    """A deterministic plausible wrong answer, never equal to the target."""
    target = entry.target
    if entry.format == "answer_letter":
        count = max(len(entry.choices or ()), 2) if entry.choices else 4
        letters = [c for c in LETTERS[:count] if c != target.strip().upper()]
        return letters[pick % len(letters)]
    if entry.choices:
        others = [c for c in entry.choices if c.strip().lower() != target.strip().lower()]
        if others:
            return others[pick % len(others)]
    numbers = list(_NUMBER_RE.finditer(target))
    if numbers:
        last = numbers[-1]
        return target[: last.start()] + _other_number(last.group(0), pick) + target[last.end() :]
    words = [w for w in _WRONG_WORDS if w != target.strip().lower()]
    return words[pick % len(words)]


def _other_number(text: str, pick: int) -> str:
    delta = 1 + pick % 9
    sign = -1 if (pick >> 4) % 2 else 1
    if "." in text:
        decimals = len(text.split(".")[1])
        step = delta * 10.0**-decimals
        value = float(text) + sign * step
        if value < 0 <= float(text):
            value = float(text) + step
        return f"{value:.{decimals}f}"
    value = int(text) + sign * delta
    if value < 0 <= int(text):  # keep counts non-negative when the target is
        value = int(text) + delta
    return str(value)


def render(entry: KeyEntry, value: str, template: int) -> str:
    steps = _STEPS[template % len(_STEPS)]
    if entry.format == "answer_letter":
        return f"{steps}The best matching option is {value}.\nANSWER: {value}"
    return f"{steps}So the final answer is {{{value}}}"


def reasoning_for(model: str, sha: str | None) -> str:
    return (
        f"The user asks a question (ref {(sha or 'unknown')[:8]}). I should look at every part "
        "of the input, consider the alternatives, and verify the result before answering."
    )


def answer(
    key: AnswerKey,
    model: str,
    sha: str | None,
    seed: int | None,
    *,
    accuracy: float,
    thinking: bool = False,
    reasoning_tokens: int = 0,
) -> Answer:
    """The full (untruncated) answer of ``model`` to the prompt with hash ``sha``."""
    reasoning = reasoning_for(model, sha) if thinking else None
    n_reasoning = reasoning_tokens if thinking else 0
    entry = key.get(sha)
    if entry is None:
        return Answer(UNKNOWN_ANSWER, None, reasoning, n_reasoning)
    digest = _digest(model, sha, seed)
    correct = _unit(digest, 0) < accuracy
    pick = int.from_bytes(digest[8:12], "big")
    value = entry.target if correct else wrong_value(entry, pick)
    return Answer(render(entry, value, digest[12]), correct, reasoning, n_reasoning)
