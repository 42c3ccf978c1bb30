"""Providers, each described once: evalfleet's own four and any an installed package declares.

A package adds a provider with an entry point in the group `evalfleet.providers` whose value
is a `Provider` (`myprov = "my_package:PROVIDER"`). Client classes are "module:Class" strings,
so an SDK is imported only when a client of its API is made. A package whose provider takes
the name of evalfleet's own, or of another package's, is left out with a one-line warning.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint

from evalfleet.core.types import ConfigError

GROUP = "evalfleet.providers"
_NAME = re.compile(r"[a-z][a-z0-9-]*")
_TEXT_IMAGE_AUDIO = frozenset({"text", "image", "audio"})
_TEXT_IMAGE = frozenset({"text", "image"})
CHAT = "evalfleet.providers.openai_chat:OpenAIChatClient"
RESPONSES = "evalfleet.providers.openai_responses:OpenAIResponsesClient"
OPENAI_BATCH = "evalfleet.providers.batch_openai:OpenAIBatchClient"


@dataclass(frozen=True)
class Provider:
    """One provider: its wire APIs (the first is the default) with their client classes and
    the part kinds each carries, batch clients by API, where it lives and which variable holds
    its key."""

    name: str
    clients: Mapping[str, str]  # api -> "module:Class"
    modalities: Mapping[str, frozenset[str]]  # api -> part kinds it carries
    api_key_env: str
    batch_clients: Mapping[str, str] = field(default_factory=dict)  # api -> "module:Class"
    base_url: str | None = None  # None: the SDK's default
    needs_base_url: bool = False  # a server of one's own (openai-compatible)
    simulator_path: str = "/v1"  # appended to the simulator's URL for its clients

    @property
    def apis(self) -> tuple[str, ...]:
        return tuple(self.clients)


OPENAI_APIS = {"chat": CHAT, "responses": RESPONSES}
OPENAI_MODALITIES = {"chat": _TEXT_IMAGE_AUDIO, "responses": _TEXT_IMAGE}
BUILTIN: tuple[Provider, ...] = (
    Provider(
        "openai",
        OPENAI_APIS,
        OPENAI_MODALITIES,
        "OPENAI_API_KEY",
        batch_clients={"chat": OPENAI_BATCH, "responses": OPENAI_BATCH},
    ),
    Provider(
        "openai-compatible",
        OPENAI_APIS,
        OPENAI_MODALITIES,
        "OPENAI_COMPATIBLE_API_KEY",
        needs_base_url=True,
    ),
    Provider(
        "anthropic",
        {"messages": "evalfleet.providers.anthropic_messages:AnthropicMessagesClient"},
        {"messages": _TEXT_IMAGE},
        "ANTHROPIC_API_KEY",
        batch_clients={"messages": "evalfleet.providers.batch_anthropic:AnthropicBatchClient"},
        simulator_path="",
    ),
    Provider(
        "google",
        {"generate_content": "evalfleet.providers.google_genai:GoogleGenAIClient"},
        {"generate_content": _TEXT_IMAGE_AUDIO},
        "GOOGLE_API_KEY",
        batch_clients={"generate_content": "evalfleet.providers.batch_google:GoogleBatchClient"},
        simulator_path="/",  # the SDK appends the API version: root + "/v1beta/..."
    ),
)
BUILTIN_NAMES = tuple(p.name for p in BUILTIN)


def names() -> tuple[str, ...]:
    """Every provider's name: evalfleet's own, then the installed packages' (sorted)."""
    return BUILTIN_NAMES + tuple(sorted(_declared()))


def get(name: str, model_id: str | None = None) -> Provider:
    """The provider called `name`; a one-line ConfigError naming the installed ones if none."""
    for provider in BUILTIN:
        if provider.name == name:
            return provider
    entry = _declared().get(name)
    if entry is None:
        where = f" in model '{model_id}'" if model_id else ""
        raise ConfigError(f"unknown provider '{name}'{where}: use one of {', '.join(names())}")
    return _load(entry)


@functools.cache
def _declared() -> dict[str, EntryPoint]:
    """The installed packages' providers by name, read once (nothing imported)."""
    from importlib.metadata import entry_points

    found: dict[str, EntryPoint] = {}
    for entry in sorted(entry_points(group=GROUP), key=lambda e: (e.name, _package(e))):
        if entry.name in BUILTIN_NAMES or entry.name in found:
            own = entry.name in BUILTIN_NAMES
            other = "evalfleet's own" if own else _package(found[entry.name])
            print(
                f"warning: package {_package(entry)} declares the provider '{entry.name}', "
                f"which {other} already is: left out",
                file=sys.stderr,
            )
            continue
        found[entry.name] = entry
    return found


@functools.cache
def _load(entry: EntryPoint) -> Provider:
    where = f"provider '{entry.name}' of package {_package(entry)} ({entry.value})"
    try:
        provider = entry.load()
    except Exception as exc:
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise ConfigError(f"{where} cannot be loaded ({why}): reinstall or remove it") from None
    if not isinstance(provider, Provider):
        raise ConfigError(f"{where} is a {type(provider).__name__}, not a Provider")
    if provider.name != entry.name or not _NAME.fullmatch(entry.name):
        raise ConfigError(
            f"{where} is named '{provider.name}': name the entry point after it, in lowercase "
            "letters, digits and -"
        )
    if not provider.clients or set(provider.modalities) != set(provider.clients):
        raise ConfigError(f"{where} must name at least one API, each with its modalities")
    return provider


def _package(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else entry.module
