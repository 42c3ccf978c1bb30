"""Flow `reevaluate`: find models a provider lists that we have not evaluated yet; run them.

Meant for a schedule (see deployments/serve.py). The first run records what exists as the
baseline unless `evaluate_existing` is set; each later run evaluates only the new names
matching `include`, one run per model, and records a model as seen once its run finished.
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
from flows.pipeline import evaluate_and_aggregate
from flows.request import DEFAULT_BENCHMARKS, BenchmarkName, EvalRequest
from providers.discovery import list_provider_models
from providers.registry import (
    load_registry,
    resolve_api_key,
    resolve_model,
    simulator_base_url,
)
from storage import open_store

STATE_KEY = "_reevaluate/seen.json"


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
    store: str = Field(default="./runs", description="directory, or s3://bucket/prefix")
    s3_endpoint_url: str | None = None
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
            logger.info("new model %s: evaluating", model_id)
            run_id = f"reeval-{stamp}-{provider}-{name}".replace("/", "-")[:128]
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
            evaluated.append(
                {"model": model_id, "run_id": run_id, "summaries": summary["summaries"]}
            )
    logger.info("evaluated %d new models", len(evaluated))
    return {
        "baseline": None,
        "evaluated": evaluated,
        "needs_registry": needs_registry,
        "skipped": skipped,
    }
