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
