"""Reevaluation: find models a provider lists that the store has not evaluated yet.

The first reevaluation records what exists as the baseline unless `evaluate_existing` is set;
each later one evaluates only the new names matching `include`, one run per model, and records
a model as seen once its run finished. A model's run id is recorded before its run starts: a
later reevaluation resumes a run that crashed or was stopped (paying only for what it lacks)
and leaves one still running alone. The `reevaluate` flow runs each model's evaluation as a
subflow; this module decides which, and keeps the record.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalfleet.benchmarks import registry as benchmarks
from evalfleet.benchmarks.protocols import ProtocolName
from evalfleet.core.types import ConfigError
from evalfleet.engine.run.request import BenchmarkName, EvalRequest, plain_optionals
from evalfleet.engine.store import heartbeat
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.providers.discovery import list_provider_models
from evalfleet.providers.registry import (
    load_registry,
    resolve_api_key,
    resolve_model,
    simulator_base_url,
)
from evalfleet.storage import Store, store_url

if TYPE_CHECKING:
    from evalfleet.engine.pipeline import JobResult

log = logging.getLogger("evalfleet")
STATE_KEY = "_reevaluate/seen.json"
PENDING_KEY = "_reevaluate/pending.json"  # model -> the run id evaluating it


class ReevaluateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=plain_optionals)

    include: dict[str, list[str]] = Field(
        default={"openai": ["gpt-*"], "anthropic": ["claude-*"], "google": ["gemini-*"]},
        description="per provider, glob patterns of model names worth evaluating",
    )
    benchmarks: list[BenchmarkName] = Field(
        default_factory=benchmarks.default_names, description="benchmarks to run"
    )
    limit: int | None = Field(default=None, ge=1, description="first N samples of each")
    dataset_path: str | None = Field(default=None, description="local copy instead of the Hub")
    protocol: ProtocolName | None = Field(default=None, description="default: each benchmark's")
    epochs: int | None = Field(default=None, ge=1, description="default: each benchmark's")
    store: str = Field(
        default_factory=store_url,
        json_schema_extra=lambda schema: schema.update(default=store_url()),
        description="where records and tables go: a directory, or s3://bucket/prefix "
        "(empty: $EVALFLEET_STORE, else ./runs)",
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
    mode: Literal["new", "ranked"] = Field(
        default="new",
        description="new: evaluate the models the providers list that were not evaluated; "
        "ranked: re-run every model on the leaderboard (or those of `models`) on the item "
        "set it was ranked on, under a dated run id, then run drift",
    )
    models: list[str] = Field(
        default_factory=list,
        description="ranked mode: only these model ids (empty: every model with results)",
    )
    notify_url: str | None = Field(
        default=None,
        description="ranked mode: the webhook drift POSTs its flagged rows to (JSON)",
    )
    notify_block: str | None = Field(
        default=None,
        description="ranked mode: a Prefect notification block, BLOCK-TYPE/NAME (e.g. "
        "custom-webhook/evalfleet-drift), drift notifies with its flagged rows, as text",
    )


@dataclass(frozen=True)
class Candidate:
    model_id: str
    provider: str
    name: str
    run_id: str


@dataclass
class Reevaluation:
    """One reevaluation of a store: what the providers list, what is new, what was done."""

    request: ReevaluateRequest
    store: Store
    listed: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    evaluated: list[dict[str, Any]] = field(default_factory=list)
    needs_registry: list[str] = field(default_factory=list)
    still_running: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.registry = load_registry()
        raw_state = self.store.get(STATE_KEY)
        self.seen: dict[str, list[str]] = json.loads(raw_state) if raw_state else {}
        self.first_run = raw_state is None
        raw_pending = self.store.get(PENDING_KEY)
        self.pending: dict[str, str] = json.loads(raw_pending) if raw_pending else {}

    def discover(self) -> None:
        """List each provider's models through its SDK; a provider without a key is skipped."""
        for provider, patterns in self.request.include.items():
            try:
                key = self._key_for(provider)
            except ConfigError as exc:  # one provider without a key must not stop the others
                log.warning("skipping provider %s: %s", provider, exc)
                self.skipped[provider] = str(exc)
                continue
            names = asyncio.run(
                list_provider_models(provider, base_url=self._list_url(provider), api_key=key)
            )
            self.listed[provider] = [
                n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)
            ]

    def baseline_only(self) -> bool:
        """On the first reevaluation (unless asked to evaluate what exists): record the
        listing as the baseline and evaluate nothing."""
        if not (self.first_run and not self.request.evaluate_existing):
            return False
        self._save(STATE_KEY, self.listed)
        log.info("first run: recorded %s as the baseline", self.listed)
        return True

    def candidates(self) -> Iterator[Candidate]:
        """The new models to evaluate now, each with its run id (recorded before it runs)."""
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        for provider, names in self.listed.items():
            seen = set(self.seen.get(provider, []))
            for name in (n for n in names if n not in seen):
                model_id = f"{provider}/{name}"
                try:
                    resolve_model(
                        model_id, registry=self.registry, simulator_url=self.request.simulator_url
                    )
                except ConfigError:
                    # Unknown prices and parameters: never spend money on a guess.
                    log.warning(
                        "new model %s is not in the model registry: add it to evaluate it",
                        model_id,
                    )
                    self.needs_registry.append(model_id)
                    continue
                run_id = self.pending.get(model_id)
                manifest = read_manifest(self.store, run_id) if run_id else None
                if manifest is not None and heartbeat.liveness(manifest) == "running":
                    log.info("model %s: its run %s is still running; left alone", model_id, run_id)
                    self.still_running.append(model_id)
                    continue
                if manifest is not None and run_id is not None:
                    state = heartbeat.liveness(manifest)
                    log.info("model %s: resuming its run %s (%s)", model_id, run_id, state)
                else:
                    run_id = reevaluation_run_id(stamp, provider, name)
                    log.info("new model %s: evaluating in run %s", model_id, run_id)
                self.pending[model_id] = run_id
                self._save(PENDING_KEY, self.pending)
                yield Candidate(model_id, provider, name, run_id)

    def eval_request(self, candidate: Candidate) -> EvalRequest:
        request = self.request
        return EvalRequest(
            models=[candidate.model_id],
            benchmarks=request.benchmarks,
            limit=request.limit,
            dataset_path=request.dataset_path,
            protocol=request.protocol,
            epochs=request.epochs,
            run_id=candidate.run_id,
            store=request.store,
            s3_endpoint_url=request.s3_endpoint_url,
            simulator_url=request.simulator_url,
        )

    def done(self, candidate: Candidate, result: JobResult) -> None:
        """The candidate's run finished: seen from now on."""
        self.seen.setdefault(candidate.provider, []).append(candidate.name)
        self._save(STATE_KEY, self.seen)
        self.pending.pop(candidate.model_id, None)
        self._save(PENDING_KEY, self.pending)
        self.evaluated.append(
            {
                "model": candidate.model_id,
                "run_id": candidate.run_id,
                "summaries": (result.tables or {}).get("summaries", {}),
            }
        )

    def report(self, baseline: bool = False) -> dict[str, Any]:
        if baseline:
            return {
                "baseline": self.listed,
                "evaluated": [],
                "needs_registry": [],
                "skipped": self.skipped,
            }
        log.info("evaluated %d new models", len(self.evaluated))
        return {
            "baseline": None,
            "evaluated": self.evaluated,
            "needs_registry": self.needs_registry,
            "still_running": self.still_running,
            "skipped": self.skipped,
        }

    def _save(self, key: str, value: Any) -> None:
        self.store.put(key, json.dumps(value, indent=2, sort_keys=True).encode())

    def _list_url(self, provider: str) -> str | None:
        if self.request.simulator_url:
            return simulator_base_url(provider, self.request.simulator_url)
        return ((self.registry.get("providers") or {}).get(provider) or {}).get("base_url")

    def _key_for(self, provider: str) -> str:
        if self.request.simulator_url:  # a placeholder of the provider reuses the key lookup
            probe = resolve_model(f"{provider}/sim-0", simulator_url=self.request.simulator_url)
            return resolve_api_key(probe)
        env = ((self.registry.get("providers") or {}).get(provider) or {}).get("api_key_env")
        if not env:
            raise ConfigError(f"provider '{provider}' has no api_key_env in the model registry")
        key = os.environ.get(env, "")
        if not key:
            raise ConfigError(f"missing API key for provider {provider}: set {env}")
        return key


def reevaluation_run_id(stamp: str, provider: str, name: str) -> str:
    """A valid run id for a new model: a name's `/ : @` (allowed in model names, not in run
    ids: `ft:gpt-4o-mini:org:x`) become `-`."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"reeval-{stamp}-{provider}-{name}")[:128]
