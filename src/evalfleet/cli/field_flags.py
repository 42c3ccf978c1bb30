"""What a pydantic field says about its flag: the type under Optional and Annotated, the
choices, bounds and default its JSON schema gives, the help text made of them, and the list a
repeatable, comma-separated flag was given. Shared by the request's flags (`cli.options`) and
the benchmarks' (`cli.benchmark_flags`)."""

from __future__ import annotations

import types
import typing
from typing import Any


def _unwrap_optional(annotation: Any) -> Any:
    """`X | None` -> X (a flag left out is None anyway)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return annotation


def _base(annotation: Any) -> Any:
    """The annotation without Optional and Annotated metadata."""
    annotation = _unwrap_optional(annotation)
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return _unwrap_optional(annotation)


def schema_facts(prop: dict[str, Any]) -> dict[str, Any]:
    """From a field's JSON schema: its choices, bounds and default (Optional unwrapped)."""
    variants = [v for v in prop.get("anyOf", [prop]) if v.get("type") != "null"]
    facts: dict[str, Any] = {}
    enums = [v.get("enum") or (v.get("items") or {}).get("enum") for v in variants]
    first = enums[0] if enums else None
    if first and all(enums):  # none where a variant takes any text (models)
        facts["choices"] = list(first)
    for variant in variants:
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in variant:
                facts[key] = variant[key]
    if "default" in prop:
        facts["default"] = prop["default"]
    return facts


def help_text(description: str | None, facts: dict[str, Any], *, repeatable: bool = False) -> str:
    """A flag's help from its field's description and schema facts."""
    bounds = []
    if "minimum" in facts:
        bounds.append(f">= {facts['minimum']}")
    if "exclusiveMinimum" in facts:
        bounds.append(f"> {facts['exclusiveMinimum']}")
    if "maximum" in facts:
        bounds.append(f"<= {facts['maximum']}")
    if "exclusiveMaximum" in facts:
        bounds.append(f"< {facts['exclusiveMaximum']}")
    text = (description or "").replace("%", "%%")
    if bounds:
        text += f" ({', '.join(bounds)})"
    if repeatable and facts.get("choices"):
        text += f"; one or more of {', '.join(map(str, facts['choices']))}"
    if repeatable:
        text += " (repeatable, or comma-separated)"
    default = facts.get("default")
    if default not in (None, [], {}, False):
        shown = ", ".join(default) if isinstance(default, list) else default
        text += f" (default: {shown})"
    return text


def split_list(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]
