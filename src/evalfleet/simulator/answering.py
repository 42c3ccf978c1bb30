"""The deterministic answering model.

A model named ``sim-<p>[-suffix]`` answers a known prompt correctly with probability ``p``. The
draw is ``sha256(model, sha256(prompt text), seed)``: the same inputs always give the same answer
and a different seed (or model suffix) gives an independent draw. Tests and benchmarks can call
``draw_correct`` to know in advance what the server will answer.

The answer key (JSONL) holds two kinds of lines, both written by the benchmarks themselves
(`Benchmark.answer_key`, `JudgeSpec.answer_key`), so the simulator knows no benchmark:

- candidate entries: ``{"prompt_sha256", "target", "template", "choices"?, "images"?}``; the
  answer is a few lines of reasoning, then ``template`` with every ``{answer}`` replaced by the
  value: the format the benchmark asks for (``So the final answer is {{answer}}``,
  ``ANSWER: {answer}``, ...), which the benchmark writes into its entries. A wrong answer is
  another of ``choices`` when given, else a near miss of the target. With ``images``, a request
  carrying fewer images than that (a blind baseline) is answered right with the model's
  accuracy times ``blind_factor``: the same draw, so a blind hit is also a sighted one;
- judge entries: ``{"kind": "judge", "marker", "mode", ...}`` for grader prompts, recognised by
  a marker substring. In ``verdict`` mode the judge finds the graded response and the reference
  with two regexes, decides whether the response's final answer matches the reference, and
  answers ``true_reply`` or ``false_reply``; in ``extract`` mode it finds the response's final
  answer and answers ``reply_template`` (or ``none_reply``). A judge model ``sim-<p>`` gives the
  right verdict with probability ``p``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PLACEHOLDER = "{answer}"
PROSE_ANSWER = "So the final answer is {answer}."  # an answer given without the asked format
UNKNOWN_ANSWER = "I do not know. {unknown}"

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
    template: str  # the asked-for format: PLACEHOLDER stands for the value
    choices: tuple[str, ...] | None = None
    images: int | None = None  # images the question comes with; fewer means answering blind


@dataclass(frozen=True)
class JudgeEntry:
    """How to play the judge on grader prompts that contain `marker`."""

    marker: str
    mode: Literal["verdict", "extract"]
    response_pattern: re.Pattern[str]
    reference_pattern: re.Pattern[str] | None = None
    true_reply: str = "true"
    false_reply: str = "false"
    reply_template: str = "{answer}"
    none_reply: str = "none"


class AnswerKey:
    """prompt_sha256 -> expected answer, plus judge entries; loaded from JSONL."""

    def __init__(
        self, entries: dict[str, KeyEntry] | None = None, judges: list[JudgeEntry] | None = None
    ) -> None:
        self.entries: dict[str, KeyEntry] = dict(entries or {})
        self.judges: list[JudgeEntry] = list(judges or [])
        templates = dict.fromkeys(e.template for e in self.entries.values())
        self.answer_patterns = [_template_pattern(t) for t in [*templates, PROSE_ANSWER]]

    def final_answer_of(self, response: str) -> str | None:
        """The final answer of a response in one of the key's formats (or in prose)."""
        for pattern in self.answer_patterns:
            found = pattern.findall(response)
            if found:
                last = found[-1]
                return (last[-1] if isinstance(last, tuple) else last).strip()
        return None

    def __len__(self) -> int:
        return len(self.entries) + len(self.judges)

    def judge_for(self, prompt: str | None) -> JudgeEntry | None:
        if not prompt:
            return None
        for judge in self.judges:
            if judge.marker in prompt:
                return judge
        return None

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
        judges: list[JudgeEntry] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("expected a JSON object")
                if record.get("kind") == "judge":
                    judges.append(_parse_judge(record))
                else:
                    sha, entry = _parse_line(record)
                    entries[sha] = entry
            except (ValueError, TypeError, KeyError, re.error) as err:
                raise AnswerKeyError(f"answer key {path} line {number}: {err}") from None
        if not entries and not judges:
            raise AnswerKeyError(
                f"answer key {path} has no entries: write it from your dataset (`evalfleet "
                "simulate --answers-for DATASET -b BENCHMARK`), or every simulated answer is wrong"
            )
        return cls(entries, judges)


def _parse_judge(record: dict) -> JudgeEntry:
    mode = record.get("mode")
    if mode not in ("verdict", "extract"):
        raise ValueError(f"judge mode must be 'verdict' or 'extract', not {mode!r}")
    reference = record.get("reference_pattern")
    if mode == "verdict" and not reference:
        raise ValueError("a verdict judge needs a reference_pattern")
    fields = {
        k: str(record[k])
        for k in ("true_reply", "false_reply", "reply_template", "none_reply")
        if k in record
    }
    return JudgeEntry(
        marker=str(record["marker"]),
        mode=mode,
        response_pattern=re.compile(record["response_pattern"], re.DOTALL),
        reference_pattern=re.compile(reference, re.DOTALL) if reference else None,
        **fields,
    )


def _parse_line(record: dict) -> tuple[str, KeyEntry]:
    sha = record["prompt_sha256"]
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise ValueError("prompt_sha256 must be 64 lowercase hex digits")
    template = record.get("template")
    if not isinstance(template, str) or PLACEHOLDER not in template:
        raise ValueError(f"template must be a string with {PLACEHOLDER} where the answer goes")
    choices = record.get("choices")
    if choices is not None:
        if not isinstance(choices, list):
            raise ValueError("choices must be a list")
        choices = tuple(str(c) for c in choices)
    images = record.get("images")
    if images is not None and (not isinstance(images, int) or images < 0):
        raise ValueError("images must be a non-negative integer")
    entry = KeyEntry(str(record["target"]), template, choices=choices, images=images)
    return sha, entry


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


def render(entry: KeyEntry, value: str, template: int, *, formatted: bool = True) -> str:
    """The answer text; unformatted answers state the value in prose only (the format
    failures that fallback parsers and judges exist for)."""
    steps = _STEPS[template % len(_STEPS)]
    form = entry.template if formatted else PROSE_ANSWER
    return steps + form.replace(PLACEHOLDER, value)


def _template_pattern(template: str) -> re.Pattern[str]:
    """A regex finding answers written in `template` (one group per placeholder)."""
    pieces = [re.escape(piece) for piece in template.split(PLACEHOLDER)]
    return re.compile(r"(.+?)".join(pieces) + r"\s*$", re.MULTILINE)


def _same(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(text.casefold().strip().rstrip(".").split())

    return norm(a) == norm(b)


def judge(key: AnswerKey, entry: JudgeEntry, prompt: str, truthful: bool) -> str:
    """The judge's reply to a grader prompt: the right one if `truthful`, else the wrong one."""
    found = entry.response_pattern.search(prompt)
    response = found.group(1) if found else ""
    answer_value = key.final_answer_of(response)
    if entry.mode == "extract":
        if truthful and answer_value:
            return entry.reply_template.replace("{answer}", answer_value)
        return entry.none_reply
    reference = entry.reference_pattern.search(prompt) if entry.reference_pattern else None
    right = bool(answer_value and reference and _same(answer_value, reference.group(1)))
    return entry.true_reply if right == truthful else entry.false_reply


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
    prompt: str | None = None,
    unformatted_rate: float = 0.0,
    images: int = 0,
    blind_factor: float = 1.0,
) -> Answer:
    """The full (untruncated) answer of ``model`` to the prompt with hash ``sha`` (whose text,
    `prompt`, a judge entry needs) and ``images`` images."""
    reasoning = reasoning_for(model, sha) if thinking else None
    n_reasoning = reasoning_tokens if thinking else 0
    digest = _digest(model, sha, seed)
    entry = key.get(sha)
    if entry is not None and entry.images is not None and images < entry.images:
        accuracy *= blind_factor
    correct = _unit(digest, 0) < accuracy
    if entry is None:
        judge_entry = key.judge_for(prompt)
        if judge_entry is None or prompt is None:
            return Answer(UNKNOWN_ANSWER, None, reasoning, n_reasoning)
        return Answer(judge(key, judge_entry, prompt, correct), correct, reasoning, n_reasoning)
    pick = int.from_bytes(digest[8:12], "big")
    value = entry.target if correct else wrong_value(entry, pick)
    formatted = _unit(digest, 16) >= unformatted_rate
    text = render(entry, value, digest[12], formatted=formatted)
    return Answer(text, correct, reasoning, n_reasoning)
