"""A judge added to a stored run (`evalfleet judge RUN_ID --judge MODEL`, the `judge` flow).

The run is resolved from the store alone: its plans give every sample's metadata and prompt
digest, its manifest the models' API names, so neither the dataset nor the evaluated models'
keys are needed, and nothing is asked of the evaluated models. The new judge joins the run's
identity as an extension (the first judge stays the primary one); its judgements are planned,
rate limited, checkpointed and priced like the first judge's. A judge added by a command that
grades nothing (every call failed, or nothing for it to grade) leaves the run as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from evalfleet.benchmarks import registry
from evalfleet.core.settings import SIMULATOR_URL
from evalfleet.core.types import ConfigError
from evalfleet.engine.prepare.resolve import (
    ResolvedRun,
    check_batch_modes,
    check_modalities,
    collect_keys,
    resolve_models,
)
from evalfleet.engine.prepare.reuse import source_runs
from evalfleet.engine.run.identity import RunError
from evalfleet.engine.run.outcome import RunFailed
from evalfleet.engine.run.request import EvalRequest, check_run_id
from evalfleet.engine.store.manifest import (
    build_manifest,
    precheck_run,
    read_manifest,
    require_manifest,
)
from evalfleet.engine.store.storable import check_storable
from evalfleet.engine.store.stored import plan_data
from evalfleet.providers.names import check_model_id
from evalfleet.providers.reachable import unreachable
from evalfleet.providers.registry import ModelConfig
from evalfleet.storage import Store, layout


def judge_request(
    store: Store,
    run_id: str,
    judge: str,
    simulator_url: str | None = None,
    reuse_from: list[str] | None = None,
) -> EvalRequest:
    """The run's own request with `judge` added: the primary judge if it had none, else an
    extra one; a judge the run already has is resumed (what it has not judged yet, what
    failed). One line if the judge's name or the run id is not valid, the run is not there or
    it has nothing a judge grades: checked before the run's identity changes. `reuse_from`
    (runs, or '*') takes the judgements those runs hold for the same judge, prompt and answer
    instead of asking; only what this command names, never the run's earlier reuse."""
    check_model_id(judge, "judge")
    check_run_id(run_id)
    request = require_manifest(store, run_id).request
    source_runs(store, run_id, list(reuse_from or ()))  # each named run exists: one line
    if judge in request.models:
        raise RunError(f"{judge} is a model of run {run_id}: a model does not judge itself here")
    judged = [name for name in request.benchmarks if registry.get(name).judge is not None]
    if not judged:
        raise RunError(
            f"run {run_id} has no benchmark with a judge ({', '.join(request.benchmarks)}): "
            "there is nothing for a judge to grade"
        )
    update: dict[str, Any] = {
        "extend": True,
        "store": store.url,
        "s3_endpoint_url": store.endpoint_url,
    }
    update["reuse_from"] = list(reuse_from or ())
    if judge in request.judges():
        pass  # added before: this resumes it (its missing and failed judgements)
    elif request.judge_model:
        update["extra_judges"] = [*request.extra_judges, judge]
    else:
        update["judge_model"] = judge
    # where a simulator listens now, before the one the run recorded (a demo's ended with it)
    simulator_url = simulator_url or SIMULATOR_URL.get()
    if simulator_url:
        update["simulator_url"] = simulator_url
    return EvalRequest(**{**request.model_dump(), **update})


def resolve_stored(request: EvalRequest, store: Store) -> ResolvedRun:
    """The run to judge, from the store: only the judges are resolved and need keys."""
    run_id = request.resolved_run_id()
    existing = require_manifest(store, run_id)
    data = plan_data(store, existing, request)
    judges = resolve_models(request, only=request.judges())
    check_answering(judges)
    check_storable(run_id, store, request.models, request.judges(), data)
    keys = collect_keys(judges)
    check_modalities(request.model_copy(update={"models": []}), judges, data)
    check_batch_modes(request, judges)
    built = build_manifest(request, run_id, judges, data)
    manifest = replace(
        built, models={**existing.models, **built.models}, datasets=existing.datasets
    )
    precheck_run(store, manifest, extend=True)
    return ResolvedRun(
        request, run_id, store, judges, keys, data, manifest, existing.api_models, False
    )


def check_answering(judges: dict[str, ModelConfig]) -> None:
    """One connection to each judge's endpoint before anything is written or asked: a dead one
    is one line (a judge fanned out to a dead port would fail every call, each retried)."""
    checked: set[str] = set()
    for model_id, config in reversed(judges.items()):  # the judge added last first
        where = urlsplit(config.base_url or "").netloc
        if not where or where in checked:
            continue  # no base URL: the provider's own API, not checked here
        checked.add(where)
        why = unreachable(config.base_url or "")
        if why is None:
            continue
        if config.simulated:
            fix = (
                "start `evalfleet simulate` and pass its URL with --simulator-url (the simulator "
                "a demo started ends with the demo)"
            )
        else:
            fix = "check that the endpoint is up, then run the same command again"
        raise ConfigError(
            f"judge {model_id} at {config.base_url} does not answer ({why}): nothing was asked "
            f"or written; {fix}"
        )


class NothingGraded(RunFailed):
    """A judge found nothing to grade: the run is left as it was (not an error: the command
    says so and exits 0)."""

    exit_code = 0


def check_graded(store: Store, request: EvalRequest) -> None:
    """After a judge-only evaluation: raise NothingGraded when the judge added last has no
    judgement stored (its calls failed is told by `check_done` before this)."""
    judge = request.judges()[-1]
    if not _graded(store, request.resolved_run_id(), judge):
        raise NothingGraded(
            f"judge {judge} found nothing to grade in run {request.run_id} (its benchmarks' "
            "judges read none of the stored answers): the run is left as it was"
        )


@contextlib.contextmanager
def left_as_it_was_unless_graded(store: Store, run_id: str, judge: str) -> Iterator[None]:
    """A judge this command adds to the run that stores no judgement (RunFailed: every call
    failed, or nothing to grade) leaves the run as it was: its manifest (identity, history,
    heartbeat) put back, and nothing kept under judgements/{judge}/."""
    before = store.get(layout.manifest_key(run_id))
    existing = read_manifest(store, run_id) if before is not None else None  # damaged: one line
    new = existing is not None and judge not in existing.identity.judges
    try:
        yield
    except RunFailed:
        if before is not None and new and not _graded(store, run_id, judge):
            for key in store.list(_judge_prefix(run_id, judge)):
                store.delete(key)
            store.put(layout.manifest_key(run_id), before)
        raise


def _judge_prefix(run_id: str, judge: str) -> str:
    return f"{layout.stage_prefix(run_id, layout.JUDGE)}{layout.segment(judge)}/"


def _graded(store: Store, run_id: str, judge: str) -> bool:
    """Whether `judge` has any judgement of the run stored (a failed call's record is not)."""
    for key in store.list(_judge_prefix(run_id, judge)):
        name = layout.parse_record_key(run_id, key)
        if name is not None and not name.failed:
            return True
    return False
