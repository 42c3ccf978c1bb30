"""Map the google-genai SDK's exceptions (and the raw transport errors it lets escape) to
ErrorKind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2
from google.genai import errors

from providers.openai_errors import kind_for_status
from providers.retry_after import retry_after_seconds
from providers.types import ErrorKind, ProviderError

_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def retry_delay_seconds(body: Any) -> float | None:
    """`retryDelay` ("37s", "0.5s") of the RetryInfo detail in an error body, if any."""
    error = body.get("error", body) if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, Mapping) and detail.get("@type") == _RETRY_INFO:
            delay = str(detail.get("retryDelay", "")).strip().removesuffix("s")
            try:
                return max(0.0, float(delay))
            except ValueError:
                return None
    return None


def _kind(exc: errors.APIError) -> ErrorKind:
    code = int(exc.code or 0)
    if code == 503:  # Gemini has no 529: an overloaded model answers 503 UNAVAILABLE
        return ErrorKind.OVERLOADED
    if code == 504 or exc.status == "DEADLINE_EXCEEDED":
        return ErrorKind.TIMEOUT
    message = (exc.message or "").lower()
    if code == 400 and "token count" in message and "exceed" in message:
        return ErrorKind.CONTEXT_TOO_LONG
    return kind_for_status(code)


def map_google_error(exc: BaseException) -> ProviderError:
    """Classify one exception raised by a google-genai call."""
    if isinstance(exc, errors.APIError):
        headers = getattr(exc.response, "headers", None)
        retry_after = retry_delay_seconds(exc.details)
        if retry_after is None:
            retry_after = retry_after_seconds(headers)
        return ProviderError(
            _kind(exc),
            f"{exc.code} {exc.status}: {exc.message}",
            status=int(exc.code) if exc.code else None,
            request_id=headers.get("x-request-id") if headers is not None else None,
            retry_after_s=retry_after,
        )
    if isinstance(exc, (httpx2.TimeoutException, TimeoutError)):
        return ProviderError(ErrorKind.TIMEOUT, "request timed out")
    if isinstance(exc, (httpx2.TransportError, OSError)):
        return ProviderError(ErrorKind.CONNECTION, f"connection error: {type(exc).__name__}: {exc}")
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is cut off
        return ProviderError(
            ErrorKind.MALFORMED_RESPONSE, f"malformed response body: {exc}", status=200
        )
    return ProviderError(ErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}")
