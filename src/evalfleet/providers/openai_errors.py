"""Map the openai SDK's exceptions (also used for OpenAI-compatible servers) to ErrorKind."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import openai

from evalfleet.providers.retry_after import retry_after_seconds
from evalfleet.providers.transport import transport_error
from evalfleet.providers.types import ErrorKind, ProviderError

_CONTEXT_CODES = ("context_length_exceeded", "string_above_max_length")
# A 429 of an account without credit: no wait ends it (the key's plan must change)
_QUOTA_CODES = ("insufficient_quota",)


def _wait_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h".replace(".0 h", " h")


def status_message(kind: ErrorKind, message: str, retry_after_s: float | None) -> str:
    """An HTTP error's message; a rate limit's says first how long the provider asked to wait,
    and until when (UTC)."""
    if kind != ErrorKind.RATE_LIMITED or retry_after_s is None:
        return message
    until = datetime.fromtimestamp(time.time() + retry_after_s, UTC).strftime("%Y-%m-%d %H:%M")
    return (
        f"the provider asked to wait {_wait_text(retry_after_s)} (Retry-After), until {until} "
        f"UTC: {message}"
    )


def kind_for_status(status: int, code: str | None = None) -> ErrorKind:
    if status == 429:
        return ErrorKind.AUTH if code in _QUOTA_CODES else ErrorKind.RATE_LIMITED
    if status == 529:
        return ErrorKind.OVERLOADED
    if status == 408:
        return ErrorKind.TIMEOUT
    if status == 409 or status >= 500:
        return ErrorKind.SERVER_ERROR
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 400 and code in _CONTEXT_CODES:
        return ErrorKind.CONTEXT_TOO_LONG
    if 400 <= status < 500:
        return ErrorKind.BAD_REQUEST
    return ErrorKind.UNKNOWN


def map_openai_error(exc: Exception) -> ProviderError:
    """Classify one exception raised by the openai SDK."""
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError too: read what it was
        return transport_error(exc) or ProviderError(
            ErrorKind.CONNECTION, f"connection error: {exc}"
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return ProviderError(
            ErrorKind.MALFORMED_RESPONSE,
            f"response failed validation: {str(exc)[:300]}",
            status=exc.status_code,
            request_id=exc.response.headers.get("x-request-id"),
        )
    if isinstance(exc, openai.APIStatusError):
        code = exc.code if isinstance(exc.code, str) else None
        kind = kind_for_status(exc.status_code, code)
        retry_after = retry_after_seconds(exc.response.headers)
        return ProviderError(
            kind,
            status_message(kind, str(exc), retry_after),
            status=exc.status_code,
            request_id=exc.request_id,
            retry_after_s=retry_after,
        )
    if isinstance(exc, ValueError):  # JSON decode of a malformed 200 body
        return ProviderError(ErrorKind.MALFORMED_RESPONSE, f"malformed response body: {exc}")
    return ProviderError(ErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}")
