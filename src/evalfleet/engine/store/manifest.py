"""A run's manifest (identity, request, datasets, models, history, heartbeat: its type is
`manifest_types.Manifest`) read, created and updated, and its plans (the samples each
benchmark asks, so aggregation never needs the dataset again)."""

from __future__ import annotations

import io
import json
import subprocess
from array import array
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalfleet.core.settings import CODE_VERSION
from evalfleet.core.types import Sample
from evalfleet.engine.run.identity import RunError, check_identity, run_identity
from evalfleet.engine.store.manifest_types import (
    DatasetInfo,
    Event,
    Manifest,
    ModelInfo,
    OtherManifestVersion,
    UnreadableManifest,
)
from evalfleet.storage import layout
from evalfleet.storage.base import Store

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from evalfleet.engine.run.items import BenchmarkData
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.providers.registry import ModelConfig


def code_version() -> str:
    """The checkout's commit, or EVALFLEET_CODE_VERSION where there is no checkout (an
    image built with `--build-arg CODE_VERSION=$(git rev-parse --short=12 HEAD)`), else
    "unknown". Installed from a wheel, the packages' folder is no checkout: git is not asked
    there, where it would name the commit of whatever repository holds that folder."""
    if CODE_VERSION.get():
        version: str = CODE_VERSION.get()
        return version
    root = Path(__file__).resolve().parents[4]  # src/evalfleet/engine/store/ -> checkout
    if not (root / ".git").exists():  # .git: a clone's folder, or a worktree's file
        return "unknown"
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


class ManifestVersionError(RunError):
    """A run whose manifest another version of evalfleet wrote (one line, the way out)."""

    def __init__(self, store: Store, run_id: str, found: OtherManifestVersion) -> None:
        self.newer = found.newer
        which, fix = (
            ("a newer", "upgrade evalfleet to use it")
            if found.newer
            else ("an older", "choose a new --run-id")
        )
        super().__init__(
            f"run {run_id} in {store.describe()} was written by {which} evalfleet "
            f"(manifest version {found.version}): {fix}"
        )


def build_manifest(
    request: EvalRequest,
    run_id: str,
    configs: dict[str, ModelConfig],
    data: dict[str, BenchmarkData],
) -> Manifest:
    """The manifest a run of `request` over `data` will have (not stored here)."""
    return Manifest.of_request(
        request,
        run_id=run_id,
        created_at=now_iso(),
        identity=run_identity(request, data),
        code_version=code_version(),
        datasets={
            name: DatasetInfo(d.source, d.revision, len(d.samples), tuple(d.excluded))
            for name, d in data.items()
        },
        models={
            model_id: ModelInfo(c.api_model, c.provider, c.base_url, c.simulated)
            for model_id, c in configs.items()
        },
    )


def read_manifest(store: Store, run_id: str) -> Manifest | None:
    """The run's manifest, None if there is no run of that id; DamagedFile if its bytes are
    not a manifest, ManifestVersionError if another version of evalfleet wrote it."""
    from evalfleet.engine.store.damage import manifest_damaged

    key = layout.manifest_key(run_id)
    data = store.get(key)
    if data is None:
        return None
    try:
        manifest = Manifest.from_bytes(data, key)
    except OtherManifestVersion as exc:
        raise ManifestVersionError(store, run_id, exc) from None
    except UnreadableManifest as exc:
        raise manifest_damaged(store, key, exc.problem) from None
    return manifest if manifest.run_id else replace(manifest, run_id=run_id)


def require_manifest(store: Store, run_id: str) -> Manifest:
    """The run's manifest; one line when there is no such run, or when the run's files are
    there without their manifest (DamagedFile: it names what is missing)."""
    manifest = read_manifest(store, run_id)
    if manifest is not None:
        return manifest
    if store.list_dirs(run_id):
        from evalfleet.engine.store.damage import manifest_damaged

        key = layout.manifest_key(run_id)
        raise manifest_damaged(store, key, "missing, though the run's files are there")
    raise RunError(
        f"no run '{run_id}' in {store.describe()}: `evalfleet runs --store {store.url}` "
        "lists the runs there"
    )


def precheck_run(store: Store, manifest: Manifest, extend: bool) -> Manifest | None:
    """The existing manifest if the new one may use its run id; raises RunError if not.
    Writes nothing."""
    from evalfleet.engine.store.heartbeat import held_elsewhere

    existing = read_manifest(store, manifest.run_id)
    if existing is not None:
        check_identity(manifest.run_id, existing.identity, manifest.identity, extend)
        busy = held_elsewhere(existing)
        if busy:
            raise RunError(
                f"run {manifest.run_id} is running: {busy}; wait for it or stop it (a "
                "process that died is seen as crashed within a minute, then this resumes it)"
            )
    return existing


def open_run(store: Store, manifest: Manifest, data: dict[str, BenchmarkData], extend: bool) -> str:
    """Create the run, or resume or extend it; writes the manifest and the plans.
    Returns "new", "resumed" or "extended"."""
    run_id = manifest.run_id
    existing = precheck_run(store, manifest, extend)
    event = "created"
    if existing is None:
        created = replace(manifest, history=(_event("created", manifest),))
        if not store.put_if_absent(layout.manifest_key(run_id), created.to_bytes()):
            # another process created it meanwhile: check against that one
            return open_run(store, manifest, data, extend)
    else:
        event = "extended" if existing.identity != manifest.identity else "resumed"
        updated = replace(
            existing,
            identity=manifest.identity,
            stored_request=manifest.stored_request,
            datasets=manifest.datasets,
            models=manifest.models,
            code_version=manifest.code_version,
            history=(*existing.history, _event(event, manifest)),
        )
        store.put(layout.manifest_key(run_id), updated.to_bytes())
    for name, bench_data in data.items():
        write_plan(store, run_id, name, bench_data)
    return {"created": "new"}.get(event, event)


def _event(name: str, manifest: Manifest) -> Event:
    return Event(name, now_iso(), manifest.code_version or "unknown")


def write_plan(store: Store, run_id: str, name: str, bench_data: BenchmarkData) -> None:
    """What the run asks of one benchmark, so aggregation, a judge added later and the run
    report never need the dataset again (see `plan_table`)."""
    made = bench_data.plan_later
    store.put(layout.plan_key(run_id, name), made() if made else plan_table(bench_data))
    bench_data.plan_later = None  # stored: not held for the run


def plan_table(bench_data: BenchmarkData) -> bytes:
    """One benchmark's plan as Parquet: each sample's id, group, target, choices, metadata,
    prompt digest and prompt text (its media are not kept)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    samples = bench_data.samples
    columns: dict[str, list[str | None]] = {
        "sample_id": [s.id for s in samples],
        "group_id": [s.group_id for s in samples],
        "target": [s.target for s in samples],
        "choices": [json.dumps(s.choices) for s in samples],
        "metadata": [
            json.dumps(s.metadata, ensure_ascii=False, sort_keys=True, default=str) for s in samples
        ],
        "prompt_digest": [bench_data.digests[s.id] for s in samples],
        "prompt": [bench_data.prompts.get(s.id, "") for s in samples],
    }
    schema = _plan_schema()
    table = pa.Table.from_arrays([string_array(columns[f.name]) for f in schema], schema=schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def string_array(values: Sequence[str | None]) -> pa.StringArray:
    """An Arrow string column built from its buffers: `pyarrow.array` on Python objects
    imports pandas (50 MB and a second in a run's driver) to check for its types."""
    import pyarrow as pa

    encoded = [(v or "").encode() for v in values]
    offsets = array("i", [0])
    for blob in encoded:
        offsets.append(offsets[-1] + len(blob))
    validity = None
    if any(v is None for v in values):
        bits = bytearray((len(values) + 7) // 8)
        for i, v in enumerate(values):
            if v is not None:
                bits[i // 8] |= 1 << (i % 8)
        validity = pa.py_buffer(bytes(bits))
    return pa.StringArray.from_buffers(
        len(values), pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(encoded)), validity
    )


def _plan_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("sample_id", pa.string()),
            ("group_id", pa.string()),
            ("target", pa.string()),
            ("choices", pa.string()),
            ("metadata", pa.string()),
            ("prompt_digest", pa.string()),
            ("prompt", pa.string()),
        ]
    )


@dataclass
class Plan:
    """What one benchmark of a run asked, read back: samples without media, each prompt's
    digest and text ("" in plans written before the text was kept)."""

    samples: list[Sample]
    digests: dict[str, str]
    prompts: dict[str, str]


def check_plans(store: Store, manifest: Manifest) -> None:
    """DamagedFile when one of the run's plans is missing or not whole (its footer does not
    read): what a reader of the run's results checks without reading every plan."""
    import pyarrow.parquet as pq

    from evalfleet.engine.store.damage import plan_damaged, problem_of

    run_id = manifest.run_id
    for name in manifest.identity.benchmarks:
        key = layout.plan_key(run_id, name)
        blob = store.get(key)
        if blob is None:
            raise plan_damaged(store, key, "missing")
        try:
            pq.read_metadata(io.BytesIO(blob))
        except (ValueError, OSError) as exc:
            raise plan_damaged(store, key, f"not a plan: {problem_of(exc)}") from None


def read_plan(store: Store, run_id: str, name: str) -> Plan:
    """One benchmark's plan; DamagedFile if its bytes are not a plan."""
    import pyarrow.parquet as pq

    from evalfleet.engine.store.damage import plan_damaged, problem_of

    key = layout.plan_key(run_id, name)
    blob = store.get(key)
    if blob is None:
        raise plan_damaged(store, key, "missing")
    try:
        columns = pq.read_table(io.BytesIO(blob)).to_pydict()
        ids = columns["sample_id"]
        samples = [
            Sample(
                id=sample_id,
                parts=[],
                target=target,
                group_id=group_id,
                choices=json.loads(choices),
                metadata=json.loads(metadata),
            )
            for sample_id, target, group_id, choices, metadata in zip(
                ids,
                columns["target"],
                columns["group_id"],
                columns["choices"],
                columns["metadata"],
                strict=True,
            )
        ]
        digests = dict(zip(ids, columns["prompt_digest"], strict=True))
    except KeyError as exc:
        raise plan_damaged(store, key, f"no column {exc}") from None
    except (ValueError, OSError, TypeError) as exc:  # ArrowInvalid is a ValueError
        raise plan_damaged(store, key, f"not a plan: {problem_of(exc)}") from None
    prompts = columns.get("prompt") or [""] * len(ids)
    return Plan(samples, digests, dict(zip(ids, prompts, strict=True)))
