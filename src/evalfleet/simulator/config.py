"""Simulator configuration: defaults, per-model rules (fnmatch globs), loading from YAML/JSON.

Everything a request needs is resolved once per model name into a frozen ``ModelProfile`` and
cached, so the per-request cost of configuration is one dict lookup. An example file::

    latency: {distribution: lognormal, ms: 200, sigma: 0.4}
    requests_per_minute: 600          # per model, sliding 60 s window
    faults: {http_503: 0.01, hang: 0.001, hang_s: 30}
    models: [sim-0.3, sim-0.7, sim-0.5-think]
    rules:                            # applied in order; later rules win
      - match: "sim-0.9*"
        tokens_per_minute: 20000
        faults: {http_529: 0.05}
      - match: "gpt-*"                # dry-run a real model name
        accuracy: 0.6
        thinking: true
    batch:                            # the three providers' batch APIs (see batches.py)
      completion_s: 600               # create -> completed; 0: done at the first retrieve
      line_failure_rate: 0.02         # lines answered with a 500-class error
      state_path: /tmp/sim-batches.json   # batches survive a restart of the simulator
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalfleet.simulator.answering import is_thinking_model, parse_accuracy

FAULT_KINDS = (
    "http_500",
    "http_503",
    "http_529",
    "hang",
    "malformed_json",
    "empty_content",
    "truncate",
    "empty_length",
    "no_usage",
    "negative_usage",
)


class ConfigError(ValueError):
    """A configuration that cannot be read or does not validate (one-line message)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Latency(_Strict):
    """Response delay. ``ms`` is the fixed value, the uniform mean or the lognormal median."""

    distribution: Literal["fixed", "uniform", "lognormal"] = "fixed"
    ms: float = Field(default=0.0, ge=0)
    jitter_ms: float = Field(default=0.0, ge=0)  # uniform: half-width around ``ms``
    sigma: float = Field(default=0.5, ge=0)  # lognormal: shape of log(latency)
    per_output_token_ms: float = Field(default=0.0, ge=0)


class Faults(_Strict):
    """Fault rates (fractions of requests) and the deterministic fail-first option.

    A fault is drawn from sha256(config seed, model, prompt, seed, attempt number), so a retry
    of the same request gets an independent draw and can succeed.
    """

    http_500: float = Field(default=0.0, ge=0, le=1)
    http_503: float = Field(default=0.0, ge=0, le=1)
    http_529: float = Field(default=0.0, ge=0, le=1)
    hang: float = Field(default=0.0, ge=0, le=1)
    malformed_json: float = Field(default=0.0, ge=0, le=1)
    empty_content: float = Field(default=0.0, ge=0, le=1)
    truncate: float = Field(default=0.0, ge=0, le=1)
    # a reasoning model that spent its whole output limit thinking: finish reason length,
    # no text, the limit billed as reasoning
    empty_length: float = Field(default=0.0, ge=0, le=1)
    no_usage: float = Field(default=0.0, ge=0, le=1)  # a success body without its usage
    negative_usage: float = Field(default=0.0, ge=0, le=1)  # prompt tokens reported < 0
    fail_first_n: int = Field(default=0, ge=0)  # the first N attempts of every request fail
    fail_first_status: Literal[429, 500, 503, 529] = 503
    hang_s: float = Field(default=30.0, gt=0)
    retry_after_ms: int | None = Field(default=None, ge=0)  # sent on fail-first and 5xx if set


class ModelRule(_Strict):
    """Overrides for the models whose name matches ``match`` (fnmatch). Later rules win."""

    match: str
    accuracy: float | None = Field(default=None, ge=0, le=1)
    unformatted_rate: float | None = Field(default=None, ge=0, le=1)
    thinking: bool | None = None
    reasoning_tokens: int | None = Field(default=None, ge=0)
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    latency: Latency | None = None  # only the fields given are overridden
    faults: Faults | None = None  # only the fields given are overridden
    # what GET /v1/models says of the model, as vLLM (max_model_len) and gateways
    # (input_modalities) do; unset: not said
    max_model_len: int | None = Field(default=None, ge=1)
    input_modalities: list[str] | None = None
    # what the provider reports of the model that answered: OpenAI's `system_fingerprint`
    # and the returned model id (`model`; Gemini's `modelVersion`): a rule that changes them
    # (with `accuracy`) plays an alias that changed behind the same name
    system_fingerprint: str | None = Field(default=None, min_length=1, max_length=200)
    reported_model: str | None = Field(default=None, min_length=1, max_length=200)


class BatchConfig(_Strict):
    """The batch APIs (OpenAI Files + Batches, Anthropic Message Batches, Gemini
    batchGenerateContent). Times are in seconds of the simulator's batch clock (wall time
    plus what ``POST /_sim/batches/advance`` added).

    Line ``i`` of ``n`` is answered ``completion_s * (i + 1) / n`` after the create, so a batch
    is all done ``completion_s`` after it; it ends (completed) ``finalize_s`` later. A batch not
    all done by ``expire_after_s`` expires instead: the lines done by then keep their answers,
    the rest are reported expired. A cancel keeps the lines done so far and cancels the rest.
    """

    completion_s: float = Field(default=0.0, ge=0)  # 0: every line is done at the first poll
    finalize_s: float = Field(default=0.0, ge=0)  # OpenAI "finalizing" lasts this long
    expire_after_s: float = Field(default=86400.0, gt=0)  # the 24 h completion window
    line_failure_rate: float = Field(default=0.0, ge=0, le=1)  # lines failing with a 500
    state_path: str | None = None  # JSON file keeping files and batches across restarts


DEFAULT_MODELS = ["sim-0.3", "sim-0.5", "sim-0.7", "sim-0.9", "sim-0.5-think"]


class SimulatorConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    models: list[str] = Field(default_factory=lambda: list(DEFAULT_MODELS))
    default_accuracy: float = Field(default=0.5, ge=0, le=1)  # for names without "sim-<float>"
    # share of answers that state their value in prose, without the asked-for format
    unformatted_rate: float = Field(default=0.0, ge=0, le=1)
    reasoning_tokens: int = Field(default=256, ge=0)
    # accuracy multiplier for questions asked without the images their answer-key entry names
    blind_factor: float = Field(default=0.4, ge=0, le=1)
    image_tokens: int = Field(default=258, ge=0)
    audio_tokens: int = Field(default=258, ge=0)
    latency: Latency = Field(default_factory=Latency)
    faults: Faults = Field(default_factory=Faults)
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    rules: list[ModelRule] = Field(default_factory=list)
    seed: int = 0  # mixed into fault draws and the latency RNG
    require_auth: bool = True
    log_flush_s: float = Field(default=0.2, gt=0)
    batch: BatchConfig = Field(default_factory=BatchConfig)


@dataclass(frozen=True)
class ModelProfile:
    """Everything the server needs to know about one model name."""

    model: str
    accuracy: float
    unformatted_rate: float
    thinking: bool
    reasoning_tokens: int
    requests_per_minute: int | None
    tokens_per_minute: int | None
    latency: Latency
    faults: Faults
    max_model_len: int | None = None
    input_modalities: tuple[str, ...] | None = None
    system_fingerprint: str | None = None  # None: the route's own ("fp_evalfleet_sim")
    reported_model: str | None = None  # None: the model id asked for

    @cached_property
    def has_fault_rates(self) -> bool:
        return any(getattr(self.faults, kind) for kind in FAULT_KINDS)


def _merge(base: BaseModel, override: BaseModel | None) -> Any:
    if override is None:
        return base
    return base.model_copy(update={k: getattr(override, k) for k in override.model_fields_set})


def resolve_profile(config: SimulatorConfig, model: str) -> ModelProfile:
    accuracy = parse_accuracy(model)
    fields: dict[str, Any] = {
        "accuracy": config.default_accuracy if accuracy is None else accuracy,
        "unformatted_rate": config.unformatted_rate,
        "thinking": is_thinking_model(model),
        "reasoning_tokens": config.reasoning_tokens,
        "requests_per_minute": config.requests_per_minute,
        "tokens_per_minute": config.tokens_per_minute,
    }
    latency, faults = config.latency, config.faults
    for rule in config.rules:
        if not fnmatch.fnmatchcase(model, rule.match):
            continue
        for name in ("accuracy", "unformatted_rate", "thinking", "reasoning_tokens"):
            value = getattr(rule, name)
            if value is not None:
                fields[name] = value
        for name in ("requests_per_minute", "tokens_per_minute"):
            if name in rule.model_fields_set:
                fields[name] = getattr(rule, name)
        latency = _merge(latency, rule.latency)
        faults = _merge(faults, rule.faults)
        if rule.max_model_len is not None:
            fields["max_model_len"] = rule.max_model_len
        if rule.input_modalities is not None:
            fields["input_modalities"] = tuple(rule.input_modalities)
        for name in ("system_fingerprint", "reported_model"):
            if getattr(rule, name) is not None:
                fields[name] = getattr(rule, name)
    return ModelProfile(model=model, latency=latency, faults=faults, **fields)


class ProfileCache:
    """Resolves profiles lazily; one entry per distinct model name."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self._profiles: dict[str, ModelProfile] = {}

    def get(self, model: str) -> ModelProfile:
        profile = self._profiles.get(model)
        if profile is None:
            profile = self._profiles[model] = resolve_profile(self.config, model)
        return profile


def _format_validation_error(err: ValidationError) -> str:
    parts = []
    for item in err.errors():
        where = ".".join(str(p) for p in item["loc"]) or "<root>"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def config_from_dict(data: dict[str, Any], source: str = "config") -> SimulatorConfig:
    try:
        return SimulatorConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"invalid {source}: {_format_validation_error(err)}") from None


def load_config(path: str | Path) -> SimulatorConfig:
    """Load a config file (``.json`` as JSON, anything else as YAML)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read config {path}: {err.strerror or err}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"cannot parse config {path}: {first_line}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {path}: the top level must be a mapping")
    return config_from_dict(data, source=f"config {path}")
