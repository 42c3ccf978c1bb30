"""Buffered JSONL request log: one line per request, flushed periodically and on close.

The file is opened once; request handlers only append a string to a list. The API key is never
passed in here, only whether one was present.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, TextIO


class RequestLog:
    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._buffer: list[str] = []
        self._lock = threading.Lock()
        self._file: TextIO | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")

    def write(self, entry: dict[str, Any]) -> None:
        if self._file is not None:
            self._buffer.append(json.dumps(entry, separators=(",", ":")))

    def flush(self) -> None:
        if self._file is None:
            return
        with self._lock:
            lines, self._buffer = self._buffer, []
            if lines:
                self._file.write("\n".join(lines) + "\n")
            self._file.flush()

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def blank_entry(route: str, rid: str | None, attempt: int | None = None) -> dict[str, Any]:
    """A request-log line with every field present; the handler fills it in."""
    return {
        "t": round(time.time(), 3),
        "route": route,
        "model": None,
        "prompt_sha256": None,
        "seed": None,
        "max_tokens": None,  # the output budget the request asked for
        "status": 499,  # kept if the client goes away first
        "outcome": "client_closed",
        "attempt": attempt,  # x-stainless-retry-count, when sent
        "n": None,  # earlier attempts of the same request content seen by this server
        "auth": False,
        "request_id": rid,
        "correct": None,
        "input_tokens": None,
        "output_tokens": None,
        "latency_ms": None,
    }
