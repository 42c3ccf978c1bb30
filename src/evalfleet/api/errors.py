"""Which errors mean "your input is wrong" (a bad name, number, key, dataset or store): the
command line tells them in one line with exit code 2; `evalfleet.run` raises them as they are,
before anything is paid."""

from __future__ import annotations


def user_errors() -> tuple[type[Exception], ...]:
    from pydantic import ValidationError

    from evalfleet.core.types import ConfigError
    from evalfleet.storage import StoreError

    return (ConfigError, StoreError, ValidationError)
