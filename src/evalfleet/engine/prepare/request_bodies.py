"""A request body rebuilt after the fact: what the model's client builds for some parts and a
decoding (`request_body`, the function the batch path sends), for the report's raw view. The
client is made with a placeholder key (a body never holds a key or a header), unless its class
builds bodies without one (`body_of`: the SDK is not imported for it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evalfleet.core.types import Decoding, Part
from evalfleet.engine.prepare.resolve import resolve_models
from evalfleet.engine.run.request import EvalRequest
from evalfleet.providers.clients import load_class, make_client

PLACEHOLDER_KEY = "placeholder-never-sent"
BodyOf = Callable[[Sequence[Part], Decoding], dict[str, Any]]


def body_builder(request: EvalRequest, model: str) -> BodyOf:
    """The function that builds `model`'s request bodies as the run's request resolves it
    today; raises (ConfigError, TypeError) when it cannot."""
    config = resolve_models(request, only=[model])[model]
    body_of = getattr(load_class(config.client or None), "body_of", None)
    if body_of is not None:  # a client class that builds bodies without a client (nor its SDK)
        built: BodyOf = body_of(config)
        return built
    client = make_client(config, PLACEHOLDER_KEY)
    build: BodyOf | None = getattr(client, "request_body", None)
    if build is None:
        raise TypeError(f"the {config.api or config.provider} client builds no request body")
    return build
