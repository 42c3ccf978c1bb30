"""Provider-neutral request settings, completion results and the error taxonomy."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    BAD_REQUEST = "bad_request"
    AUTH = "auth"
    NOT_FOUND = "not_found"
    CONTENT_FILTERED = "content_filtered"
    CONTEXT_TOO_LONG = "context_too_long"
    EMPTY_ANSWER = "empty_answer"
    BAD_USAGE = "bad_usage"  # a billed answer whose reported usage cannot be true
    OUTPUT_LIMIT = "output_limit"  # an empty answer cut off by max_tokens (reasoning took it)
    MALFORMED_RESPONSE = "malformed_response"
    UNKNOWN = "unknown"


RETRYABLE_KINDS = frozenset(
    {
        ErrorKind.RATE_LIMITED,
        ErrorKind.OVERLOADED,
        ErrorKind.SERVER_ERROR,
        ErrorKind.TIMEOUT,
        ErrorKind.CONNECTION,
        ErrorKind.MALFORMED_RESPONSE,
    }
)


class ProviderError(Exception):
    """A failed provider call, already classified into the taxonomy."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.request_id = request_id
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": str(self.kind),
            "status": self.status,
            "message": self.message[:2000],
            "request_id": self.request_id,
        }


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0  # includes reasoning tokens, for every provider
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0
    reported: bool = True  # False: the answer carried no usage at all

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_input_tokens": self.cached_input_tokens,
        }


@dataclass
class ProviderResponse:
    """What one successful provider call returned."""

    text: str
    finish_reason: str | None
    usage: Usage
    model_reported: str | None = None
    request_id: str | None = None
    reasoning_text: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: (requests, tokens) left in the provider's rate-limit window, from its headers
    remaining: tuple[int | None, int | None] = (None, None)
    #: (requests, tokens) a minute the provider's headers say the key may use
    limits: tuple[int | None, int | None] = (None, None)
