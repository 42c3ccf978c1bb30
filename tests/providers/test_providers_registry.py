"""Registry settings per wire API, and the client each model gets."""

from __future__ import annotations

import asyncio

import pytest

from evalfleet.core.types import ConfigError
from evalfleet.providers.anthropic_messages import AnthropicMessagesClient
from evalfleet.providers.clients import make_client
from evalfleet.providers.google_genai import GoogleGenAIClient
from evalfleet.providers.openai_chat import OpenAIChatClient
from evalfleet.providers.openai_responses import OpenAIResponsesClient
from evalfleet.providers.registry import ModelConfig, load_registry, resolve_model

SIM = "http://127.0.0.1:8765"
CLASSES = {
    "chat": OpenAIChatClient,
    "responses": OpenAIResponsesClient,
    "messages": AnthropicMessagesClient,
    "generate_content": GoogleGenAIClient,
}


def test_every_registry_entry_resolves_to_a_client() -> None:
    registry = load_registry()
    apis = set()
    for model_id in registry["models"]:
        config = resolve_model(model_id, registry=registry)
        client = make_client(config, "key")
        assert type(client) is CLASSES[config.api]
        assert config.price_in_per_mtok > 0 and config.price_out_per_mtok > 0
        apis.add(config.api)
        asyncio.run(client.aclose())
    assert apis == set(CLASSES)


def test_existing_openai_entries_are_unchanged() -> None:
    config = resolve_model("openai/gpt-4o-2024-11-20")
    assert (config.api, config.modalities) == ("chat", frozenset({"text", "image"}))
    assert config.accepts == frozenset({"temperature", "top_p", "seed", "max_tokens"})
    assert config.cost_usd(1_000_000, 1_000_000) == 12.5


def test_simulated_models_per_provider() -> None:
    cases = {
        "openai/sim-0.3": ("chat", {"text", "image", "audio"}, SIM + "/v1"),
        "openai/sim-0.3-think": ("responses", {"text", "image"}, SIM + "/v1"),
        "openai/sim-0.3-resp": ("responses", {"text", "image"}, SIM + "/v1"),
        "anthropic/sim-0.3": ("messages", {"text", "image"}, SIM),
        "google/sim-0.3": ("generate_content", {"text", "image", "audio"}, SIM + "/"),
    }
    for model_id, (api, modalities, base_url) in cases.items():
        config = resolve_model(model_id, simulator_url=SIM + "/")
        assert (config.api, config.modalities, config.base_url) == (api, modalities, base_url)
        assert (config.price_in_per_mtok, config.price_out_per_mtok) == (1.0, 4.0)
    think = resolve_model("anthropic/sim-0.3-think", simulator_url=SIM)
    assert (think.thinking, think.thinking_budget) == ("enabled", 1024)
    assert resolve_model("openai/sim-0.3-think", simulator_url=SIM).reasoning_effort == "medium"


def test_api_defaults_to_the_provider_s_own() -> None:
    config = ModelConfig(
        id="anthropic/x", provider="anthropic", api_model="x", base_url=None, api_key_env="K"
    )
    assert config.api == "messages"
    assert type(make_client(config, "k")) is AnthropicMessagesClient


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"api": "messages"},
            "model 'openai/x' has api 'messages': openai offers chat, responses",
        ),
        (
            {"api": "responses", "modalities": ["text", "audio"]},
            "model 'openai/x' lists modalities audio, which the responses API cannot carry",
        ),
        (
            {"thinking": "adaptive"},
            "model 'openai/x' has thinking 'adaptive': the chat API takes none",
        ),
    ],
)
def test_bad_api_settings_are_refused(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("openai/x", registry={"models": {"openai/x": entry}})
    assert str(info.value) == message


PRICE = ": give a number of at least 0"


def price(**per_mtok: object) -> dict[str, object]:
    return {"price_per_mtok": per_mtok}


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (price(input=1, output=-3), f"price_per_mtok.output -3{PRICE}"),
        (price(input=float("nan")), f"price_per_mtok.input nan{PRICE}"),
        (price(output=float("inf")), f"price_per_mtok.output inf{PRICE}"),
        (price(output=1e308), f"price_per_mtok.output 1e+308{PRICE}"),
        (price(input="abc"), f"price_per_mtok.input 'abc'{PRICE}"),
        (price(output=None), f"price_per_mtok.output None{PRICE}"),
        ({"max_concurrency": 0}, "max_concurrency 0: give a whole number above 0"),
        ({"max_concurrency": 2.5}, "max_concurrency 2.5: give a whole number above 0"),
        ({"rpm": -5}, "rpm -5: give a number above 0"),
        ({"tpm": 0}, "tpm 0: give a number above 0"),
        ({"timeout_s": 0}, "timeout_s 0: give a number above 0"),
        ({"timeout_s": True}, "timeout_s True: give a number above 0"),
    ],
)
def test_a_number_the_records_or_the_calls_cannot_hold_is_refused(entry, says, monkeypatch):
    """A negative, endless or non-numeric price would be stored in records the reader refuses,
    so each resume would pay for their answers again; a zero concurrency or rate stalls the
    run: each is one line at resolve time, before any call."""
    monkeypatch.setenv("EVALFLEET_MODELS", "/nowhere/models.yaml")
    with pytest.raises(ConfigError) as info:
        resolve_model("openai/x", registry={"models": {"openai/x": entry}})
    assert str(info.value) == f"model 'openai/x' in /nowhere/models.yaml has {says}"


def test_prices_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("openai/x", registry={"models": {"openai/x": {"price_per_mtok": 5}}})
    assert str(info.value) == (
        "model 'openai/x' has price_per_mtok 5: give a mapping such as {input: 2.5, output: 10} "
        "(US dollars per million tokens)"
    )


def test_zero_prices_and_absent_limits_are_taken() -> None:
    prices = {"input": 0, "output": 0.0, "cached_input": None}  # none: the input price
    entry = {"price_per_mtok": prices, "rpm": None, "max_concurrency": 4}
    config = resolve_model("openai/x", registry={"models": {"openai/x": entry}})
    assert (config.price_in_per_mtok, config.rpm, config.max_concurrency) == (0.0, None, 4)
    assert config.price_cached_in_per_mtok is None


def test_enabled_thinking_needs_a_budget() -> None:
    registry = {"models": {"anthropic/c": {"thinking": "enabled", "thinking_budget": 512}}}
    with pytest.raises(ConfigError) as info:
        resolve_model("anthropic/c", registry=registry)
    assert str(info.value) == "model 'anthropic/c' needs a thinking_budget of at least 1024 tokens"


def test_effort_thinking_and_output_limit() -> None:
    haiku = resolve_model("anthropic/claude-haiku-4-5-20251001")
    assert (haiku.effort_for(None), haiku.effort_for("low")) == (None, "low")
    assert haiku.thinks(None) and not haiku.thinks("none")
    assert haiku.output_limit(100_000) == 64000 and haiku.output_limit(10) == 10
    gpt4o = resolve_model("openai/gpt-4o-2024-11-20")  # takes no reasoning_effort
    assert gpt4o.effort_for("high") is None and not gpt4o.thinks("high")


def test_existing_error_messages_are_kept() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("anthropic/sim-0.5")
    assert str(info.value) == (
        "model 'anthropic/sim-0.5' is simulated: start `evalfleet simulate` and pass "
        "--simulator-url http://127.0.0.1:PORT"
    )
    with pytest.raises(ConfigError) as info:
        resolve_model("google/gemini-0", registry={"models": {}})
    assert str(info.value) == (
        "unknown model 'google/gemini-0': add it to a copy of the shipped model registry "
        "(providers/models.yaml, see docs/models.md) and set EVALFLEET_MODELS=PATH-OF-THE-COPY "
        "(or use google/sim-<accuracy> against the simulator)"
    )
