"""A wrapper that keeps API keys out of reprs, logs and error messages."""

from __future__ import annotations


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):  # picklable for Ray, still redacted in reprs
        return (Secret, (self._value,))
