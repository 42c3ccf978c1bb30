"""The model registry: which models exist, where they live and what they accept."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evalfleet.core.settings import MODELS, SIMULATOR_API_KEY
from evalfleet.core.types import ConfigError
from evalfleet.providers import plugins
from evalfleet.providers.names import SIMULATED, check_model_id
from evalfleet.providers.types import Usage

REGISTRY_ENV = MODELS.name  # a registry of one's own, instead of the shipped one
PROVIDERS = plugins.BUILTIN_NAMES  # evalfleet's own; `plugins.names()` adds installed ones
SIMULATOR_KEY_ENV = SIMULATOR_API_KEY.name
# "50 % of the synchronous price": OpenAI Batch, Anthropic Message Batches, Gemini Batch Mode
DEFAULT_BATCH_PRICE_FACTOR = 0.5
ALL_PARAMS = frozenset(
    {"temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort"}
)
# The wire API a client speaks, and the part kinds each one can carry.
# (each described once in `evalfleet.providers.plugins`)
APIS_BY_PROVIDER = {p.name: p.apis for p in plugins.BUILTIN}
API_MODALITIES = {api: kinds for p in plugins.BUILTIN for api, kinds in p.modalities.items()}
# How thinking is requested: a token budget or an adaptive/level setting, per API.
THINKING_STYLES = {
    "chat": (),
    "responses": (),
    "messages": ("enabled", "adaptive"),
    "generate_content": ("budget", "level"),
}


@dataclass(frozen=True)
class ModelConfig:
    """Everything a client needs to call one model. Holds the key's variable name, not the key."""

    id: str
    provider: str
    api_model: str
    base_url: str | None
    api_key_env: str
    rpm: int | None = None
    tpm: int | None = None
    max_concurrency: int = 256
    timeout_s: float = 600.0
    accepts: frozenset[str] = ALL_PARAMS
    modalities: frozenset[str] = frozenset({"text", "image", "audio"})
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    simulated: bool = False
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    api: str = ""  # "chat" | "responses" | "messages" | "generate_content"; "": the provider's
    thinking: str | None = None  # a THINKING_STYLES value: the model thinks unless told not to
    thinking_budget: int | None = None  # tokens, for the "enabled" and "budget" styles
    reasoning_effort: str | None = None  # sent when the decoding names no effort
    max_output_tokens: int | None = None  # the decoding's max_tokens is capped to this
    context_window: int | None = None
    price_cached_in_per_mtok: float | None = None  # cached input; None: the input price
    expected_output_tokens: int | None = None  # per answer, for estimates before a run
    # share of the synchronous price a batch-API call costs (every price: input, cached input,
    # output); openai, anthropic and google all bill batches at 50 %
    batch_price_factor: float = DEFAULT_BATCH_PRICE_FACTOR
    # "module:Class" of its API's client and batch client ("": none), read from its provider
    # where the model is resolved, so a worker imports the class without looking providers up
    client: str = field(default="", compare=False)
    batch_client: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        try:
            spec: plugins.Provider | None = plugins.get(self.provider)
        except ConfigError:
            spec = None
        if not self.api:
            object.__setattr__(self, "api", spec.apis[0] if spec else "chat")
        if spec is not None and not self.client:
            object.__setattr__(self, "client", spec.clients.get(self.api, ""))
        if spec is not None and not self.batch_client:
            object.__setattr__(self, "batch_client", spec.batch_clients.get(self.api, ""))

    def effort_for(self, requested: str | None) -> str | None:
        """The effort to send: the decoding's (if the model takes one), else the default."""
        if requested is not None and "reasoning_effort" in self.accepts:
            return requested
        return self.reasoning_effort

    def thinks(self, requested: str | None) -> bool:
        """Whether to ask for thinking (Anthropic, Gemini); effort "none" turns it off."""
        effort = self.effort_for(requested)
        if effort == "none":
            return False
        return effort is not None or self.thinking is not None

    def endpoint(self) -> str:
        """Where its calls go, for messages."""
        return self.base_url or f"the {self.provider} API"

    def output_limit(self, requested: int) -> int:
        if self.max_output_tokens is None:
            return requested
        return min(requested, self.max_output_tokens)

    def cost_usd(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        batch: bool = False,
    ) -> float:
        """USD of one call: `cost_breakdown(...)["total"]`. Input includes the cached tokens,
        output the reasoning tokens; `batch`: sent through the provider's batch API."""
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached_input_tokens,
        )
        return self.cost_breakdown(usage, batch=batch)["total"]

    def cost_breakdown(self, usage: Usage, batch: bool = False) -> dict[str, float]:
        """USD of one call by kind of token: uncached input, cached input (at the cached
        price, else the input price), output without reasoning, reasoning (at the output
        price, which is how every provider bills it), and the total. `batch`: the call went
        through the provider's batch API, so every part costs `batch_price_factor` times as
        much."""
        cached = min(max(usage.cached_input_tokens, 0), usage.input_tokens)
        reasoning = min(max(usage.reasoning_tokens, 0), usage.output_tokens)
        cached_price = self.price_cached_in_per_mtok
        if cached_price is None:
            cached_price = self.price_in_per_mtok
        spent = {
            "input": (usage.input_tokens - cached) * self.price_in_per_mtok,
            "cached_input": cached * cached_price,
            "output": (usage.output_tokens - reasoning) * self.price_out_per_mtok,
            "reasoning": reasoning * self.price_out_per_mtok,
        }
        if batch:
            spent = {k: v * self.batch_price_factor for k, v in spent.items()}
        total = spent["input"] + spent["cached_input"] + spent["output"] + spent["reasoning"]
        return {**{k: v / 1e6 for k, v in spent.items()}, "total": total / 1e6}


def registry_file() -> str:
    """Where the model registry is read from, as messages name it: the file $EVALFLEET_MODELS
    names, else the one shipped with evalfleet (providers/models.yaml)."""
    return str(MODELS.raw() or "providers/models.yaml")


def where_to_add() -> str:
    """How a model gets into the registry: the file EVALFLEET_MODELS names, or a copy of the
    shipped one that EVALFLEET_MODELS then names (the shipped one may sit in site-packages)."""
    own = MODELS.raw()
    if own:
        return f"add it to the model registry EVALFLEET_MODELS names ({own})"
    return (
        "add it to a copy of the shipped model registry (providers/models.yaml, see "
        "docs/models.md) and set EVALFLEET_MODELS=PATH-OF-THE-COPY"
    )


def load_registry(path: str | Path | None = None) -> dict[str, Any]:
    """The registry at `path`, else $EVALFLEET_MODELS, else the one shipped as this package's
    data (read through importlib.resources, so it is found in an installed wheel too)."""
    path = path or MODELS.get()
    try:
        if path:
            text = Path(path).read_text()
        else:
            path = "providers/models.yaml"
            text = resources.files("evalfleet.providers").joinpath("models.yaml").read_text()
        # libyaml's loader where PyYAML has it: ten times the pure-Python one's speed
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(text, Loader=loader) or {}  # a safe loader
    except OSError as exc:
        raise ConfigError(f"cannot read model registry {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"model registry {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models", {}), dict):
        raise ConfigError(f"model registry {path} must be a mapping with a 'models' mapping")
    return data


def split_model_id(model_id: str) -> tuple[str, str]:
    provider, sep, name = model_id.partition("/")
    if not sep or not name:
        raise ConfigError(
            f"model '{model_id}' must be named provider/model, e.g. openai/gpt-4o-2024-11-20"
        )
    plugins.get(provider, model_id)  # one line naming the installed providers if unknown
    return provider, name


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server (vLLM, SGLang, a gateway) named in the request, so a model
    served there needs no registry entry."""

    base_url: str
    api_key_env: str | None = None  # None: OPENAI_COMPATIBLE_API_KEY if set, else no key
    modalities: tuple[str, ...] | None = None  # None: what its /v1/models says, else text+image


ADHOC_MODALITIES = ("text", "image")


def resolve_model(
    model_id: str,
    *,
    registry: dict[str, Any] | None = None,
    simulator_url: str | None = None,
    endpoint: Endpoint | None = None,
) -> ModelConfig:
    """Turn "provider/model" into a ModelConfig, or raise a one-line ConfigError."""
    registry = registry if registry is not None else load_registry()
    provider, name = split_model_id(model_id)
    check_model_id(model_id)
    defaults = (registry.get("providers") or {}).get(provider) or {}
    if endpoint is not None:
        if provider != "openai-compatible":
            raise ConfigError(
                f"--base-url is for openai-compatible/NAME models, not '{model_id}': name it "
                f"openai-compatible/{name}"
            )
        entry = dict((registry.get("models") or {}).get(model_id) or {})
        entry["base_url"] = endpoint.base_url.rstrip("/")
        if endpoint.api_key_env:
            entry["api_key_env"] = endpoint.api_key_env
        else:
            entry["key_optional"] = True
        if endpoint.modalities:
            entry["modalities"] = list(endpoint.modalities)
            entry["modalities_from"] = "request"
        elif "modalities" not in entry:
            entry["modalities"] = list(ADHOC_MODALITIES)
            entry["modalities_from"] = "default"
        return _from_entry(model_id, provider, name, {**defaults, **entry})
    if SIMULATED.fullmatch(name):
        if not simulator_url:
            raise ConfigError(
                f"model '{model_id}' is simulated: start `evalfleet simulate` and pass "
                "--simulator-url http://127.0.0.1:PORT"
            )
        return ModelConfig(
            id=model_id,
            provider=provider,
            api_model=name,
            base_url=simulator_base_url(provider, simulator_url),
            api_key_env=SIMULATOR_KEY_ENV,
            timeout_s=60.0,
            simulated=True,
            price_in_per_mtok=1.0,
            price_out_per_mtok=4.0,
            **simulated_settings(provider, name),
        )
    listed: dict[str, Any] | None = (registry.get("models") or {}).get(model_id)
    if listed is None:
        served = " or pass --base-url URL" if provider == "openai-compatible" else ""
        raise ConfigError(
            f"unknown model '{model_id}': {where_to_add()}{served} "
            f"(or use {provider}/sim-<accuracy> against the simulator)"
        )
    return _from_entry(model_id, provider, name, {**defaults, **listed})


def _from_entry(model_id: str, provider: str, name: str, merged: dict[str, Any]) -> ModelConfig:
    prices = merged.get("price_per_mtok") or {}
    if not isinstance(prices, dict):
        raise ConfigError(
            f"model '{model_id}' has price_per_mtok {prices!r}: give a mapping such as "
            "{input: 2.5, output: 10} (US dollars per million tokens)"
        )
    _check_numbers(model_id, merged, prices)
    spec = plugins.get(provider, model_id)
    base_url = merged.get("base_url", spec.base_url)
    if spec.needs_base_url and not base_url:
        raise ConfigError(f"model '{model_id}' needs a base_url in {registry_file()}")
    api = merged.get("api") or spec.apis[0]
    modalities = frozenset(merged.get("modalities", spec.modalities.get(api, ())))
    _check_api_settings(model_id, spec, api, modalities, merged)
    return ModelConfig(
        id=model_id,
        provider=provider,
        api_model=merged.get("api_model", name),
        base_url=base_url,
        api_key_env=merged.get("api_key_env", spec.api_key_env),
        rpm=merged.get("rpm"),
        tpm=merged.get("tpm"),
        max_concurrency=int(merged.get("max_concurrency", 256)),
        timeout_s=float(merged.get("timeout_s", 600.0)),
        accepts=frozenset(merged.get("accepts", ALL_PARAMS)),
        modalities=modalities,
        price_in_per_mtok=float(prices.get("input", 0.0)),
        price_out_per_mtok=float(prices.get("output", 0.0)),
        price_cached_in_per_mtok=_optional_float(prices.get("cached_input")),
        expected_output_tokens=_optional_int(merged.get("expected_output_tokens")),
        extra={k: v for k, v in merged.items() if k not in _KNOWN_FIELDS},
        api=api,
        thinking=merged.get("thinking"),
        thinking_budget=_optional_int(merged.get("thinking_budget")),
        reasoning_effort=merged.get("reasoning_effort"),
        max_output_tokens=_optional_int(merged.get("max_output_tokens")),
        context_window=_optional_int(merged.get("context_window")),
        batch_price_factor=_batch_price_factor(model_id, merged),
    )


_KNOWN_FIELDS = {
    "api_model",
    "base_url",
    "api_key_env",
    "rpm",
    "tpm",
    "max_concurrency",
    "timeout_s",
    "accepts",
    "modalities",
    "price_per_mtok",
    "api",
    "thinking",
    "thinking_budget",
    "reasoning_effort",
    "max_output_tokens",
    "context_window",
    "expected_output_tokens",
    "batch_price_factor",
}


def _batch_price_factor(model_id: str, merged: dict[str, Any]) -> float:
    value = merged.get("batch_price_factor", DEFAULT_BATCH_PRICE_FACTOR)
    try:
        factor = float(value)
    except (TypeError, ValueError):
        factor = -1.0
    if not 0.0 < factor <= 1.0:
        raise ConfigError(
            f"model '{model_id}' has batch_price_factor {value!r}: give a share of the "
            "synchronous price above 0 and at most 1 (0.5 for half price)"
        )
    return factor


# What each number of an entry may be: (whole number?, above zero rather than at least zero).
# A price the record reader would refuse (below zero, not finite) would have its paid answers
# stored as unreadable records and asked again at every resume: refused here, before any call.
_NUMBERS = {
    "rpm": (False, True),
    "tpm": (False, True),
    "max_concurrency": (True, True),
    "timeout_s": (False, True),
    "expected_output_tokens": (True, True),
    "thinking_budget": (True, True),
    "max_output_tokens": (True, True),
    "context_window": (True, True),
}
_PRICES = ("input", "output", "cached_input")
_REQUIRED_IF_GIVEN = ("price_per_mtok.input", "price_per_mtok.output")  # no default for None


def _check_numbers(model_id: str, merged: dict[str, Any], prices: dict[str, Any]) -> None:
    given = [(name, merged[name], *_NUMBERS[name]) for name in _NUMBERS if name in merged]
    given += [(f"price_per_mtok.{k}", prices[k], False, False) for k in _PRICES if k in prices]
    for name, value, whole, positive in given:
        if value is None and name not in _REQUIRED_IF_GIVEN:  # none: the default
            continue
        if _number_ok(value, whole, positive):
            continue
        kind = "a whole number" if whole else "a number"
        bound = "above 0" if positive else "of at least 0"
        raise ConfigError(
            f"model '{model_id}' in {registry_file()} has {name} {value!r}: give {kind} {bound}"
        )


def _number_ok(value: Any, whole: bool, positive: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if whole and not float(value).is_integer():
        return False
    if not math.isfinite(value) or value > 1e12:
        return False
    return value > 0 if positive else value >= 0


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _check_api_settings(
    model_id: str,
    spec: plugins.Provider,
    api: str,
    modalities: frozenset[str],
    merged: dict[str, Any],
) -> None:
    if api not in spec.apis:
        allowed = ", ".join(spec.apis)
        raise ConfigError(f"model '{model_id}' has api '{api}': {spec.name} offers {allowed}")
    refused = sorted(modalities - spec.modalities[api])
    if refused:
        raise ConfigError(
            f"model '{model_id}' lists modalities {', '.join(refused)}, "
            f"which the {api} API cannot carry"
        )
    thinking = merged.get("thinking")
    if thinking is not None and thinking not in THINKING_STYLES.get(api, ()):
        styles = ", ".join(THINKING_STYLES.get(api, ())) or "none"
        raise ConfigError(
            f"model '{model_id}' has thinking '{thinking}': the {api} API takes {styles}"
        )
    budget = merged.get("thinking_budget")
    if thinking == "enabled" and (budget is None or int(budget) < 1024):
        raise ConfigError(f"model '{model_id}' needs a thinking_budget of at least 1024 tokens")


def simulated_settings(provider: str, name: str) -> dict[str, Any]:
    """API, modalities and thinking of a simulated model, from its provider and name.

    `openai/sim-*-think` and `openai/sim-*-resp` go to the Responses API as reasoning models;
    other simulated OpenAI models use chat.
    """
    thinks = "-think" in name
    if provider not in PROVIDERS:  # a package's: its first API, as it describes it
        spec = plugins.get(provider)
        return {"api": spec.apis[0], "modalities": spec.modalities[spec.apis[0]]}
    if provider == "anthropic":
        api = "messages"
    elif provider == "google":
        api = "generate_content"
    elif thinks or "-resp" in name:
        api = "responses"
    else:
        api = "chat"
    settings: dict[str, Any] = {"api": api, "modalities": API_MODALITIES[api]}
    if api == "responses":
        # The simulator reads a body-level seed, so epochs stay independent draws.
        settings.update(reasoning_effort="medium")
    elif thinks and api == "messages":
        settings.update(thinking="enabled", thinking_budget=1024)
    elif thinks and api == "generate_content":
        settings.update(thinking="budget", thinking_budget=1024)
    return settings


def simulator_base_url(provider: str, simulator_url: str) -> str:
    return simulator_url.rstrip("/") + plugins.get(provider).simulator_path


def resolve_api_key(config: ModelConfig, environ: dict[str, str] | None = None) -> str:
    """Read the model's key from the environment, or fail with the variable to set."""
    environ = environ if environ is not None else dict(os.environ)
    if config.simulated:
        return SIMULATOR_API_KEY.get(environ)
    key = environ.get(config.api_key_env, "").strip()  # blanks are no key (a stray export)
    if not key and config.extra.get("key_optional"):
        return "EMPTY"  # a server without auth (vLLM's default); the SDK wants some string
    if not key:
        raise ConfigError(f"missing API key for {config.id}: set {config.api_key_env}")
    return key
