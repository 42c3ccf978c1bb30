"""Whether anything answers at an endpoint: one TCP connection to its host and port, before a
command fans calls out to it (a dead port would otherwise fail every call, each retried)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def unreachable(base_url: str, timeout_s: float = 5.0) -> str | None:
    """Why nothing answers at `base_url`'s host and port ("connection refused", "timed out",
    ...), or None when a connection is accepted there."""
    parts = urlsplit(base_url)
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme, 443)
    except ValueError:
        return f"not a valid URL: {base_url}"
    if not parts.hostname:
        return f"not a valid URL: {base_url}"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return (exc.strerror or str(exc) or type(exc).__name__).lower()
