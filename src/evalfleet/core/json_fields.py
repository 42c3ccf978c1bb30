"""Reading a stored JSON object field by field, each problem naming the field's path
(`identity.benchmarks.rome.data.samples is text, not an integer`): what the typed shapes of
the store (`engine.store.manifest_types`, `engine.store.about`) are read with. A field that a
file written before it existed lacks reads as the default its reader gives."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
REQUIRED: Any = object()  # no default: the field must be there


class BadField(ValueError):
    """A stored JSON value that is not what its field holds (the message names the field)."""


def kind(value: Any) -> str:
    """A JSON value's kind in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Fields:
    """One JSON object of a stored file; `path` is where it is in the file ("" at the top)."""

    def __init__(self, raw: Any, path: str = "") -> None:
        if not isinstance(raw, dict):
            raise BadField(f"{path or 'the file'} is {kind(raw)}, not an object")
        self.raw: dict[str, Any] = raw
        self.path = path

    def where(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def _get(self, name: str, default: Any) -> Any:
        value = self.raw.get(name)
        if value is None and default is REQUIRED:
            raise BadField(f"no {self.where(name)}")
        return value

    def _typed(self, name: str, default: Any, ok: Callable[[Any], bool], what: str) -> Any:
        value = self._get(name, default)
        if value is None:
            return default
        if not ok(value):
            raise BadField(f"{self.where(name)} is {kind(value)}, not {what}")
        return value

    def text(self, name: str, default: Any = REQUIRED) -> Any:
        return self._typed(name, default, lambda v: isinstance(v, str), "text")

    def integer(self, name: str, default: Any = REQUIRED) -> Any:
        return self._typed(name, default, _is_integer, "an integer")

    def count(self, name: str, default: Any = REQUIRED) -> Any:
        """An integer at least 0."""
        value = self.integer(name, default)
        if value is not None and value < 0:
            raise BadField(f"{self.where(name)} is {value}, not a count")
        return value

    def number(self, name: str, default: Any = REQUIRED) -> Any:
        value = self._typed(name, default, _is_number, "a number")
        return float(value) if value is not None else None

    def flag(self, name: str, default: Any = REQUIRED) -> Any:
        return self._typed(name, default, lambda v: isinstance(v, bool), "true or false")

    def texts(self, name: str) -> tuple[str, ...]:
        """A list of text (none when missing)."""
        values = self._typed(name, [], lambda v: isinstance(v, list), "a list")
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise BadField(f"{self.where(name)}[{i}] is {kind(value)}, not text")
        return tuple(values)

    def json_object(self, name: str, default: Any = REQUIRED) -> Any:
        """An object kept as JSON (what another type reads: a benchmark's options, a
        request)."""
        return self._typed(name, default, lambda v: isinstance(v, dict), "an object")

    def fields(self, name: str) -> Fields:
        return Fields(self._get(name, REQUIRED), self.where(name))

    def optional_fields(self, name: str) -> Fields | None:
        """An object, or None when missing, null or empty (`{}`)."""
        value = self.raw.get(name)
        return Fields(value, self.where(name)) if value not in (None, {}) else None

    def each(self, name: str, read: Callable[[Fields], T]) -> dict[str, T]:
        """An object of objects, each read by `read` (none when missing)."""
        values = self.json_object(name, {})
        return {
            key: read(Fields(value, f"{self.where(name)}.{key}")) for key, value in values.items()
        }

    def items(self, name: str, read: Callable[[Fields], T]) -> tuple[T, ...]:
        """A list of objects, each read by `read` (none when missing)."""
        values = self._typed(name, [], lambda v: isinstance(v, list), "a list")
        return tuple(
            read(Fields(value, f"{self.where(name)}[{i}]")) for i, value in enumerate(values)
        )


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)
