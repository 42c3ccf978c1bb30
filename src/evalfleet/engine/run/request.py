"""The evaluation request: one pydantic model that is the flows' parameters (so the Prefect
UI renders it as a form) and the command line's run options (`evalfleet.cli.options` generates them
from the fields). Each default, range, choice list and description is written here once.

Benchmark names and each benchmark's options come from the registry when the schema is
generated and when a request is validated, so a newly registered benchmark is a choice in
the form and on the command line without any change here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from evalfleet.benchmarks import registry
from evalfleet.benchmarks.protocols import PROTOCOLS, ProtocolName
from evalfleet.core.settings import SIMULATOR_URL, check_http_url
from evalfleet.core.types import ConfigError
from evalfleet.providers import plugins
from evalfleet.providers.names import check_model_id, model_id_pattern
from evalfleet.storage import store_url

if TYPE_CHECKING:
    from evalfleet.providers.registry import Endpoint

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RUN_ID_RULE = "1-128 letters, digits, '.', '_' or '-', the first a letter or a digit"


def check_run_id(run_id: str) -> str:
    """`run_id` if it can name a run, else one line saying why: every command checks the
    run id it is given before a store key is made of it."""
    if not RUN_ID.fullmatch(run_id):
        raise ConfigError(f"run id {run_id!r} is not valid: a run id is {RUN_ID_RULE}")
    if run_id == "leaderboard":
        raise ConfigError(
            "run id 'leaderboard' is not valid: it is where the store keeps the leaderboard"
        )
    return run_id


@dataclass(frozen=True)
class Flag:
    """How a field is given on the command line when not as `--field-name VALUE`.

    `names`: the flags (first the long one); `metavar`: the value's placeholder; `composite`:
    the field is set together with others by a flag of `evalfleet.cli.options` (e.g. `--dataset-path
    [BENCHMARK=]PATH` sets `dataset_path` and `dataset_paths`), not by a flag of its own;
    `help`: what the flag does, where that is not the field's description: a flag that
    turns off a field that is on by default (`--no-wait`) must say what it does, not what
    the field means.
    """

    names: tuple[str, ...] = ()
    metavar: str | None = None
    composite: bool = False
    help: str | None = None


def _known_benchmark(name: str) -> str:
    registry.get(name)  # raises a one-line ConfigError naming the known ones
    return name


class _RegistryEnum:
    """JSON schema: the registered benchmark names as an enum (a drop-down in the UI)."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        value = handler(schema)
        value["enum"] = [bench.name for bench in registry.all_benchmarks()]
        return value


def plain_optionals(schema: dict[str, Any]) -> None:
    """A form's optional fields as plain inputs (a model's `json_schema_extra`, applied to its
    JSON schema in place). The Prefect UI draws `anyOf: [X, null]` as two tabs, the second
    saying 'Property is type "None"'; here such a field keeps X alone, without its null
    default. Left empty, the form omits it and the model gives its default; a null sent
    through the API is still accepted (Prefect's server reads a property that is neither
    required nor given a default as nullable)."""
    for field in (schema.get("properties") or {}).values():
        branches = field.get("anyOf")
        if not isinstance(branches, list):
            continue
        kept = [b for b in branches if b.get("type") != "null"]
        if len(kept) != 1 or len(kept) == len(branches):
            continue
        del field["anyOf"]
        for key, value in kept[0].items():
            field.setdefault(key, value)
        if "default" in field and field["default"] is None:
            del field["default"]


def _none_as_blank(value: Any) -> Any:
    return "" if value is None else value


Blank = Annotated[str, BeforeValidator(_none_as_blank)]
"""A flow parameter a form may leave empty: its default is "", never null (the Prefect UI
draws `str | None` with a tab saying 'Property is type "None"'); a None given from Python
reads as ""."""


class _RegistryOptions:
    """JSON schema: one property per registered benchmark holding its options' form."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        properties = {}
        for bench in registry.all_benchmarks():
            model = bench.options_model
            if not model.model_fields:
                continue  # nothing to set: no section in the form
            properties[bench.name] = _inline_refs(model.model_json_schema())
            plain_optionals(properties[bench.name])
            properties[bench.name]["title"] = f"{bench.name} options"
            properties[bench.name]["description"] = bench.description
        return {
            "type": "object",
            "title": "Benchmark options",
            "properties": properties,
            "additionalProperties": False,
        }


class _RegistryPaths:
    """JSON schema: one optional text field per registered benchmark (a key and its value in
    the form, not a JSON box)."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "type": "object",
            "properties": {
                name: {
                    "type": "string",
                    "title": name,
                    "description": f"a local copy of {name} (overrides dataset_path)",
                }
                for name in registry.names()
            },
            "additionalProperties": False,
        }


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its local `$defs` references inlined (it is nested in another)."""
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(dict(defs[ref.split("/")[-1]]))
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


BenchmarkName = Annotated[str, AfterValidator(_known_benchmark), _RegistryEnum]

SIMULATED_CHOICES = ["openai/sim-0.3", "openai/sim-0.7", "anthropic/sim-0.6", "google/sim-0.5"]


class _ModelChoices:
    """JSON schema of the model list: two tabs in the form, the first a drop-down of the
    registered models (the registry's and a few simulated ones), the second a list of any
    provider/model typed in. The choice is on the list, not on each item: both Prefect UIs
    draw a list of strings with an enum as one multi-select, but an item that is itself a
    choice of two as a raw JSON editor (the UI at the address `evalfleet up` prints)."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        from evalfleet.providers.registry import load_registry

        try:
            registered = sorted(load_registry().get("models") or {})
        except Exception:  # an unreadable registry: the free-text choice still works
            registered = []
        return {
            "anyOf": [
                {
                    "title": "registered",
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "enum": [*registered, *SIMULATED_CHOICES]},
                },
                {
                    "title": "provider/model",
                    "type": "array",
                    "minItems": 1,
                    # the rule `check_model_id` applies, for every installed provider
                    "items": {
                        "type": "string",
                        "pattern": model_id_pattern(plugins.names()),
                        "description": "e.g. openai-compatible/my-model with --base-url, or "
                        "openai/sim-0.5 against the simulator",
                    },
                },
            ]
        }


def _name_check(what: str) -> AfterValidator:
    def valid(model_id: str) -> str:
        try:
            return check_model_id(model_id, what)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    return AfterValidator(valid)


ModelName = Annotated[str, _name_check("model")]
ModelList = Annotated[list[ModelName], _ModelChoices]
JudgeName = Annotated[str, _name_check("judge")]


def _store_schema(schema: dict[str, Any]) -> None:
    schema["default"] = store_url()  # shown in the UI form, resolved where it is served


def _simulator_url() -> str | None:
    url: str | None = SIMULATOR_URL.get()
    return url


def address_alone(url: str, what: str) -> str:
    """`url` if it names no user, password, query or fragment: the URL is stored in the run's
    manifest and printed in its lines, so a key written into it would be too (the URL is not
    repeated in the error, for the same reason)."""
    parts = urlsplit(url)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError(
            f"{what} holds a user name, password or query string, which would be stored with "
            "the run and printed: give the address alone (such as http://127.0.0.1:8000/v1) "
            "and the key through its environment variable"
        )
    return url


class EndpointSpec(BaseModel):
    """An OpenAI-compatible server of your own (vLLM, SGLang, a gateway)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=plain_optionals)

    base_url: str = Field(
        pattern=r"^https?://\S+$",
        description="its OpenAI API root, e.g. http://127.0.0.1:8000/v1",
    )

    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="environment variable holding its key; empty: OPENAI_COMPATIBLE_API_KEY "
        "if set, else no key",
    )
    modalities: list[Literal["text", "image", "audio"]] | None = Field(
        default=None,
        description="what the model takes; empty: what the server's /v1/models says, else "
        "text and image",
    )

    @field_validator("base_url")
    @classmethod
    def _address_alone(cls, value: str) -> str:
        return address_alone(value, "the base URL")


DAY_S = 86_400.0  # the longest wait a setting may ask for
# Bounds far above any real use, so a slip (1e20) is refused, not tried
MAX_SAMPLES = 100_000_000
MAX_SEED = 1_000_000_000  # plus the epoch, within the 32-bit seeds some providers take
MAX_TOKENS = 10_000_000
MAX_IMAGE_SIDE = 100_000
MAX_IN_FLIGHT = 65_536  # 64 workers of 1,024 calls each (tasks.pool.MAX_CONCURRENCY)
MAX_RPM = 100_000_000
MAX_TPM = 100_000_000_000


class EvalRequest(BaseModel):
    """What to evaluate, how, and where to keep it."""

    # nan and inf are no setting: pydantic would otherwise take inf as a timeout or a rate
    # hide_input_in_errors: a value put in the wrong field (a key as api_key_env) is not
    # repeated in the error a script prints
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        hide_input_in_errors=True,
        json_schema_extra=plain_optionals,
    )

    models: Annotated[ModelList, Flag(("--model", "-m"), "PROVIDER/MODEL")] = Field(
        min_length=1,
        description="models to evaluate as provider/model (in the model registry: "
        "providers/models.yaml, or the file $EVALFLEET_MODELS names), e.g. "
        "openai/gpt-4o-2024-11-20, or a simulated one such as openai/sim-0.7 (its accuracy "
        "after sim-) against the simulator",
    )
    benchmarks: Annotated[list[BenchmarkName], Flag(("--benchmark", "-b"), "NAME")] = Field(
        default_factory=registry.default_names,
        json_schema_extra=lambda schema: schema.update(default=[*registry.default_names()]),
        min_length=1,
        description="benchmarks to run",
    )
    benchmark_options: Annotated[
        dict[str, dict[str, Any]], _RegistryOptions, Flag(composite=True)
    ] = Field(
        default_factory=dict,
        description="per benchmark, its options (part of the run identity)",
    )
    limit: Annotated[int | None, Flag(metavar="N")] = Field(
        default=None,
        ge=1,
        le=MAX_SAMPLES,
        description="first N samples of each benchmark (of each capability for DatBench), in "
        "dataset order",
    )
    dataset_path: Annotated[str | None, Flag(composite=True)] = Field(
        default=None,
        description="a local copy (save_to_disk output, a Parquet file or a directory of them, "
        "in the upstream schema) instead of the Hugging Face Hub at the pinned revision",
    )
    dataset_paths: Annotated[dict[str, str], _RegistryPaths, Flag(composite=True)] = Field(
        default_factory=dict, description="per benchmark, a local copy (overrides dataset_path)"
    )
    protocol: ProtocolName | None = Field(
        default=None,
        description="epoch protocol; empty: each benchmark's own ("
        + "; ".join(f"{k}: {v}" for k, v in PROTOCOLS.items())
        + ")",
    )
    epochs: Annotated[int | None, Flag(metavar="K")] = Field(
        default=None,
        ge=1,
        le=100,
        description="epochs; for zerobench-paper the sampled ones after the greedy one. The "
        "tables show pass@K and K/K for this K (ZeroBench's own: 5); a K/K or pass@K a sample "
        "has fewer epochs for is shown as — with its reason, never 0. Empty: each benchmark's own",
    )
    temperature: float = Field(default=0.7, ge=0, le=2, description="of sampled epochs")
    top_p: float = Field(default=0.95, gt=0, le=1, description="of sampled epochs")
    base_seed: Annotated[int, Flag(("--seed",), "N")] = Field(
        default=42,
        ge=-MAX_SEED,
        le=MAX_SEED,
        description="epoch e is sent seed base_seed + e",
    )
    max_tokens: Annotated[int, Flag(metavar="N")] = Field(
        default=16000, ge=1, le=MAX_TOKENS, description="output tokens, reasoning included"
    )
    max_image_side: Annotated[int | None, Flag(metavar="PIXELS")] = Field(
        default=None,
        ge=16,
        le=MAX_IMAGE_SIDE,
        description="downscale images whose longer side exceeds this (1024 reproduces "
        "ZeroBench upstream); empty: send the original bytes",
    )
    endpoints: Annotated[dict[str, EndpointSpec], Flag(composite=True)] = Field(
        default_factory=dict,
        description="openai-compatible/NAME models served at a URL of your own, by model id "
        "(no registry entry needed)",
    )
    judge_model: Annotated[JudgeName | None, Flag(metavar="PROVIDER/MODEL")] = Field(
        default=None,
        description="provider/model that grades answers for benchmarks with an LLM judge "
        "(ZeroBench's fallback parser, ROME, DatBench judge rows)",
    )
    extra_judges: Annotated[list[JudgeName], Flag(("--extra-judge",), "PROVIDER/MODEL")] = Field(
        default_factory=list,
        description="more judge models, each grading the same answers as judge_model (the "
        "primary); added to an existing run with extend, or by `evalfleet judge`",
    )
    run_id: Annotated[str | None, Flag(metavar="ID")] = Field(
        default=None,
        json_schema_extra={"pattern": RUN_ID.pattern},  # the form checks it as you type
        description="reuse to resume; empty: a new timestamped id (letters, digits, . _ -)",
    )
    reuse_from: Annotated[list[str], Flag(("--reuse-from",), "RUN")] = Field(
        default_factory=list,
        description="take an answer already stored by this earlier run (repeatable; '*': any "
        "run of the store) whose request hash is identical instead of asking again; never "
        "implicit",
    )
    extend: bool = Field(
        default=False,
        description="allow this run id to grow: more models, more epochs or more judges than "
        "it had",
    )
    store: Annotated[str, Flag(metavar="URL")] = Field(
        default_factory=store_url,
        json_schema_extra=_store_schema,
        description="where records and tables go: a directory, or s3://bucket/prefix "
        "(empty: $EVALFLEET_STORE, else ./runs)",
    )
    s3_endpoint_url: Annotated[str | None, Flag(metavar="URL")] = Field(
        default=None,
        description="S3 endpoint for MinIO, R2, Ceph, ... (empty: AWS_ENDPOINT_URL_S3, else AWS)",
    )
    simulator_url: Annotated[str | None, Flag(metavar="URL")] = Field(
        default_factory=_simulator_url,
        description="where `evalfleet simulate` listens, for the simulated models (sim-0.7) "
        "(empty: $EVALFLEET_SIMULATOR_URL)",
    )
    max_in_flight: Annotated[int, Flag(metavar="N")] = Field(
        default=256, ge=1, le=MAX_IN_FLIGHT, description="calls in flight in all"
    )
    workers: Annotated[int, Flag(metavar="N")] = Field(
        default=2, ge=1, le=64, description="Ray worker actors"
    )
    max_attempts: Annotated[int, Flag(metavar="N")] = Field(
        default=6, ge=1, le=50, description="attempts per item, rate-limit answers apart"
    )
    max_retry_seconds: Annotated[float, Flag(metavar="S")] = Field(
        default=600.0, gt=0, le=DAY_S, description="time one item may spend retrying failures"
    )
    max_rate_limited_seconds: Annotated[float, Flag(metavar="S")] = Field(
        default=1800.0,
        gt=0,
        le=DAY_S,
        description="time one item may spend waiting out rate limits",
    )
    rpm: Annotated[dict[str, Annotated[int, Field(ge=1, le=MAX_RPM)]], Flag(metavar="MODEL=N")] = (
        Field(default_factory=dict, description="requests/min limit per model id")
    )
    tpm: Annotated[dict[str, Annotated[int, Field(ge=1, le=MAX_TPM)]], Flag(metavar="MODEL=N")] = (
        Field(default_factory=dict, description="tokens/min limit per model id")
    )
    batch: Annotated[bool, Flag(composite=True)] = Field(
        default=False,
        description="ask every model (and the judge) through its provider's batch API: half "
        "price, answers within a day",
    )
    batch_models: Annotated[list[str], Flag(composite=True)] = Field(
        default_factory=list, description="ask only these models through the batch API"
    )
    batch_retry: Literal["batch", "online"] = Field(
        default="batch",
        description="where a failed or expired batch line is asked again",
    )
    batch_wait: Annotated[
        bool,
        Flag(
            ("--no-wait",),
            help="submit the batch jobs and return at once; `evalfleet batches poll` (or the "
            "poll-batches deployment) collects them and writes the tables",
        ),
    ] = Field(
        default=True,
        description="wait for the batch jobs and write the tables; off: submit and return "
        "(`evalfleet batches poll` or the poll-batches flow collects them)",
    )
    batch_poll_s: Annotated[float, Flag(metavar="S")] = Field(
        default=30.0, gt=0, le=DAY_S, description="seconds between batch polls"
    )
    timeout_s: Annotated[float | None, Flag(metavar="S")] = Field(
        default=None,
        gt=0,
        le=DAY_S,
        description="per-attempt timeout of every call, at most a day (empty: the registry's)",
    )
    max_cost_usd: Annotated[float | None, Flag(metavar="USD")] = Field(
        default=None,
        gt=0,
        description="stop sending once the run's spend (stored records included) plus what is "
        "in flight could pass this many USD; rerun with a higher cap to finish",
    )

    @field_validator("max_cost_usd", mode="before")
    @classmethod
    def _a_cap(cls, value: Any) -> Any:
        """A cap is a finite number of USD above 0 (pydantic lets inf through, and says of
        nan only that it is not above 0)."""
        try:
            number = float(value) if value is not None and not isinstance(value, bool) else None
        except (TypeError, ValueError):
            return value  # pydantic says it is not a number
        if number is not None and not (math.isfinite(number) and number > 0):
            raise ValueError(
                f"a cost cap is a number of USD above 0, such as 5 or 0.5; {number:g} is not one"
            )
        return value

    @field_validator("store")
    @classmethod
    def _store(cls, value: str) -> str:
        return store_url(value)

    @field_validator("simulator_url")
    @classmethod
    def _simulator(cls, value: str | None) -> str | None:
        """A URL to call, or nothing (a typo is refused here, not tried on every item)."""
        if value:
            try:
                check_http_url(value)
            except ValueError:
                raise ValueError(
                    f"{value!r} is not an http:// or https:// URL with a host, such as "
                    "http://127.0.0.1:8765 (what `evalfleet simulate` prints)"
                ) from None
            address_alone(value, "the simulator URL")
        return value or None

    @field_validator("reuse_from")
    @classmethod
    def _reuse_from(cls, value: list[str]) -> list[str]:
        """Run ids (or '*'), each named once, checked before any key is made of them."""
        for run_id in value:
            if run_id != "*":
                try:
                    check_run_id(run_id)
                except ConfigError as exc:
                    raise ValueError(f"--reuse-from: {exc}") from None
        return list(dict.fromkeys(value))

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_run_id(value)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _options_belong_to_benchmarks(self) -> EvalRequest:
        for name, raw in list(self.benchmark_options.items()):
            options = registry.get(name).options(raw)  # validates
            if name in self.benchmarks:
                continue
            if options == registry.get(name).options(None):
                # the UI form sends every benchmark's defaults: not a choice the user made
                del self.benchmark_options[name]
                continue
            raise ValueError(
                f"options given for benchmark {name!r}, which this request does not run: "
                f"add {name} to the benchmarks or clear its options"
            )
        for name, path in list(self.dataset_paths.items()):
            _known_benchmark(name)
            if name in self.benchmarks:
                continue
            if not path:  # the UI form's empty field of a benchmark not chosen
                del self.dataset_paths[name]
                continue
            raise ValueError(  # else the run reads that benchmark from the Hub, unasked
                f"a dataset path given for benchmark {name!r}, which this request does not "
                f"run: add {name} to the benchmarks or drop its path"
            )
        for model_id in self.endpoints:
            if not model_id.startswith("openai-compatible/"):
                raise ValueError(
                    f"endpoint given for {model_id!r}: endpoints are for openai-compatible/NAME "
                    "models"
                )
            if model_id not in self.models and model_id not in self.judges():
                raise ValueError(f"endpoint given for {model_id!r}, which is not a model here")
        if self.extra_judges and not self.judge_model:
            raise ValueError("extra judges grade beside a primary one: give judge_model first")
        judges = self.judges()
        if len(set(judges)) != len(judges):
            raise ValueError(f"a judge is named twice: {', '.join(judges)}")
        for kind, names in (("model", self.models), ("benchmark", self.benchmarks)):
            twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
            if twice is not None:  # else each of its items is asked, and billed, twice
                raise ValueError(f"{kind} {twice!r} is named twice: name each {kind} once")
        for model_id in self.batch_models:
            if model_id not in self.models and model_id not in judges:
                raise ValueError(
                    f"batch mode asked for {model_id!r}, which is not a model of this request: "
                    "add it with --model, or drop it from --batch"
                )
        return self

    def judges(self) -> list[str]:
        """The judge models: the primary first, then the extra ones."""
        return [self.judge_model, *self.extra_judges] if self.judge_model else []

    def uses_batches(self) -> bool:
        return self.batch or bool(self.batch_models)

    def batched(self, model_id: str, failed_batch_attempts: int = 0) -> bool:
        """Whether a call to this model goes in a batch job (a line that failed in one goes
        online instead when `batch_retry` is "online")."""
        if not (self.batch or model_id in self.batch_models):
            return False
        return not (failed_batch_attempts and self.batch_retry == "online")

    def endpoint_for(self, model_id: str) -> Endpoint | None:
        from evalfleet.providers.registry import Endpoint

        spec = self.endpoints.get(model_id)
        if spec is None:
            return None
        modalities = tuple(spec.modalities) if spec.modalities else None
        return Endpoint(spec.base_url, spec.api_key_env, modalities)

    def dataset_path_for(self, benchmark: str) -> str | None:
        return self.dataset_paths.get(benchmark, self.dataset_path)

    def resolved_run_id(self) -> str:
        return self.run_id or datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S")
