"""Checks and encodings shared by the clients that turn neutral parts into provider content."""

from __future__ import annotations

import base64
from collections.abc import Sequence

from evalfleet.core.types import Part
from evalfleet.providers.registry import API_MODALITIES, ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError


def refuse(config: ModelConfig, index: int, part: Part, why: str) -> ProviderError:
    return ProviderError(
        ErrorKind.BAD_REQUEST, f"{config.id} cannot take part {index} ({part.kind}): {why}"
    )


def check_parts(config: ModelConfig, parts: Sequence[Part]) -> None:
    """Refuse, before any request, a part kind the model or its API cannot carry."""
    allowed = config.modalities & API_MODALITIES.get(config.api, frozenset())
    for index, part in enumerate(parts):
        if part.kind not in allowed:
            raise refuse(config, index, part, f"the {config.api} API takes {_names(allowed)}")
        if part.kind != "text" and (not part.data or not part.media_type):
            raise refuse(config, index, part, "media parts need bytes and a media type")


def b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


def data_url(part: Part) -> str:
    return f"data:{part.media_type};base64,{b64(part.data)}"


def _names(kinds: frozenset[str]) -> str:
    return ", ".join(sorted(kinds)) or "nothing"
