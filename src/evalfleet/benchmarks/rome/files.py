"""Reading ROME's JSON files (annotations, predictions): one JSON document, or JSON lines.

JSON is tried first, so a pretty-printed object is never mistaken for JSON lines (upstream's
sniffing quirk). A file is read as JSON lines only when it is not one document and its first
line is one; a problem is then named by the line it is on, as it would be in an editor.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalfleet.core.types import DatasetError


@dataclass(frozen=True)
class JsonFile:
    data: Any
    lines: list[int] | None = None  # JSON lines: the line each value was on (1-based)
    repeated_keys: tuple[str, ...] = ()  # keys given twice in the outermost object

    def where(self, index: int) -> str:
        """Where the `index`-th value of a list is: its line, or its place in the array."""
        return f"line {self.lines[index]}" if self.lines else f"item {index + 1}"


def read_json(path: Path) -> JsonFile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise DatasetError(f"cannot read {path} ({reason}): give a readable JSON file") from None
    if not text.strip():
        return JsonFile([])
    repeated: list[list[str]] = []  # per object, in the order they end: the outermost last

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        counts = Counter(key for key, _ in items)
        repeated.append(sorted(key for key, n in counts.items() if n > 1))
        return dict(items)

    try:
        data = json.loads(text, object_pairs_hook=pairs)
        outer = tuple(repeated[-1]) if isinstance(data, dict) else ()
        return JsonFile(data, None, outer)
    except json.JSONDecodeError as whole:
        if not _first_line_is_json(text):
            raise DatasetError(
                f"{path} line {whole.lineno}, column {whole.colno}: not valid JSON "
                f"({whole.msg}): fix it there, or give JSON lines (one object per line)"
            ) from None
    values, numbers = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path} line {number}: not valid JSON ({exc.msg}, column {exc.colno}): each "
                "line of a JSON lines file is one whole JSON object"
            ) from None
        numbers.append(number)
    return JsonFile(values, numbers)


def read_json_file(path: Path) -> Any:
    """The values of a JSON or JSON lines file (a list for JSON lines)."""
    return read_json(path).data


def _first_line_is_json(text: str) -> bool:
    first = next(line for line in text.splitlines() if line.strip())
    try:
        json.loads(first)
    except json.JSONDecodeError:
        return False
    return first.strip() != text.strip()
