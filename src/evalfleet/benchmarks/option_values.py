"""A benchmark option given a value it does not take, told in one line: which option (as the
caller names it: a flag on the command line, `BENCHMARK.FIELD` elsewhere), the value,
and the values it takes. Validation itself is the options model's; this only words it."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ValidationError


def choices(annotation: Any) -> list[Any]:
    """The values a `Literal` field (or a list or Optional of one) takes; [] if it is free."""
    if typing.get_origin(annotation) is Literal:
        return list(typing.get_args(annotation))
    for inner in typing.get_args(annotation):
        found = choices(inner)
        if found:
            return found
    return []


def problem(model: type[BaseModel], exc: ValidationError, named: Callable[[str], str]) -> str:
    """The first problem of `exc` (a validation of `model`), in the words above."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    fields = model.model_fields
    if field not in fields:
        takes = ", ".join(named(f) for f in fields) or "none"
        return f"{named(field)} is not an option: use {takes}"
    allowed = choices(fields[field].annotation)
    if allowed and error["type"] == "literal_error":
        values = ", ".join(map(str, allowed))
        return f"{named(field)}: {error['input']!r} is not valid: use one of {values}"
    return f"{named(field)}: {error['msg']}"
