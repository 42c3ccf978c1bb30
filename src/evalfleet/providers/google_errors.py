"""Map the google-genai SDK's exceptions (and the raw transport errors it lets escape) to
ErrorKind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2
from google.genai import errors

from evalfleet.providers.openai_errors import kind_for_status, status_message
from evalfleet.providers.retry_after import retry_after_seconds
from evalfleet.providers.transport import transport_error
from evalfleet.providers.types import ErrorKind, ProviderError

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


# google.rpc codes -> the HTTP status Google maps each to (google/rpc/code.proto).
STATUS_BY_RPC_CODE = {
    1: 499,  # CANCELLED
    2: 500,  # UNKNOWN
    3: 400,  # INVALID_ARGUMENT
    4: 504,  # DEADLINE_EXCEEDED
    5: 404,  # NOT_FOUND
    6: 409,  # ALREADY_EXISTS
    7: 403,  # PERMISSION_DENIED
    8: 429,  # RESOURCE_EXHAUSTED
    9: 400,  # FAILED_PRECONDITION
    10: 409,  # ABORTED
    11: 400,  # OUT_OF_RANGE
    12: 501,  # UNIMPLEMENTED
    13: 500,  # INTERNAL
    14: 503,  # UNAVAILABLE
    15: 500,  # DATA_LOSS
    16: 401,  # UNAUTHENTICATED
}


def kind_for_error(code: int, status: str | None, message: str | None) -> ErrorKind:
    """The kind of a Gemini error from its HTTP code, its status name and its message."""
    if code == 503:  # Gemini has no 529: an overloaded model answers 503 UNAVAILABLE
        return ErrorKind.OVERLOADED
    if code == 504 or status == "DEADLINE_EXCEEDED":
        return ErrorKind.TIMEOUT
    lowered = (message or "").lower()
    if code == 400 and "token count" in lowered and "exceed" in lowered:
        return ErrorKind.CONTEXT_TOO_LONG
    return kind_for_status(code)


def _kind(exc: errors.APIError) -> ErrorKind:
    return kind_for_error(int(exc.code or 0), exc.status, exc.message)


def map_rpc_error(
    rpc_code: int | None, message: str | None, request_id: str | None = None
) -> ProviderError:
    """Classify a google.rpc status `{code, message}` (an inline batch response's error) as
    the online call's HTTP error of the same code would be."""
    status = STATUS_BY_RPC_CODE.get(int(rpc_code or 2), 500)
    kind = kind_for_error(status, None, message)
    text = f"rpc code {rpc_code}: {message or 'no message'}"
    return ProviderError(kind, text, status=status, request_id=request_id)


def map_google_error(exc: BaseException) -> ProviderError:
    """Classify one exception raised by a google-genai call."""
    if isinstance(exc, errors.APIError):
        headers = getattr(exc.response, "headers", None)
        retry_after = retry_delay_seconds(exc.details)
        if retry_after is None:
            retry_after = retry_after_seconds(headers)
        kind = _kind(exc)
        return ProviderError(
            kind,
            status_message(kind, f"{exc.code} {exc.status}: {exc.message}", retry_after),
            status=int(exc.code) if exc.code else None,
            request_id=headers.get("x-request-id") if headers is not None else None,
            retry_after_s=retry_after,
        )
    if isinstance(exc, (httpx2.TransportError, OSError)):  # timeouts too: read what it was
        return transport_error(exc) or ProviderError(
            ErrorKind.CONNECTION, f"connection error: {type(exc).__name__}: {exc}"
        )
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is cut off
        return ProviderError(
            ErrorKind.MALFORMED_RESPONSE, f"malformed response body: {exc}", status=200
        )
    return ProviderError(ErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}")
