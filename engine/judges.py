"""A judge added to a stored run (`evalfleet judge RUN_ID --judge MODEL`, the `judge` flow).

The run is resolved from the store alone: its plans give every sample's metadata and prompt
digest, its manifest the models' API names, so neither the dataset nor the evaluated models'
keys are needed, and nothing is asked of the evaluated models. The new judge joins the run's
identity as an extension (the first judge stays the primary one); its judgements are planned,
rate limited, checkpointed and priced like the first judge's.
"""

from __future__ import annotations

from benchmarks import registry
from engine.identity import RunError
from engine.manifest import build_manifest, precheck_run, read_manifest, require_manifest
from engine.request import EvalRequest, check_run_id
from engine.resolve import (
    ResolvedRun,
    check_batch_modes,
    check_modalities,
    collect_keys,
    remember,
    resolve_models,
)
from engine.stored import plan_data
from providers.names import check_model_id
from storage import Store


def judge_request(
    store: Store, run_id: str, judge: str, simulator_url: str | None = None
) -> EvalRequest:
    """The run's own request with `judge` added: the primary judge if it had none, else an
    extra one; a judge the run already has is resumed (what it has not judged yet, what
    failed). One line if the judge's name or the run id is not valid, the run is not there or
    it has nothing a judge grades: checked before the run's identity changes."""
    check_model_id(judge, "judge")
    check_run_id(run_id)
    manifest = require_manifest(store, run_id)
    request = EvalRequest(**manifest["request"])
    if judge in request.models:
        raise RunError(f"{judge} is a model of run {run_id}: a model does not judge itself here")
    judged = [name for name in request.benchmarks if registry.get(name).judge is not None]
    if not judged:
        raise RunError(
            f"run {run_id} has no benchmark with a judge ({', '.join(request.benchmarks)}): "
            "there is nothing for a judge to grade"
        )
    update: dict = {"extend": True, "store": store.url, "s3_endpoint_url": store.endpoint_url}
    if judge in request.judges():
        pass  # added before: this resumes it (its missing and failed judgements)
    elif request.judge_model:
        update["extra_judges"] = [*request.extra_judges, judge]
    else:
        update["judge_model"] = judge
    if simulator_url:
        update["simulator_url"] = simulator_url
    return EvalRequest(**{**request.model_dump(), **update})


def resolve_stored(request: EvalRequest, store: Store) -> ResolvedRun:
    """The run to judge, from the store: only the judges are resolved and need keys."""
    run_id = request.resolved_run_id()
    existing = read_manifest(store, run_id) or {}
    data = plan_data(store, existing, request)
    judges = resolve_models(request, only=request.judges())
    keys = collect_keys(judges)
    check_modalities(request.model_copy(update={"models": []}), judges, data)
    check_batch_modes(request, judges)
    api_models = {m: info["api_model"] for m, info in existing["models"].items()}
    manifest = build_manifest(request, run_id, judges, data)
    manifest["models"] = {**existing["models"], **manifest["models"]}
    manifest["datasets"] = existing["datasets"]
    precheck_run(store, manifest, extend=True)
    run = ResolvedRun(request, run_id, store, judges, keys, data, manifest, api_models, False)
    return remember(run)
