"""Map the anthropic SDK's exceptions to ErrorKind."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from evalfleet.providers.openai_errors import kind_for_status, status_message
from evalfleet.providers.retry_after import retry_after_seconds
from evalfleet.providers.transport import transport_error
from evalfleet.providers.types import ErrorKind, ProviderError

# Anthropic has no error code for an over-long prompt; these are its 400 messages.
_CONTEXT_MESSAGES = ("prompt is too long", "exceed context limit", "context window")


# The HTTP status of each error type: a batch result's error carries the type alone.
STATUS_BY_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def kind_for_error(status: int, error_type: str | None, message: str | None) -> ErrorKind:
    """The kind of an Anthropic error from its status, its `error.type` and its message."""
    if status == 529 or error_type == "overloaded_error":
        return ErrorKind.OVERLOADED
    if status == 402:  # billing: an account problem, as final as a bad key
        return ErrorKind.AUTH
    lowered = (message or "").lower()
    if status == 400 and any(text in lowered for text in _CONTEXT_MESSAGES):
        return ErrorKind.CONTEXT_TOO_LONG
    return kind_for_status(status)


def _kind(exc: anthropic.APIStatusError) -> ErrorKind:
    return kind_for_error(exc.status_code, exc.type, exc.api_message)


def map_error_body(body: Any, request_id: str | None = None) -> ProviderError:
    """Classify an error body `{"type": "error", "error": {"type", "message"}}` that came
    without an HTTP status (an errored batch result), as the online call's error would be."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    error_type = error.get("type") if isinstance(error.get("type"), str) else None
    message = str(error.get("message") or "no message")
    status = STATUS_BY_TYPE.get(error_type or "", 500)
    kind = kind_for_error(status, error_type, message)
    return ProviderError(kind, f"{error_type}: {message}", status=status, request_id=request_id)


def map_anthropic_error(exc: Exception) -> ProviderError:
    """Classify one exception raised by the anthropic SDK."""
    if isinstance(exc, anthropic.APIConnectionError):  # APITimeoutError too: read what it was
        return transport_error(exc) or ProviderError(
            ErrorKind.CONNECTION, f"connection error: {exc}"
        )
    if isinstance(exc, anthropic.APIResponseValidationError):
        return ProviderError(
            ErrorKind.MALFORMED_RESPONSE,
            f"response failed validation: {str(exc)[:300]}",
            status=exc.status_code,
            request_id=exc.response.headers.get("request-id"),
        )
    if isinstance(exc, anthropic.APIStatusError):
        kind = _kind(exc)
        retry_after = retry_after_seconds(exc.response.headers)
        return ProviderError(
            kind,
            status_message(kind, str(exc), retry_after),
            status=exc.status_code,
            request_id=exc.request_id,
            retry_after_s=retry_after,
        )
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is cut off
        return ProviderError(ErrorKind.MALFORMED_RESPONSE, f"malformed response body: {exc}")
    return ProviderError(ErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}")
