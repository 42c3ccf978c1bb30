"""The neutral vocabulary every layer speaks: prompt parts, samples, scores, decoding
settings and the errors that mean "your input is wrong".

Providers consume parts and decodings; benchmarks produce samples and scores. Both import
this module and nothing of each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PartKind = Literal["text", "image", "audio"]


class ConfigError(ValueError):
    """A request, registry or configuration problem found before any money is spent.

    The message is one line naming the problem and the fix.
    """


class DatasetError(ConfigError):
    """A dataset that cannot be used as the benchmark asks; one line naming the fix."""


class UsageError(ConfigError):
    """A malformed command-line value."""


@dataclass(frozen=True)
class Part:
    """One piece of a prompt: text, or media bytes with a media type sniffed from the bytes."""

    kind: PartKind
    text: str | None = None
    data: bytes | None = None
    media_type: str | None = None

    @staticmethod
    def of_text(text: str) -> Part:
        return Part(kind="text", text=text)


@dataclass
class Sample:
    """One benchmark item.

    `parts` is what is sent; it is empty when a sample is read back for scoring, which needs
    only the target, choices and metadata (and never decodes media).
    """

    id: str
    parts: list[Part]
    target: str
    group_id: str | None = None
    choices: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def first_text(self) -> str:
        """The first text part: the prompt the simulator's answer key is keyed by."""
        for part in self.parts:
            if part.kind == "text" and part.text is not None:
                return part.text
        raise ValueError(f"sample {self.id!r} has no text part")


@dataclass(frozen=True)
class Score:
    """One response scored by one scoring mode.

    `value` may be fractional (ANLS, location credit); `correct` is the benchmark's own
    threshold on it. `judged` marks a score that came from an LLM judge's verdict, and
    `error` a score that could not be computed (an unparsable verdict): such rows are
    counted apart, never as wrong answers.
    """

    scoring: str
    answer: str | None
    correct: bool
    value: float = 0.0
    judged: bool = False
    error: str | None = None
    # in words: the rule or evaluator that decided, on what answer (not part of the verdict)
    explanation: str = field(default="", compare=False)


@dataclass(frozen=True)
class Decoding:
    """The decoding settings of one request. None means "do not send"."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int = 16000
    seed: int | None = None
    reasoning_effort: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # spelled out, not dataclasses.asdict: its deep copy costs more than a record's JSON
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "reasoning_effort": self.reasoning_effort,
        }
