"""Retune a live run: its requests and tokens per minute and its calls in flight.

One function for every way in (`evalfleet limits RUN`, the `limits` flow the stack serves for
the Prefect UI): the figures are checked against the run's models, written to the run's
control file (`tasks.run_control`), which every worker of the run reads about once a second,
and recorded in the run's manifest as an event of its history.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from evalfleet.core.types import UsageError
from evalfleet.engine.store.manifest import code_version, require_manifest
from evalfleet.engine.store.manifest_types import Event
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.tasks.run_control import write_limits


def retune(
    store: Store,
    run_id: str,
    rpm: list[str] | tuple[str, ...] = (),
    tpm: list[str] | tuple[str, ...] = (),
    max_in_flight: str | int | None = None,
) -> str:
    """Applies the figures (`N` for every model of the run, `MODEL=N` for one) and returns
    what was retuned, in words. A figure not given keeps its last value."""
    given_most = max_in_flight not in (None, "", 0)
    most = count("--max-in-flight", str(max_in_flight)) if given_most else None
    if not (rpm or tpm or most):
        raise UsageError("nothing to retune: give --rpm, --tpm or --max-in-flight")
    models = sorted(require_manifest(store, run_id).models)
    rpm_figures = figures("--rpm", list(rpm), models)
    tpm_figures = figures("--tpm", list(tpm), models)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    limits = write_limits(store, run_id, rpm_figures, tpm_figures, most, at)
    said = []
    if limits.rpm:
        said.append(f"rpm {_say(limits.rpm)}")
    if limits.tpm:
        said.append(f"tpm {_say(limits.tpm)}")
    if limits.max_in_flight:
        said.append(f"max in flight {limits.max_in_flight}")
    _record(store, run_id, f"retuned #{limits.seq}: {', '.join(said)}", at)
    return (
        f"run {run_id} retuned (#{limits.seq}): {', '.join(said)}; its workers apply it "
        "within a few seconds"
    )


def count(flag: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{flag} {raw!r}: expected a whole number of at least 1")
    return value


def figures(flag: str, given: list[str], models: list[str]) -> dict[str, int]:
    """`N` (every model: "*") or `MODEL=N`, a model of the run."""
    out: dict[str, int] = {}
    for raw in given:
        model, sep, number = str(raw).rpartition("=")
        if not sep:
            out["*"] = count(flag, str(raw))
            continue
        if model not in models:
            known = ", ".join(models) or "none"
            raise UsageError(f"{flag} {raw!r}: {model!r} is not a model of this run ({known})")
        out[model] = count(flag, number)
    return out


def _record(store: Store, run_id: str, event: str, at: str) -> None:
    """The retune as an event of the run's history (read again just before: the run's
    heartbeat rewrites the manifest while it runs)."""
    manifest = require_manifest(store, run_id)
    retuned = Event(event, at, code_version() or "unknown")
    updated = replace(manifest, history=(*manifest.history, retuned))
    store.put(layout.manifest_key(run_id), updated.to_bytes())


def _say(given: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" if k != "*" else str(v) for k, v in sorted(given.items()))
