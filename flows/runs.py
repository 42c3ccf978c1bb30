"""A run in the store: its identity and manifest, its plan, the state of every item, and
its versioned results.

A run id is a contract. Its identity (models, judge, benchmarks with their options, each
dataset's revision or fingerprint and sample ids, protocols and decodings) is fixed when the
run is created; a later request under the same id must ask the same thing, or grow it on
purpose with `extend` (more models, more epochs). Anything else is refused before a byte is
written.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import registry
from core.types import ConfigError, Decoding, Part, Sample
from flows.plan import BenchmarkData, answer_items, judge_item
from flows.request import EvalRequest
from providers.registry import ModelConfig
from storage import layout
from storage.base import Store
from storage.layout import ItemKey
from tasks.records import decode_record
from tasks.work import WorkItem

MANIFEST_VERSION = 2
STATES = ("done", "failed", "stale", "missing")


class RunError(ConfigError):
    """A run id that cannot be used with this request (one line, naming the way out)."""


# --- identity ------------------------------------------------------------------------------


def run_identity(request: EvalRequest, data: dict[str, BenchmarkData]) -> dict[str, Any]:
    """Everything that changes what is asked: equal identities mean one and the same run."""
    return {
        "models": sorted(request.models),
        "judge_model": request.judge_model,
        "max_image_side": request.max_image_side,
        "benchmarks": {
            name: {
                "options": d.options.model_dump(mode="json"),
                "protocol": d.protocol,
                "decodings": [dec.to_dict() for dec in d.decodings],
                "data": d.identity(),
            }
            for name, d in sorted(data.items())
        },
    }


def identity_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two identities, in words."""
    changes = []
    for field_name in ("models", "judge_model", "max_image_side"):
        if old.get(field_name) != new.get(field_name):
            changes.append(f"{field_name}: {old.get(field_name)} -> {new.get(field_name)}")
    old_b, new_b = old.get("benchmarks", {}), new.get("benchmarks", {})
    if sorted(old_b) != sorted(new_b):
        changes.append(f"benchmarks: {sorted(old_b)} -> {sorted(new_b)}")
    for name in sorted(set(old_b) & set(new_b)):
        a, b = old_b[name], new_b[name]
        if a.get("data") != b.get("data"):
            changes.append(f"{name} data: {_data_words(a.get('data'))} -> {_data_words(b['data'])}")
        if a.get("options") != b.get("options"):
            changes.append(f"{name} options: {a.get('options')} -> {b.get('options')}")
        if a.get("protocol") != b.get("protocol"):
            changes.append(f"{name} protocol: {a.get('protocol')} -> {b.get('protocol')}")
        elif a.get("decodings") != b.get("decodings"):
            old_n, new_n = len(a.get("decodings", [])), len(b.get("decodings", []))
            what = f"{old_n} -> {new_n} epochs" if old_n != new_n else "sampling settings"
            changes.append(f"{name} decodings: {what}")
    return changes


def _data_words(data: dict[str, Any] | None) -> str:
    if not data:
        return "?"
    revision = str(data.get("revision", "?"))
    short = revision[:19] + "…" if len(revision) > 20 else revision
    ids = str(data.get("sample_ids_sha256"))[:8]
    return f"{data.get('samples')} samples at {short} (ids {ids})"


def is_extension(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """New asks everything old asked, plus more models and/or more epochs."""
    if not set(old.get("models", [])) <= set(new.get("models", [])):
        return False
    if any(old.get(k) != new.get(k) for k in ("judge_model", "max_image_side")):
        return False
    old_b, new_b = old.get("benchmarks", {}), new.get("benchmarks", {})
    if sorted(old_b) != sorted(new_b):
        return False
    for name, a in old_b.items():
        b = new_b[name]
        if any(a.get(k) != b.get(k) for k in ("data", "options", "protocol")):
            return False
        old_dec, new_dec = a.get("decodings", []), b.get("decodings", [])
        if new_dec[: len(old_dec)] != old_dec:
            return False
    return True


def check_identity(run_id: str, old: dict[str, Any], new: dict[str, Any], extend: bool) -> bool:
    """True if `new` extends the run, False if it is the same; else a one-line RunError."""
    if old == new:
        return False
    if extend and is_extension(old, new):
        return True
    detail = "; ".join(identity_changes(old, new)) or "the identity format changed"
    if is_extension(old, new):
        fix = "pass --extend to grow the run, or choose a new --run-id"
    else:
        fix = "resume it with the same settings, or choose a new --run-id"
    raise RunError(f"run id {run_id} already exists with a different request ({detail}): {fix}")


# --- manifest ------------------------------------------------------------------------------


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


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def build_manifest(
    request: EvalRequest,
    run_id: str,
    configs: dict[str, ModelConfig],
    data: dict[str, BenchmarkData],
) -> dict[str, Any]:
    return {
        "manifest_version": MANIFEST_VERSION,
        "run_id": run_id,
        "created_at": now_iso(),
        "identity": run_identity(request, data),
        "request": request.model_dump(mode="json"),
        "code_version": code_version(),
        "datasets": {
            name: {
                "source": d.source,
                "revision": d.revision,
                "samples": len(d.samples),
                "excluded": [{"id": e.id, "reason": e.reason} for e in d.excluded],
            }
            for name, d in data.items()
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
        "history": [],
    }


def read_manifest(store: Store, run_id: str) -> dict[str, Any] | None:
    data = store.get(layout.manifest_key(run_id))
    if data is None:
        return None
    try:
        manifest = json.loads(data)
    except ValueError:
        raise RunError(
            f"run {run_id} has an unreadable manifest.json in {store.describe()}: move it "
            "aside or choose a new --run-id"
        ) from None
    if manifest.get("manifest_version") != MANIFEST_VERSION:
        raise RunError(
            f"run {run_id} in {store.describe()} was written by an older evalfleet "
            f"(manifest version {manifest.get('manifest_version', 1)}): choose a new --run-id"
        )
    return manifest


def precheck_run(store: Store, manifest: dict[str, Any], extend: bool) -> dict[str, Any] | None:
    """The existing manifest if the new one may use its run id; raises RunError if not.
    Writes nothing."""
    from flows.heartbeat import held_elsewhere

    existing = read_manifest(store, manifest["run_id"])
    if existing is not None:
        check_identity(manifest["run_id"], existing["identity"], manifest["identity"], extend)
        busy = held_elsewhere(existing)
        if busy:
            raise RunError(
                f"run {manifest['run_id']} is running: {busy}; wait for it or stop it (a "
                "process that died is seen as crashed within a minute, then this resumes it)"
            )
    return existing


def open_run(
    store: Store, manifest: dict[str, Any], data: dict[str, BenchmarkData], extend: bool
) -> str:
    """Create the run, or resume or extend it; writes the manifest and the plans.
    Returns "new", "resumed" or "extended"."""
    run_id = manifest["run_id"]
    existing = precheck_run(store, manifest, extend)
    event = "created"
    if existing is None:
        manifest = {**manifest, "history": [_event("created", manifest)]}
        if not store.put_if_absent(layout.manifest_key(run_id), _dumps(manifest)):
            # another process created it meanwhile: check against that one
            return open_run(store, manifest, data, extend)
    else:
        event = "extended" if existing["identity"] != manifest["identity"] else "resumed"
        updated = {
            **existing,
            "identity": manifest["identity"],
            "request": manifest["request"],
            "datasets": manifest["datasets"],
            "models": manifest["models"],
            "code_version": manifest["code_version"],
            "history": [*existing.get("history", []), _event(event, manifest)],
        }
        store.put(layout.manifest_key(run_id), _dumps(updated))
    for name, bench_data in data.items():
        write_plan(store, run_id, name, bench_data)
    return {"created": "new"}.get(event, event)


def _event(name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return {"event": name, "at": now_iso(), "code_version": manifest["code_version"]}


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, indent=2, sort_keys=True).encode()


# --- plans ---------------------------------------------------------------------------------


def write_plan(store: Store, run_id: str, name: str, bench_data: BenchmarkData) -> None:
    """What the run asks of one benchmark, so aggregation never needs the dataset again:
    each sample's id, group, target, choices, metadata and prompt digest."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            "sample_id": [s.id for s in bench_data.samples],
            "group_id": [s.group_id for s in bench_data.samples],
            "target": [s.target for s in bench_data.samples],
            "choices": [json.dumps(s.choices) for s in bench_data.samples],
            "metadata": [
                json.dumps(s.metadata, ensure_ascii=False, sort_keys=True, default=str)
                for s in bench_data.samples
            ],
            "prompt_digest": [bench_data.digests[s.id] for s in bench_data.samples],
        }
    )
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    store.put(layout.plan_key(run_id, name), buffer.getvalue())


def read_plan(store: Store, run_id: str, name: str) -> tuple[list[Sample], dict[str, str]]:
    """The samples (without media) and prompt digests one benchmark of a run asked."""
    import pandas as pd

    blob = store.get(layout.plan_key(run_id, name))
    if blob is None:
        raise RunError(f"run {run_id} has no plan for {name} in {store.describe()}")
    frame = pd.read_parquet(io.BytesIO(blob))
    samples = [
        Sample(
            id=row.sample_id,
            parts=[],
            target=row.target,
            group_id=row.group_id,
            choices=json.loads(row.choices),
            metadata=json.loads(row.metadata),
        )
        for row in frame.itertuples(index=False)
    ]
    return samples, dict(zip(frame["sample_id"], frame["prompt_digest"], strict=True))


# --- the state of every item ---------------------------------------------------------------


@dataclass
class Reconciled:
    """Each item's state in the store: done, failed (terminal error), stale or missing."""

    state: dict[ItemKey, str] = field(default_factory=dict)
    record_key: dict[ItemKey, str] = field(default_factory=dict)
    stale_keys: list[str] = field(default_factory=list)
    undecodable: list[str] = field(default_factory=list)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # decoded, when read

    def counts(self) -> dict[tuple[str, str, str], Counter[str]]:
        """(stage, model, benchmark) -> state counts."""
        out: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
        for key, state in self.state.items():
            out[(key.stage, key.model, key.benchmark)][state] += 1
        return out

    def todo(self, items: list[WorkItem], retry_errors: bool = True) -> list[WorkItem]:
        wanted = {"missing", "stale", "failed"} if retry_errors else {"missing", "stale"}
        return [item for item in items if self.state[item.key] in wanted]


@dataclass
class Listing:
    """One listing of a run's records: per item, hash prefix -> key, done and failed apart."""

    ok: dict[ItemKey, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    failed: dict[ItemKey, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    empty: set[str] = field(default_factory=set)  # zero-byte records (known from S3 sizes)


def list_records(store: Store, run_id: str, stages: tuple[str, ...]) -> Listing:
    listing = Listing()
    for stage in stages:
        # Pages are parsed while the store fetches the next ones (S3 listings are slow).
        for page in store.iter_pages(layout.stage_prefix(run_id, stage)):
            for key, size in page:
                name = layout.parse_record_key(run_id, key)
                if name is None:
                    continue
                if size == 0:
                    listing.empty.add(key)
                target = listing.failed if name.failed else listing.ok
                previous = target[name.item].get(name.hash_prefix)
                if previous is None or key > previous:  # the latest failure wins (ms in key)
                    target[name.item][name.hash_prefix] = key
    return listing


def stored_spend(store: Store, listing: Listing) -> float:
    """What a run's stored records cost, answers and judgements, stale ones included (each
    record is read: only done when a budget needs it)."""
    sides = (listing.ok, listing.failed)
    keys = [key for side in sides for per_item in side.values() for key in per_item.values()]
    total = 0.0
    for blob in store.get_many(keys).values():
        record = decode_record(blob or b"")
        if record is not None:
            total += float(record.get("cost_usd") or 0.0)
    return total


def reconcile(store: Store, listing: Listing, items: list[WorkItem], *, read: bool) -> Reconciled:
    """Classify items from a listing. With `read`, every record counted as done or failed is
    read and decoded (kept in `records`), and an undecodable one counts as missing; without,
    only what the listing shows (a zero-byte record) is caught."""
    out = Reconciled()
    for item in items:
        key, prefix = item.key, item.hash_prefix
        ok, failed = listing.ok.get(key, {}), listing.failed.get(key, {})
        if prefix in ok:
            out.state[key], out.record_key[key] = "done", ok[prefix]
        elif prefix in failed:
            out.state[key], out.record_key[key] = "failed", failed[prefix]
        else:
            out.state[key] = "stale" if ok else "missing"
        out.stale_keys.extend(k for h, k in ok.items() if h != prefix)
    if read:
        blobs = store.get_many(list(out.record_key.values()))
        for record_key in out.record_key.values():
            record = decode_record(blobs.get(record_key) or b"")
            if record is None:
                out.undecodable.append(record_key)
            else:
                out.records[record_key] = record
    else:
        out.undecodable = [k for k in out.record_key.values() if k in listing.empty]
    bad = set(out.undecodable)
    for item_key, record_key in list(out.record_key.items()):
        if record_key in bad:
            out.state[item_key] = "missing"
            del out.record_key[item_key]
    return out


def quarantine(store: Store, run_id: str, keys: list[str]) -> None:
    """Move undecodable records aside (kept under quarantine/) so they can be asked again."""
    for key in keys:
        data = store.get(key)
        if data is not None:
            store.put(layout.quarantine_key(run_id, key), data)
        store.delete(key)


# --- a stored run, rebuilt without its datasets ------------------------------------------


@dataclass
class StoredRun:
    """A run rebuilt from its manifest and plans: what it asked, and the state of it."""

    manifest: dict[str, Any]
    request: EvalRequest
    data: dict[str, BenchmarkData]
    api_models: dict[str, str]
    answers: list[WorkItem]
    answer_state: Reconciled
    judgements: list[WorkItem]
    judge_state: Reconciled

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]


def load_run(store: Store, run_id: str) -> StoredRun:
    """Rebuild a stored run's plan (for aggregate and status) and read its records."""
    manifest = read_manifest(store, run_id)
    if manifest is None:
        raise RunError(
            f"no run '{run_id}' in {store.describe()}: `evalfleet runs --store {store.url}` "
            "lists the runs there"
        )
    request = EvalRequest(**manifest["request"])
    identity = manifest["identity"]["benchmarks"]
    data: dict[str, BenchmarkData] = {}
    for name in request.benchmarks:
        samples, digests = read_plan(store, run_id, name)
        bench = registry.get(name)
        data[name] = BenchmarkData(
            benchmark=bench,
            options=bench.options(identity[name]["options"]),
            samples=samples,
            revision=identity[name]["data"]["revision"],
            source=manifest["datasets"][name]["source"],
            protocol=identity[name]["protocol"],
            decodings=[Decoding(**d) for d in identity[name]["decodings"]],
            digests=digests,
        )
    api_models = {m: info["api_model"] for m, info in manifest["models"].items()}
    answers = answer_items(request, run_id, api_models, data)
    stages = (layout.ANSWER, layout.JUDGE) if request.judge_model else (layout.ANSWER,)
    listing = list_records(store, run_id, stages)
    answer_state = reconcile(store, listing, answers, read=True)
    judgements = [j for j, _ in planned_judgements(request, run_id, api_models, data, answer_state)]
    judge_state = reconcile(store, listing, judgements, read=True)
    return StoredRun(
        manifest, request, data, api_models, answers, answer_state, judgements, judge_state
    )


def planned_judgements(
    request: EvalRequest,
    run_id: str,
    api_models: dict[str, str],
    data: dict[str, BenchmarkData],
    answer_state: Reconciled,
) -> list[tuple[WorkItem, list[Part]]]:
    """The judgements the stored answers call for, with their grader prompts (read from
    `answer_state.records`): one per answer done whose benchmark's judge wants it."""
    if not request.judge_model:
        return []
    out = []
    for key, record_key in answer_state.record_key.items():
        record = answer_state.records.get(record_key)
        if answer_state.state[key] != "done" or record is None or record.get("error"):
            continue
        made = judge_item(
            request,
            run_id,
            api_models,
            data[key.benchmark],
            key,
            record_key,
            record.get("response") or "",
        )
        if made is not None:
            out.append(made)
    return out
