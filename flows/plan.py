"""Planning a run: validate, load samples, build work items, reconcile with the store."""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.base import Sample
from benchmarks.registry import BenchmarkTask, LoadOptions, get_task
from flows.request import EvalRequest
from providers.registry import ConfigError, ModelConfig, resolve_api_key, resolve_model
from storage import layout
from storage.base import Store
from tasks.secrets import Secret
from tasks.work import WorkItem, parts_digest, request_hash

STATES = ("done", "failed", "stale", "missing")


class RunError(ValueError):
    """A run id that cannot be used with this request."""


@dataclass
class Loaded:
    tasks: dict[str, BenchmarkTask]
    samples: dict[str, list[Sample]]
    revisions: dict[str, str]


def resolve_models(request: EvalRequest) -> dict[str, ModelConfig]:
    """Every model of the request, with the request's rate-limit overrides applied."""
    configs: dict[str, ModelConfig] = {}
    for model_id in request.models:
        config = resolve_model(model_id, simulator_url=request.simulator_url)
        if model_id in request.rpm or model_id in request.tpm:
            config = replace(
                config,
                rpm=request.rpm.get(model_id, config.rpm),
                tpm=request.tpm.get(model_id, config.tpm),
            )
        configs[model_id] = config
    for name in (*request.rpm, *request.tpm):
        if name not in configs:
            raise ConfigError(f"rate limit given for '{name}', which is not a model of this run")
    return configs


def collect_keys(configs: dict[str, ModelConfig]) -> dict[str, Secret]:
    """Read every key now, so a missing one fails before any request is sent."""
    return {model_id: Secret(resolve_api_key(config)) for model_id, config in configs.items()}


def load_benchmarks(request: EvalRequest) -> Loaded:
    tasks = {name: get_task(name) for name in request.benchmarks}
    samples: dict[str, list[Sample]] = {}
    revisions: dict[str, str] = {}
    for name, task in tasks.items():
        path = request.dataset_path_for(name)
        options = LoadOptions(
            dataset_path=path,
            limit=request.limit,
            max_image_side=request.max_image_side,
            text_alternatives=frozenset(request.text_alternatives),
        )
        samples[name] = task.load(options)
        revisions[name] = task.revision(path)
    return Loaded(tasks, samples, revisions)


def check_modalities(configs: dict[str, ModelConfig], loaded: Loaded) -> None:
    """Refuse, at planning time, a part a model cannot take (naming the way out if any)."""
    for benchmark, samples in loaded.samples.items():
        kinds = {part.kind for sample in samples for part in sample.parts}
        task = loaded.tasks[benchmark]
        for config in configs.values():
            refused = sorted(kinds - config.modalities)
            if not refused:
                continue
            fix = "drop the model or the benchmark"
            if set(refused) <= task.text_alternatives:
                flags = " ".join(f"--text-alternative {kind}" for kind in refused)
                fix = (
                    f"pass {flags} to send {benchmark}'s text stand-ins instead, or drop the model"
                )
            raise ConfigError(
                f"model {config.id} cannot take the {', '.join(refused)} parts that "
                f"{benchmark} sends: {fix}"
            )


def build_items(
    request: EvalRequest, run_id: str, configs: dict[str, ModelConfig], loaded: Loaded
) -> list[WorkItem]:
    decodings = request.epoch_decodings()
    items: list[WorkItem] = []
    for benchmark, samples in loaded.samples.items():
        for sample in samples:
            digest = parts_digest(sample.parts)
            for epoch, decoding in enumerate(decodings):
                for model_id, config in configs.items():
                    items.append(
                        WorkItem(
                            run_id=run_id,
                            model=model_id,
                            benchmark=benchmark,
                            sample_id=sample.id,
                            epoch=epoch,
                            decoding=decoding,
                            request_hash=request_hash(
                                model=model_id,
                                api_model=config.api_model,
                                benchmark=benchmark,
                                dataset_revision=loaded.revisions[benchmark],
                                prompt_digest=digest,
                                decoding=decoding,
                            ),
                        )
                    )
    return items


def code_version() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def build_manifest(
    request: EvalRequest, run_id: str, configs: dict[str, ModelConfig], loaded: Loaded
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "identity": request.identity(),
        "request": request.model_dump(mode="json"),
        "code_version": code_version(),
        "datasets": {
            name: {"revision": loaded.revisions[name], "samples": len(loaded.samples[name])}
            for name in loaded.samples
        },
        "models": {
            model_id: {
                "provider": c.provider,
                "api_model": c.api_model,
                "base_url": c.base_url,
                "simulated": c.simulated,
            }
            for model_id, c in configs.items()
        },
    }


def read_manifest(store: Store, run_id: str) -> dict[str, Any] | None:
    data = store.get(layout.manifest_key(run_id))
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        raise RunError(
            f"run {run_id} has an unreadable manifest.json in {store.describe()}"
        ) from None


def open_run(store: Store, manifest: dict[str, Any]) -> bool:
    """Create the run, or check that an existing one asked the same thing. True if new."""
    run_id = manifest["run_id"]
    encoded = json.dumps(manifest, indent=2, sort_keys=True).encode()
    if store.put_if_absent(layout.manifest_key(run_id), encoded):
        return True
    existing = read_manifest(store, run_id) or {}
    check_identity(run_id, existing.get("identity", {}), manifest["identity"])
    # Same question, maybe new inputs (dataset copy, template, code): record what this
    # resume used, so aggregate and status rebuild the plan the completions answered.
    updated = {
        **existing,
        "request": manifest["request"],
        "datasets": manifest["datasets"],
        "models": manifest["models"],
        "code_version": manifest["code_version"],
        "resumed_at": [*existing.get("resumed_at", []), manifest["created_at"]],
    }
    store.put(layout.manifest_key(run_id), json.dumps(updated, indent=2, sort_keys=True).encode())
    return False


def check_identity(run_id: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    if old == new:
        return
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    detail = "; ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed)
    raise RunError(
        f"run id {run_id} already exists with a different request ({detail}): "
        "pass the same settings to resume it, or choose a new --run-id"
    )


@dataclass
class Reconciled:
    """Each planned item's state in the store."""

    state: dict[tuple[str, str, str, int], str]
    record_key: dict[tuple[str, str, str, int], str]
    stale_keys: list[str] = field(default_factory=list)

    def counts(self) -> dict[tuple[str, str], Counter[str]]:
        out: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        for (model, benchmark, _, _), state in self.state.items():
            out[(model, benchmark)][state] += 1
        return out

    def todo(self, items: list[WorkItem], retry_errors: bool = True) -> list[WorkItem]:
        wanted = {"missing", "stale", "failed"} if retry_errors else {"missing", "stale"}
        return [item for item in items if self.state[item.identity()] in wanted]


def reconcile(store: Store, run_id: str, items: list[WorkItem]) -> Reconciled:
    """Classify every item from one listing: done, failed (terminal error), stale or missing."""
    ok: dict[tuple[str, str, str, int], dict[str, str]] = defaultdict(dict)
    failed: dict[tuple[str, str, str, int], dict[str, str]] = defaultdict(dict)
    # Pages are parsed while the store fetches the next ones (S3 listings are the slow part).
    for page in store.iter_pages(layout.completions_prefix(run_id)):
        for key in page:
            name = layout.parse_completion_key(run_id, key)
            if name is None:
                continue
            ident = (name.model, name.benchmark, name.sample_id, name.epoch)
            target = failed if name.failed else ok
            previous = target[ident].get(name.hash_prefix)
            if previous is None or key > previous:  # the latest failure wins (keys end in ms)
                target[ident][name.hash_prefix] = key
    reconciled = Reconciled(state={}, record_key={})
    for item in items:
        ident = item.identity()
        prefix = item.hash_prefix
        if prefix in ok.get(ident, {}):
            reconciled.state[ident] = "done"
            reconciled.record_key[ident] = ok[ident][prefix]
        elif prefix in failed.get(ident, {}):
            reconciled.state[ident] = "failed"
            reconciled.record_key[ident] = failed[ident][prefix]
        elif ok.get(ident):
            reconciled.state[ident] = "stale"
        else:
            reconciled.state[ident] = "missing"
        reconciled.stale_keys.extend(k for h, k in ok.get(ident, {}).items() if h != prefix)
    return reconciled


def precheck(request: EvalRequest, store: Store) -> None:
    """Everything `evaluate` checks before its first request, without writing anything."""
    run_id = request.resolved_run_id()
    configs = resolve_models(request)
    collect_keys(configs)
    loaded = load_benchmarks(request)
    check_modalities(configs, loaded)
    existing = read_manifest(store, run_id)
    if existing is not None:
        check_identity(run_id, existing.get("identity", {}), request.identity())


@dataclass
class StoredRun:
    """A run rebuilt from its manifest: the plan its completions answered, and their state."""

    request: EvalRequest
    loaded: Loaded
    items: list[WorkItem]
    reconciled: Reconciled


def load_run(store: Store, run_id: str) -> StoredRun:
    """Rebuild a stored run's plan (for aggregate and status), or say how to find runs."""
    manifest = read_manifest(store, run_id)
    if manifest is None:
        raise RunError(
            f"no run '{run_id}' in {store.describe()}: `evalfleet runs --store {store.url}` "
            "lists the runs there"
        )
    request = EvalRequest(**manifest["request"])
    loaded = load_benchmarks(request)
    items = build_items(request, run_id, resolve_models(request), loaded)
    return StoredRun(request, loaded, items, reconcile(store, run_id, items))
