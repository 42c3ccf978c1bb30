"""Pick the client class for a model's wire API.

Each SDK is imported only when a model of its API is used: importing all three costs a
worker process about four seconds of start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from evalfleet.core.types import ConfigError
from evalfleet.providers.base import ProviderClient
from evalfleet.providers.plugins import BUILTIN
from evalfleet.providers.registry import ModelConfig

# evalfleet's own wire APIs (each provider names its clients in `providers.plugins`)
CLIENTS: dict[str, str] = {api: cls for p in BUILTIN for api, cls in p.clients.items()}


def load_class(target: str | None) -> Any:
    """The class a "module:Name" target names, its module imported now (None for None)."""
    if target is None:
        return None
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)


def client_class(api: str) -> type[ProviderClient] | None:
    return load_class(CLIENTS.get(api))


def make_client(config: ModelConfig, api_key: str) -> ProviderClient:
    cls = load_class(config.client or None)  # resolved from its provider (`providers.plugins`)
    if cls is None:
        raise ConfigError(f"model {config.id} has api '{config.api}', which has no client")
    return cls(config, api_key)
