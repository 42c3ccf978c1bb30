"""Reading a server's requested back-off from response headers."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """`retry-after-ms` first, then `retry-after` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


# What remains of the provider's own window, by header family (OpenAI, Anthropic). Gemini
# documents no such headers.
_REMAINING = (
    ("x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens"),
    ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-tokens-remaining"),
)
# The window's size: requests and tokens a minute (OpenAI, Anthropic).
_LIMIT = (
    ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens"),
    ("anthropic-ratelimit-requests-limit", "anthropic-ratelimit-tokens-limit"),
)


def remaining_from_headers(headers: Mapping[str, str] | None) -> tuple[int | None, int | None]:
    """(requests, tokens) the provider says remain in its window; None where not said."""
    if not headers:
        return None, None
    for requests_name, tokens_name in _REMAINING:
        requests, tokens = _int(headers.get(requests_name)), _int(headers.get(tokens_name))
        if requests is not None or tokens is not None:
            return requests, tokens
    return None, None


def limits_from_headers(headers: Mapping[str, str] | None) -> tuple[int | None, int | None]:
    """(requests, tokens) a minute the provider says the key may use; None where not said."""
    if not headers:
        return None, None
    for requests_name, tokens_name in _LIMIT:
        requests, tokens = _int(headers.get(requests_name)), _int(headers.get(tokens_name))
        if requests is not None or tokens is not None:
            return requests, tokens
    return None, None


def _int(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None
