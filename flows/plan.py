"""Planning a run: resolve models, load each benchmark, check what models can take, and
build the work items (answers, and the judgements of answers)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property

from benchmarks import registry
from benchmarks.interface import Benchmark, BenchmarkOptions, Exclusion
from benchmarks.media import downscale_image, sniff_media_type
from core.types import ConfigError, DatasetError, Decoding, Part, Sample
from flows.request import EvalRequest
from providers.registry import ModelConfig, resolve_api_key, resolve_model
from storage.layout import ItemKey
from tasks.secrets import Secret
from tasks.work import WorkItem, parts_digest, request_hash, text_digest


@dataclass
class BenchmarkData:
    """One benchmark of a run: its samples as sent, where they came from, its epochs."""

    benchmark: Benchmark
    options: BenchmarkOptions
    samples: list[Sample]
    revision: str
    source: str
    protocol: str
    decodings: list[Decoding]
    excluded: list[Exclusion] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # sample id -> prompt digest

    def __post_init__(self) -> None:
        if not self.digests:
            self.digests = {s.id: parts_digest(s.parts) for s in self.samples}

    @cached_property
    def by_id(self) -> dict[str, Sample]:
        return {s.id: s for s in self.samples}

    def identity(self) -> dict[str, object]:
        """What identifies the data: revision or fingerprint, and exactly which samples."""
        ids = "\n".join(s.id for s in self.samples).encode()
        return {
            "revision": self.revision,
            "samples": len(self.samples),
            "sample_ids_sha256": hashlib.sha256(ids).hexdigest(),
        }


def resolve_models(request: EvalRequest) -> dict[str, ModelConfig]:
    """Every model the run calls (the judge included), with the request's rate limits."""
    judge = [request.judge_model] if request.judge_model else []
    ids = list(dict.fromkeys([*request.models, *judge]))
    configs: dict[str, ModelConfig] = {}
    for model_id in ids:
        config = resolve_model(
            model_id, simulator_url=request.simulator_url, endpoint=request.endpoint_for(model_id)
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
        if name not in configs:
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
        from providers.discovery import describe_endpoint  # the SDKs: only when needed

        served = describe_endpoint(config.base_url, keys[model_id].reveal())
        info = served.get(config.api_model)
        if info is None:
            names = ", ".join(sorted(served)) or "nothing"
            raise ConfigError(
                f"{config.base_url} serves {names}, not {config.api_model}: check the model "
                "name after openai-compatible/"
            )
        changes: dict = {}
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


def load_benchmarks(request: EvalRequest) -> dict[str, BenchmarkData]:
    loaded: dict[str, BenchmarkData] = {}
    for name in request.benchmarks:
        bench = registry.get(name)
        options = request.options_for(name)
        data = bench.load(request.dataset_path_for(name), options, request.limit)
        samples = data.samples
        if request.max_image_side is not None:
            samples = [downscaled(s, request.max_image_side) for s in samples]
        if not samples:
            raise DatasetError(f"benchmark {name} has no samples to evaluate: check the dataset")
        loaded[name] = BenchmarkData(
            benchmark=bench,
            options=options,
            samples=samples,
            revision=data.revision,
            source=data.source,
            protocol=request.protocol_for(name),
            decodings=request.decodings_for(name),
            excluded=data.excluded,
        )
    return loaded


def downscaled(sample: Sample, max_side: int) -> Sample:
    """The sample with every image shrunk to `max_side` as PIL `thumbnail` does."""
    parts = []
    for part in sample.parts:
        if part.kind == "image" and part.data is not None:
            try:
                data = downscale_image(part.data, max_side)
            except ValueError as exc:
                raise DatasetError(f"sample {sample.id!r}: {exc}") from exc
            part = Part(kind="image", data=data, media_type=sniff_media_type(data))
        parts.append(part)
    return replace(sample, parts=parts)


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
    if request.judge_model and "text" not in configs[request.judge_model].modalities:
        raise ConfigError(f"judge model {request.judge_model} cannot take text prompts")


def judged_benchmarks(request: EvalRequest, data: dict[str, BenchmarkData]) -> set[str]:
    """The benchmarks whose answers this run's judge grades."""
    if not request.judge_model:
        return set()
    return {name for name, d in data.items() if d.benchmark.judge is not None}


def answer_items(
    request: EvalRequest,
    run_id: str,
    api_models: dict[str, str],
    data: dict[str, BenchmarkData],
) -> list[WorkItem]:
    """Every answer of the run, epoch-major within a sample, models interleaved."""
    judged = judged_benchmarks(request, data)
    items: list[WorkItem] = []
    for name, bench_data in data.items():
        for sample in bench_data.samples:
            digest = bench_data.digests[sample.id]
            for epoch, decoding in enumerate(bench_data.decodings):
                for model_id in request.models:
                    items.append(
                        WorkItem(
                            run_id=run_id,
                            key=ItemKey.answer(model_id, name, sample.id, epoch),
                            decoding=decoding,
                            request_hash=request_hash(
                                model=model_id,
                                api_model=api_models[model_id],
                                benchmark=name,
                                dataset_revision=bench_data.revision,
                                prompt_digest=digest,
                                decoding=decoding,
                            ),
                            return_response=name in judged,
                        )
                    )
    return items


def judge_item(
    request: EvalRequest,
    run_id: str,
    api_models: dict[str, str],
    bench_data: BenchmarkData,
    answer: ItemKey,
    answer_store_key: str,
    response: str,
) -> tuple[WorkItem, list[Part]] | None:
    """The judgement of one stored answer, with its grader prompt; None if the benchmark's
    judge does not want this answer (e.g. rule extraction already found one)."""
    judge = bench_data.benchmark.judge
    judge_model = request.judge_model
    if judge is None or not judge_model:
        return None
    sample = bench_data.by_id[answer.sample_id]
    if not judge.wants(sample, response, bench_data.options):
        return None
    parts = [Part.of_text(judge.prompt(sample, response))]
    graded = text_digest(response)
    item = WorkItem(
        run_id=run_id,
        key=answer.judged_by(judge_model),
        decoding=judge.decoding,
        request_hash=request_hash(
            model=judge_model,
            api_model=api_models[judge_model],
            benchmark=answer.benchmark,
            dataset_revision=bench_data.revision,
            prompt_digest=parts_digest(parts),
            decoding=judge.decoding,
            graded=graded,
        ),
        graded=(answer_store_key, graded),
    )
    return item, parts
