"""The neutral sample shape every benchmark produces and every provider consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PartKind = Literal["text", "image", "audio"]


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
    """One benchmark question, ready to be sent to any provider."""

    id: str
    parts: list[Part]
    target: str
    group_id: str | None = None
    choices: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    """The outcome of scoring one response with one scoring mode."""

    scoring: str
    answer: str | None
    correct: bool
    value: float = 0.0
