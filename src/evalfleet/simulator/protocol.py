"""Protocol-neutral types shared by the engine and the per-provider route modules."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from evalfleet.simulator.config import ModelProfile

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
# The HTTP status of each kind, the same in every protocol but where one says otherwise.
STATUS: dict[ErrorKind, int] = {
    "bad_request": 400,
    "unauthorized": 401,
    "not_found": 404,
    "rate_limited": 429,
    "server_error": 500,
    "unavailable": 503,
    "overloaded": 529,
    "timeout": 504,
}
# (status, body, headers) of a failure
Failure = tuple[int, dict[str, Any], dict[str, str]]


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
    request_id_header: str = ""  # the response header that names the request, if any
    usage_field: str = "usage"  # where a success body holds its usage
    input_tokens_field: str = "input_tokens"  # the usage's count of prompt tokens

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
    ) -> Failure:
        """A failure of this kind in the protocol's shape: its status, body and headers."""
        raise NotImplementedError

    def headers(self, request_id: str, limits: LimitState | None) -> dict[str, str]:
        """Headers of a response: its request id and the rate-limit window, where the protocol
        sends them."""
        out = {self.request_id_header: request_id} if self.request_id_header else {}
        if limits is not None:
            out.update(self.ratelimit_headers(limits))
        return out

    def ratelimit_headers(self, limits: LimitState) -> dict[str, str]:
        """The rate-limit window in the protocol's headers (Gemini documents none)."""
        return {}

    def usage_faulted(self, body: dict[str, Any], fault: str) -> dict[str, Any]:
        """A success body with its usage left out (``no_usage``) or its prompt tokens
        reported as -5,000,000 (``negative_usage``); what was billed is still logged."""
        if fault == "no_usage":
            body.pop(self.usage_field, None)
        elif fault == "negative_usage":
            body[self.usage_field] = {**body[self.usage_field], self.input_tokens_field: -5_000_000}
        return body

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


def limit_headers(limits: LimitState, name: str, reset: Callable[[float], str]) -> dict[str, str]:
    """Rate-limit headers of a window: for requests and for tokens, where limited, the limit,
    what remains and when it resets (``reset`` spells the seconds). ``name`` spells a header
    from its ``field`` (limit, remaining, reset) and ``unit`` (requests, tokens)."""
    out: dict[str, str] = {}
    for unit, limit, remaining, reset_s in (
        ("requests", limits.requests_limit, limits.requests_remaining, limits.requests_reset_s),
        ("tokens", limits.tokens_limit, limits.tokens_remaining, limits.tokens_reset_s),
    ):
        if limit is not None:
            out[name.format(field="limit", unit=unit)] = str(limit)
            out[name.format(field="remaining", unit=unit)] = str(remaining)
            out[name.format(field="reset", unit=unit)] = reset(reset_s)
    return out


def reported(body: dict[str, Any], profile: ModelProfile) -> dict[str, Any]:
    """A success body with what the profile's rules say the provider reports of the model:
    its `system_fingerprint` and model id, where the route's body has those fields."""
    if profile.system_fingerprint is not None and "system_fingerprint" in body:
        body["system_fingerprint"] = profile.system_fingerprint
    if profile.reported_model is not None:
        for name in ("model", "modelVersion"):
            if name in body:
                body[name] = profile.reported_model
    return body
