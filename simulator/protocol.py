"""Protocol-neutral types shared by the engine and the per-provider route modules."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# Neutral failure kinds; each protocol maps them to its own status, body and headers.
ErrorKind = Literal[
    "bad_request",
    "unauthorized",
    "not_found",
    "rate_limited",
    "server_error",  # 500
    "unavailable",  # 503
    "overloaded",  # 529
    "timeout",  # 504, a hang that outlived hang_s
]


class BadRequest(Exception):
    """The request body is invalid; answered with the provider's 400 body."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass
class ParsedRequest:
    """What the simulator needs from a provider request."""

    model: str
    prompt_text: str | None  # first text part of the (last) user message
    text_chars: int = 0  # all text in the request (system prompt included)
    images: int = 0
    audios: int = 0
    seed: int | None = None
    max_tokens: int | None = None
    thinking: bool | None = None  # False: the request turned reasoning off
    show_thinking: bool = True  # Gemini: include_thoughts


@dataclass
class Completion:
    text: str
    reasoning_text: str | None
    input_tokens: int
    output_tokens: int  # includes reasoning tokens
    reasoning_tokens: int
    finish: Literal["stop", "length"]
    correct: bool | None

    @property
    def visible_tokens(self) -> int:
        return self.output_tokens - self.reasoning_tokens


@dataclass(frozen=True)
class LimitState:
    """Rate-limit window state after a check, for the provider's headers."""

    requests_limit: int | None
    requests_remaining: int
    requests_reset_s: float
    tokens_limit: int | None
    tokens_remaining: int
    tokens_reset_s: float
    retry_after_s: float = 0.0
    limited_by: Literal["requests", "tokens", ""] = ""


class Protocol:
    """One provider wire format: request parsing, response and error rendering."""

    route: str = ""

    def auth_present(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        raise NotImplementedError

    def parse(self, body: Any, match_info: Mapping[str, str]) -> ParsedRequest:
        raise NotImplementedError

    def success(self, req: ParsedRequest, done: Completion, request_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def error(
        self,
        kind: ErrorKind,
        message: str,
        request_id: str,
        limits: LimitState | None = None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, body, headers) of a failure."""
        raise NotImplementedError

    def headers(self, request_id: str, limits: LimitState | None) -> dict[str, str]:
        """Headers of a successful response."""
        return {}

    def malformed(self, request_id: str) -> bytes:
        """A 200 body that is not valid JSON (cut off in the middle)."""
        return b'{"id": "' + request_id.encode() + b'", "choices": [{"index": 0, "mess'


def as_int(value: Any, param: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{param}: expected an integer", param)
    return value


def bearer_present(headers: Mapping[str, str]) -> bool:
    value = headers.get("Authorization", "")
    return value.startswith("Bearer ") and len(value) > 7


def retry_after_headers(seconds: float) -> dict[str, str]:
    """``retry-after`` (whole seconds, rounded up) and ``retry-after-ms``."""
    return {
        "retry-after": str(max(1, math.ceil(seconds))) if seconds > 0 else "0",
        "retry-after-ms": str(max(0, round(seconds * 1000))),
    }
