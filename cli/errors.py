"""How bad input is told: one line, no traceback, exit code 2."""

from __future__ import annotations

from pydantic import ValidationError

from core.types import ConfigError


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean "your input is wrong"."""
    from storage import StoreError

    return (ConfigError, StoreError, ValidationError)


def one_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "request"
            message = str(err.get("ctx", {}).get("error") or err["msg"])
            problems.append(f"{where}: {message}")
        return "invalid request: " + "; ".join(problems)
    return " ".join(str(exc).split())
