"""Map the anthropic SDK's exceptions to ErrorKind."""

from __future__ import annotations

import json

import anthropic

from providers.openai_errors import kind_for_status
from providers.retry_after import retry_after_seconds
from providers.types import ErrorKind, ProviderError

# Anthropic has no error code for an over-long prompt; these are its 400 messages.
_CONTEXT_MESSAGES = ("prompt is too long", "exceed context limit", "context window")


def _kind(exc: anthropic.APIStatusError) -> ErrorKind:
    status = exc.status_code
    if status == 529 or exc.type == "overloaded_error":
        return ErrorKind.OVERLOADED
    if status == 402:  # billing: an account problem, as final as a bad key
        return ErrorKind.AUTH
    message = (exc.api_message or "").lower()
    if status == 400 and any(text in message for text in _CONTEXT_MESSAGES):
        return ErrorKind.CONTEXT_TOO_LONG
    return kind_for_status(status)


def map_anthropic_error(exc: Exception) -> ProviderError:
    """Classify one exception raised by the anthropic SDK."""
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderError(ErrorKind.TIMEOUT, "request timed out")
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderError(ErrorKind.CONNECTION, f"connection error: {exc}")
    if isinstance(exc, anthropic.APIResponseValidationError):
        return ProviderError(
            ErrorKind.MALFORMED_RESPONSE,
            f"response failed validation: {str(exc)[:300]}",
            status=exc.status_code,
            request_id=exc.response.headers.get("request-id"),
        )
    if isinstance(exc, anthropic.APIStatusError):
        return ProviderError(
            _kind(exc),
            str(exc),
            status=exc.status_code,
            request_id=exc.request_id,
            retry_after_s=retry_after_seconds(exc.response.headers),
        )
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is cut off
        return ProviderError(ErrorKind.MALFORMED_RESPONSE, f"malformed response body: {exc}")
    return ProviderError(ErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}")
