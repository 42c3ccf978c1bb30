"""Flow `reevaluate`: find models a provider lists that we have not evaluated yet; run them.

Meant for a schedule (see deployments/serve.py). The first run records what exists as the
baseline unless `evaluate_existing` is set; each later run evaluates only the new names
matching `include`, one run per model, and records a model as seen once its run finished.
A model's run id is recorded before its run starts: a later reevaluation resumes a run that
crashed or was stopped (paying only for what it lacks) and leaves one still running alone.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
from datetime import UTC, datetime
from typing import Any

from prefect import flow, get_run_logger
from pydantic import BaseModel, ConfigDict, Field

from benchmarks.protocols import ProtocolName
from core.types import ConfigError
from flows import heartbeat, runs
from flows.pipeline import evaluate_and_aggregate
from flows.request import DEFAULT_BENCHMARKS, BenchmarkName, EvalRequest, default_store
from providers.discovery import list_provider_models
from providers.registry import (
    load_registry,
    resolve_api_key,
    resolve_model,
    simulator_base_url,
)
from storage import open_store

STATE_KEY = "_reevaluate/seen.json"
PENDING_KEY = "_reevaluate/pending.json"  # model -> the run id evaluating it


class ReevaluateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include: dict[str, list[str]] = Field(
        default={"openai": ["gpt-*"], "anthropic": ["claude-*"], "google": ["gemini-*"]},
        description="per provider, glob patterns of model names worth evaluating",
    )
    benchmarks: list[BenchmarkName] = Field(
        default_factory=lambda: list(DEFAULT_BENCHMARKS), description="benchmarks to run"
    )
    limit: int | None = Field(default=None, ge=1, description="first N samples of each")
    dataset_path: str | None = Field(default=None, description="local copy instead of the Hub")
    protocol: ProtocolName | None = Field(default=None, description="default: each benchmark's")
    epochs: int | None = Field(default=None, ge=1, description="default: each benchmark's")
    store: str = Field(
        default_factory=default_store,
        json_schema_extra=lambda schema: schema.update(default=default_store()),
        description="where records and tables go: an absolute directory, or s3://bucket/prefix",
    )
    s3_endpoint_url: str | None = Field(default=None, description="for MinIO, R2, Ceph, ...")
    simulator_url: str | None = Field(
        default=None, description="list and evaluate the simulator's models instead (dry run)"
    )
    evaluate_existing: bool = Field(
        default=False,
        description="on the first run, evaluate what is listed instead of "
        "recording it as the baseline",
    )


def _list_url(provider: str, request: ReevaluateRequest, registry: dict[str, Any]) -> str | None:
    if request.simulator_url:
        return simulator_base_url(provider, request.simulator_url)
    return ((registry.get("providers") or {}).get(provider) or {}).get("base_url")


def _key_for(provider: str, request: ReevaluateRequest, registry: dict[str, Any]) -> str:
    # Resolve a placeholder of the provider to reuse the registry's key lookup.
    probe = f"{provider}/sim-0" if request.simulator_url else None
    if probe:
        return resolve_api_key(resolve_model(probe, simulator_url=request.simulator_url))
    env = ((registry.get("providers") or {}).get(provider) or {}).get("api_key_env")
    if not env:
        raise ConfigError(f"provider '{provider}' has no api_key_env in deployments/models.yaml")
    key = os.environ.get(env, "")
    if not key:
        raise ConfigError(f"missing API key for provider {provider}: set {env}")
    return key


@flow(name="reevaluate", log_prints=True)
def reevaluate(request: ReevaluateRequest) -> dict[str, Any]:
    """Evaluate the models the providers list that were not evaluated before.

    Args:
        request: which providers and names to watch, what to run them on, where to keep it
    """
    logger = get_run_logger()
    registry = load_registry()
    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    raw_state = store.get(STATE_KEY)
    state: dict[str, list[str]] = json.loads(raw_state) if raw_state else {}
    first_run = raw_state is None
    listed: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    for provider, patterns in request.include.items():
        try:
            key = _key_for(provider, request, registry)
        except ConfigError as exc:  # one provider without a key must not stop the others
            logger.warning("skipping provider %s: %s", provider, exc)
            skipped[provider] = str(exc)
            continue
        names = asyncio.run(
            list_provider_models(
                provider, base_url=_list_url(provider, request, registry), api_key=key
            )
        )
        listed[provider] = [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if first_run and not request.evaluate_existing:
        store.put(STATE_KEY, json.dumps(listed, indent=2, sort_keys=True).encode())
        logger.info("first run: recorded %s as the baseline", listed)
        return {"baseline": listed, "evaluated": [], "needs_registry": [], "skipped": skipped}
    evaluated: list[dict[str, Any]] = []
    needs_registry: list[str] = []
    still_running: list[str] = []
    raw_pending = store.get(PENDING_KEY)
    pending: dict[str, str] = json.loads(raw_pending) if raw_pending else {}
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    for provider, names in listed.items():
        seen = set(state.get(provider, []))
        for name in names:
            if name in seen:
                continue
            model_id = f"{provider}/{name}"
            try:
                resolve_model(model_id, registry=registry, simulator_url=request.simulator_url)
            except ConfigError:
                # Unknown prices and parameters: never spend money on a guess.
                logger.warning(
                    "new model %s is not in deployments/models.yaml: add it to evaluate it",
                    model_id,
                )
                needs_registry.append(model_id)
                continue
            run_id = pending.get(model_id)
            manifest = runs.read_manifest(store, run_id) if run_id else None
            if manifest is not None and heartbeat.liveness(manifest) == "running":
                logger.info("model %s: its run %s is still running; left alone", model_id, run_id)
                still_running.append(model_id)
                continue
            if manifest is not None:
                logger.info(
                    "model %s: resuming its run %s (%s)",
                    model_id,
                    run_id,
                    heartbeat.liveness(manifest),
                )
            else:
                run_id = f"reeval-{stamp}-{provider}-{name}".replace("/", "-")[:128]
                logger.info("new model %s: evaluating in run %s", model_id, run_id)
            pending[model_id] = run_id
            store.put(PENDING_KEY, json.dumps(pending, indent=2, sort_keys=True).encode())
            summary = evaluate_and_aggregate(
                EvalRequest(
                    models=[model_id],
                    benchmarks=request.benchmarks,
                    limit=request.limit,
                    dataset_path=request.dataset_path,
                    protocol=request.protocol,
                    epochs=request.epochs,
                    run_id=run_id,
                    store=request.store,
                    s3_endpoint_url=request.s3_endpoint_url,
                    simulator_url=request.simulator_url,
                )
            )
            state.setdefault(provider, []).append(name)
            store.put(STATE_KEY, json.dumps(state, indent=2, sort_keys=True).encode())
            pending.pop(model_id, None)
            store.put(PENDING_KEY, json.dumps(pending, indent=2, sort_keys=True).encode())
            evaluated.append(
                {"model": model_id, "run_id": run_id, "summaries": summary["summaries"]}
            )
    logger.info("evaluated %d new models", len(evaluated))
    if evaluated:
        from flows.leaderboard import refresh

        refresh(request.store, request.s3_endpoint_url)
    return {
        "baseline": None,
        "evaluated": evaluated,
        "needs_registry": needs_registry,
        "still_running": still_running,
        "skipped": skipped,
    }
