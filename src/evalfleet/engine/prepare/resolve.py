"""Resolving a request into a run, once: every check that can fail before money is spent
(models, keys, the store, the data, modalities, batch support, the run id), and the one
object the rest of the engine works on (`ResolvedRun`). Nothing is written here."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from evalfleet.core.types import ConfigError
from evalfleet.engine.prepare.reading import Reading, read_benchmarks
from evalfleet.engine.prepare.reuse import source_runs
from evalfleet.engine.run.items import BenchmarkData
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.store import manifest as manifests
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.engine.store.storable import check_storable
from evalfleet.providers.registry import (
    ModelConfig,
    load_registry,
    registry_file,
    resolve_api_key,
    resolve_model,
)
from evalfleet.storage import Store, open_store
from evalfleet.tasks.secrets import Secret


@dataclass
class ResolvedRun:
    """A request that passed every check, with what it resolved to: the model
    configurations and keys, each benchmark's data, the opened store and the manifest the run
    will have. Code further down takes this object instead of asking the registries again."""

    request: EvalRequest
    run_id: str
    store: Store
    configs: dict[str, ModelConfig]
    keys: dict[str, Secret]
    data: dict[str, BenchmarkData]
    manifest: Manifest
    api_models: dict[str, str] = field(default_factory=dict)  # model id -> the API's name
    answers: bool = True  # False: only judges are asked (a judge added to a stored run)
    # The samples' places in Ray's object store, when the command put them there ahead of
    # the plan (`evalfleet.engine.generation.online.place_samples`); `generate` takes them.
    samples_placed: tuple[dict[tuple[str, str], tuple[int, int]], list[Any]] | None = None

    def __post_init__(self) -> None:
        self.api_models = {**self.api_models, **{m: c.api_model for m, c in self.configs.items()}}

    @property
    def models(self) -> list[str]:
        return self.request.models

    @property
    def judges(self) -> list[str]:
        return self.request.judges()


def quick_checks(request: EvalRequest, store: Store | None = None) -> dict[str, ModelConfig]:
    """The checks that take milliseconds: models, keys, the store's writability."""
    if not request.batch_wait and not request.uses_batches():
        # else the run asks every model online and waits for it: not what was asked for
        raise ConfigError(
            "--no-wait returns once batch jobs are submitted, and this run has none: add "
            "--batch (or --batch MODEL), or drop --no-wait"
        )
    store = store or open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    configs = resolve_models(request)
    collect_keys(configs)
    check_cap_can_count(request, configs)
    store.check_writable()
    source_runs(store, request.run_id or "", request.reuse_from)  # each named run exists
    return configs


def resolve(
    request: EvalRequest,
    configs: dict[str, ModelConfig] | None = None,
    reading: Reading | None = None,
) -> ResolvedRun:
    """Everything that can fail before money is spent: models, keys, the store, the data,
    modalities, the run id. Writes nothing; every failure is one ConfigError line. `configs`:
    what `quick_checks` of this request returned, if it ran; `reading`: its data being read
    since (`start_reading`)."""
    run_id = request.resolved_run_id()
    request = request.model_copy(update={"run_id": run_id})
    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    configs = configs or quick_checks(request, store)
    keys = collect_keys(configs)
    configs = describe_endpoints(configs, keys)
    data = read_benchmarks(request, reading)
    check_storable(run_id, store, request.models, request.judges(), data)
    check_modalities(request, configs, data)
    check_batch_modes(request, configs)
    manifest = manifests.build_manifest(request, run_id, configs, data)
    manifests.precheck_run(store, manifest, request.extend)
    return ResolvedRun(request, run_id, store, configs, keys, data, manifest)


PAID_APIS = ("openai", "anthropic", "google")  # no free model: a zero price is a missing one


def check_cap_can_count(request: EvalRequest, configs: dict[str, ModelConfig]) -> None:
    """A cost cap counts each answer at its model's price: a model of a paid API with none
    would be asked without limit under a cap the user relies on (one line if so)."""
    if request.max_cost_usd is None:
        return
    for model_id, config in configs.items():
        unpriced = config.price_in_per_mtok == 0 and config.price_out_per_mtok == 0
        if unpriced and config.provider in PAID_APIS and not config.simulated:
            raise ConfigError(
                f"--max-cost-usd cannot limit {model_id}: it has no price, so its answers "
                f"would count as free; give its price_per_mtok in {registry_file()}, or leave "
                "the cap out"
            )


def check_batch_modes(request: EvalRequest, configs: dict[str, ModelConfig]) -> None:
    """Every model asked in batch mode has a provider batch API (one line if not)."""
    if not request.uses_batches():
        return
    from evalfleet.providers.batch import check_batch_support

    for model_id, config in configs.items():
        if request.batched(model_id):
            check_batch_support(config)


def resolve_models(request: EvalRequest, only: list[str] | None = None) -> dict[str, ModelConfig]:
    """Every model the run calls (the judges included), or `only` those, with the request's
    rate limits and timeout."""
    ids = only if only is not None else list(dict.fromkeys([*request.models, *request.judges()]))
    models = load_registry()
    configs: dict[str, ModelConfig] = {}
    for model_id in ids:
        config = resolve_model(
            model_id,
            registry=models,
            simulator_url=request.simulator_url,
            endpoint=request.endpoint_for(model_id),
        )
        if model_id in request.rpm or model_id in request.tpm:
            config = replace(
                config,
                rpm=request.rpm.get(model_id, config.rpm),
                tpm=request.tpm.get(model_id, config.tpm),
            )
        if request.timeout_s is not None:
            config = replace(config, timeout_s=request.timeout_s)
        configs[model_id] = config
    for name in (*request.rpm, *request.tpm):
        if name not in configs and only is None:
            raise ConfigError(f"rate limit given for '{name}', which is not a model of this run")
    return configs


def describe_endpoints(
    configs: dict[str, ModelConfig], keys: dict[str, Secret]
) -> dict[str, ModelConfig]:
    """Ask each ad-hoc OpenAI-compatible server (`--base-url`) what it serves: the model must
    be listed; its context length (vLLM's max_model_len) caps the output budget at half of
    it, and its input modalities, when it states them and the request did not, are used."""
    out = dict(configs)
    for model_id, config in configs.items():
        if config.base_url is None or "modalities_from" not in config.extra:
            continue
        from evalfleet.providers.discovery import describe_endpoint  # the SDKs: only when needed

        served = describe_endpoint(config.base_url, keys[model_id].reveal())
        info = served.get(config.api_model)
        if info is None:
            names = ", ".join(sorted(served)) or "nothing"
            raise ConfigError(
                f"{config.base_url} serves {names}, not {config.api_model}: check the model "
                "name after openai-compatible/"
            )
        changes: dict[str, Any] = {}
        context = info.get("max_model_len") or info.get("context_length")
        if isinstance(context, int) and context > 0:
            cap = max(256, context // 2)
            if config.max_output_tokens:  # a registry entry's own cap wins when lower
                cap = min(cap, config.max_output_tokens)
            changes.update(context_window=context, max_output_tokens=cap)
        said = info.get("input_modalities") or (info.get("architecture") or {}).get(
            "input_modalities"
        )
        if said and config.extra["modalities_from"] == "default":
            changes["modalities"] = frozenset(m for m in said if m in ("text", "image", "audio"))
            changes["extra"] = {**config.extra, "modalities_from": "server"}
        out[model_id] = replace(config, **changes) if changes else config
    return out


def collect_keys(configs: dict[str, ModelConfig]) -> dict[str, Secret]:
    """Read every key now, so a missing one fails before any request is sent."""
    return {model_id: Secret(resolve_api_key(config)) for model_id, config in configs.items()}


def check_modalities(
    request: EvalRequest, configs: dict[str, ModelConfig], data: dict[str, BenchmarkData]
) -> None:
    """Refuse, at planning time, a part a model cannot take (naming the way out if any)."""
    for name, bench_data in data.items():
        kinds = {part.kind for sample in bench_data.samples for part in sample.parts}
        bench = bench_data.benchmark
        for model_id in request.models:
            config = configs[model_id]
            refused = sorted(kinds - config.modalities)
            if not refused:
                continue
            fix = "drop the model or the benchmark"
            if set(refused) <= bench.text_alternatives:
                hint = bench.text_alternative_hint(refused)
                fix = f"{hint}, or drop the model" if hint else fix
            raise ConfigError(
                f"model {config.id} cannot take the {', '.join(refused)} parts that "
                f"{name} sends: {fix}"
            )
    for judge in request.judges():
        if "text" not in configs[judge].modalities:
            raise ConfigError(f"judge model {judge} cannot take text prompts")
