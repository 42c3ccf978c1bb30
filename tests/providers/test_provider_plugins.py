"""Each provider described once (`providers.plugins`): the shipped four, what a model resolved
from one carries to the workers, and the one-line refusals for a package's bad provider."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from evalfleet.core.types import ConfigError
from evalfleet.providers import plugins
from evalfleet.providers.batch import check_batch_support
from evalfleet.providers.clients import make_client
from evalfleet.providers.registry import ModelConfig, resolve_model, simulator_base_url

GOOD = plugins.Provider("good", {"chat": plugins.CHAT}, {"chat": frozenset({"text"})}, "GOOD_KEY")
NOT_A_PROVIDER = "a string"
NAMED_OTHERWISE = plugins.Provider(
    "other", {"chat": plugins.CHAT}, {"chat": frozenset({"text"})}, "K"
)


def entry(name: str, obj: str) -> EntryPoint:
    return EntryPoint(name, f"tests.providers.test_provider_plugins:{obj}", plugins.GROUP)


def test_the_shipped_providers_are_described_once():
    described = {p.name: (p.apis, p.api_key_env, sorted(p.batch_clients)) for p in plugins.BUILTIN}
    assert described == {
        "openai": (("chat", "responses"), "OPENAI_API_KEY", ["chat", "responses"]),
        "openai-compatible": (("chat", "responses"), "OPENAI_COMPATIBLE_API_KEY", []),
        "anthropic": (("messages",), "ANTHROPIC_API_KEY", ["messages"]),
        "google": (("generate_content",), "GOOGLE_API_KEY", ["generate_content"]),
    }
    assert plugins.names()[:4] == ("openai", "openai-compatible", "anthropic", "google")


def test_a_resolved_model_carries_its_client_classes():
    config = resolve_model("anthropic/sim-0.5", registry={}, simulator_url="http://h:1")
    assert config.client == "evalfleet.providers.anthropic_messages:AnthropicMessagesClient"
    assert config.batch_client == "evalfleet.providers.batch_anthropic:AnthropicBatchClient"
    assert type(make_client(config, "k")).__name__ == "AnthropicMessagesClient"
    assert simulator_base_url("google", "http://h:1/") == "http://h:1/"
    assert simulator_base_url("openai", "http://h:1") == "http://h:1/v1"


def test_a_model_of_no_known_provider_has_no_client():
    config = ModelConfig(
        id="acme/m", provider="acme", api_model="m", base_url=None, api_key_env="K"
    )
    assert (config.api, config.client, config.batch_client) == ("chat", "", "")
    with pytest.raises(ConfigError) as caught:
        make_client(config, "k")
    assert str(caught.value) == "model acme/m has api 'chat', which has no client"
    with pytest.raises(ConfigError) as caught:
        check_batch_support(config)
    assert str(caught.value) == (
        "model acme/m has api 'chat', which has no batch API; run it without batch mode"
    )


def test_an_unknown_provider_names_the_installed_ones():
    with pytest.raises(ConfigError) as caught:
        resolve_model("acme/sim-0.5", registry={}, simulator_url="http://h:1")
    assert str(caught.value) == (
        "unknown provider 'acme' in model 'acme/sim-0.5': use one of " + ", ".join(plugins.names())
    )


def test_a_package_provider_is_loaded_and_checked():
    assert plugins._load(entry("good", "GOOD")) is GOOD
    where = "provider '{}' of package tests.providers.test_provider_plugins (tests.providers."
    with pytest.raises(ConfigError) as caught:
        plugins._load(entry("bad", "NOT_A_PROVIDER"))
    assert str(caught.value) == (
        where.format("bad") + "test_provider_plugins:NOT_A_PROVIDER) is a str, not a Provider"
    )
    with pytest.raises(ConfigError) as caught:
        plugins._load(entry("mine", "NAMED_OTHERWISE"))
    assert str(caught.value) == (
        where.format("mine") + "test_provider_plugins:NAMED_OTHERWISE) is named 'other': name "
        "the entry point after it, in lowercase letters, digits and -"
    )
    with pytest.raises(ConfigError) as caught:
        plugins._load(entry("gone", "MISSING"))
    assert str(caught.value).startswith(where.format("gone"))
    assert str(caught.value).endswith(
        "cannot be loaded (AttributeError: module 'tests.providers.test_provider_plugins' has "
        "no attribute 'MISSING'): reinstall or remove it"
    )
