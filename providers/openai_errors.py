"""Map the openai SDK's exceptions (also used for OpenAI-compatible servers) to ErrorKind."""

from __future__ import annotations

import openai

from providers.retry_after import retry_after_seconds
from providers.types import ErrorKind, ProviderError

_CONTEXT_CODES = ("context_length_exceeded", "string_above_max_length")


def kind_for_status(status: int, code: str | None = None) -> ErrorKind:
    if status == 429:
        return ErrorKind.RATE_LIMITED
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
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(ErrorKind.TIMEOUT, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(ErrorKind.CONNECTION, f"connection error: {exc}")
    if isinstance(exc, openai.APIResponseValidationError):
        return ProviderError(
            ErrorKind.MALFORMED_RESPONSE,
            f"response failed validation: {str(exc)[:300]}",
            status=exc.status_code,
            request_id=exc.response.headers.get("x-request-id"),
        )
    if isinstance(exc, openai.APIStatusError):
        code = exc.code if isinstance(exc.code, str) else None
        return ProviderError(
            kind_for_status(exc.status_code, code),
            str(exc),
            status=exc.status_code,
            request_id=exc.request_id,
            retry_after_s=retry_after_seconds(exc.response.headers),
        )
    if isinstance(exc, ValueError):  # JSON decode of a malformed 200 body
        return ProviderError(ErrorKind.MALFORMED_RESPONSE, f"malformed response body: {exc}")
    return ProviderError(ErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}")
