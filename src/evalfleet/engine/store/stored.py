"""A run read back from the store: its manifest and plans rebuilt without the datasets, and
the state and records of every item (what `aggregate`, `status` and the batch poller use)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalfleet.benchmarks import registry
from evalfleet.engine.run.items import AnswerSpace, BenchmarkData, answer_items, planned_judgements
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.run.state import (
    AnswerCounts,
    Listing,
    Reconciled,
    answer_counts,
    list_records,
    reconcile,
    reconcile_keys,
    unscored_keys,
)
from evalfleet.engine.store.manifest import read_plan, require_manifest
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.tasks.work import WorkItem


@dataclass
class StoredRun:
    """A run rebuilt from its manifest and plans: what it asked, and the state of it."""

    manifest: Manifest
    request: EvalRequest
    store: Store
    data: dict[str, BenchmarkData]
    api_models: dict[str, str]
    answers: list[WorkItem]
    answer_state: Reconciled
    judgements: list[WorkItem]
    judge_state: Reconciled
    judge_listing: Listing = field(default_factory=Listing)  # when read without records
    # records no table scores, whose calls were billed (`unscored_keys`; when read without)
    unscored: list[str] = field(default_factory=list)
    listed: AnswerCounts | None = None  # answers done and failed as `runs` counts them

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def models(self) -> list[str]:
        return self.request.models

    @property
    def judges(self) -> list[str]:
        return self.request.judges()


def load_run(store: Store, run_id: str, *, read: bool = True) -> StoredRun:
    """Rebuild a stored run's plan and the state of its items (`read_states`)."""
    run = plan_run(store, run_id)
    read_states(run, read=read)
    return run


def read_states(run: StoredRun, *, read: bool = True) -> None:
    """List a planned run's records and take the state of each item. With `read` (status,
    the report) every record is read and decoded, and the judgements its answers call for are
    planned; without (aggregation, which reads them shard by shard), the answers' state is
    the listing's and the judge records are only listed (`judge_listing`)."""
    stages = (layout.ANSWER, layout.JUDGE) if run.judges else (layout.ANSWER,)
    listing = list_records(run.store, run.run_id, stages)
    run.listed = answer_counts(listing)
    if not read:  # aggregation's million answers: classified from their keys and hashes
        space = AnswerSpace(run)
        pairs = (pair for name in space.names for pair in space.keys_and_hashes(name))
        run.answer_state = reconcile_keys(listing, pairs)
        run.judge_listing = _judgements_of(listing) if run.judges else Listing()
        run.unscored = unscored_keys(listing, run.answer_state.record_key)
        return
    answers = answer_items(run)
    run.answer_state = reconcile(run.store, listing, answers, read=True)
    run.answers = answers
    run.judgements = [j for j, _ in planned_judgements(run, run.answer_state)]
    run.judge_state = reconcile(run.store, listing, run.judgements, read=True)


def _judgements_of(listing: Listing) -> Listing:
    """The judge records of a listing: what scoring looks up for each answer's judgements (the
    answers' own entries, a million for the largest runs, are not kept for it)."""
    return Listing(
        ok={k: v for k, v in listing.ok.items() if k.stage == layout.JUDGE},
        failed={k: v for k, v in listing.failed.items() if k.stage == layout.JUDGE},
        empty=listing.empty,
    )


def plan_run(store: Store, run_id: str) -> StoredRun:
    """A stored run's manifest and plans alone: no work item listed, no record read (the
    report of a large run reads its records a chunk at a time)."""
    manifest = require_manifest(store, run_id)
    request = manifest.request
    data = plan_data(store, manifest, request)
    return StoredRun(
        manifest, request, store, data, manifest.api_models, [], Reconciled(), [], Reconciled()
    )


def plan_data(store: Store, manifest: Manifest, request: EvalRequest) -> dict[str, BenchmarkData]:
    """Each benchmark of a stored run as it asked it, from its plans: no dataset needed."""
    from evalfleet.engine.store.damage import manifest_damaged

    data: dict[str, BenchmarkData] = {}
    for name in request.benchmarks:
        asked = manifest.identity.benchmarks.get(name)
        dataset = manifest.datasets.get(name)
        if asked is None or dataset is None:
            key = layout.manifest_key(manifest.run_id)
            raise manifest_damaged(
                store, key, f"its request asks {name}, which its identity or datasets lack"
            )
        plan = read_plan(store, manifest.run_id, name)
        bench = registry.get(name)
        data[name] = BenchmarkData(
            benchmark=bench,
            options=bench.options(dict(asked.options)),
            samples=plan.samples,
            revision=asked.data.revision,
            source=dataset.source,
            protocol=asked.protocol or bench.protocol,
            decodings=list(asked.decodings),
            digests=plan.digests,
            prompts=plan.prompts,
            excluded=list(dataset.excluded),
        )
    return data
