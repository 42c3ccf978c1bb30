"""`evalfleet limits RUN`: retune a live run's rate limits and concurrency.

Writes the run's control file (`tasks.run_control`); every worker of the run reads it about
once a second, and the run's driver as often for --max-in-flight, so the new figures hold
within a few seconds wherever the run runs. A figure not given keeps its last value. The
retune is recorded in the run's manifest too: an event of its history,
`retuned #N: rpm …, tpm …, max in flight …` (the control file keeps each one's figures).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from evalfleet.core.types import UsageError


def add_commands(sub: argparse._SubParsersAction) -> None:
    from evalfleet.cli.options import add_store_options

    limits = sub.add_parser(
        "limits",
        help="retune a live run's rate limits and concurrency (within seconds)",
        description="Retune a running run: its requests and tokens per minute, per model or "
        "for every model, and how many calls it keeps in flight. Every worker of the run "
        "applies them within a few seconds; the run's control file keeps each retune.",
    )
    limits.add_argument("run_id", metavar="RUN")
    limits.add_argument(
        "--rpm",
        action="append",
        default=[],
        metavar="[MODEL=]N",
        help="requests per minute: N for every model of the run, MODEL=N for one (repeatable)",
    )
    limits.add_argument(
        "--tpm",
        action="append",
        default=[],
        metavar="[MODEL=]N",
        help="tokens per minute: N for every model of the run, MODEL=N for one (repeatable)",
    )
    limits.add_argument(
        "--max-in-flight", metavar="N", help="calls in flight at most, for the whole run"
    )
    add_store_options(limits)
    limits.set_defaults(func=cmd_limits)


def cmd_limits(args: argparse.Namespace) -> int:
    from evalfleet.cli.options import store_from
    from evalfleet.engine.store.manifest import require_manifest
    from evalfleet.tasks.run_control import write_limits

    most = _count("--max-in-flight", args.max_in_flight) if args.max_in_flight else None
    if not (args.rpm or args.tpm or most):
        raise UsageError("nothing to retune: give --rpm, --tpm or --max-in-flight")
    store = store_from(args)
    models = _run_models(require_manifest(store, args.run_id))
    rpm = _figures("--rpm", args.rpm, models)
    tpm = _figures("--tpm", args.tpm, models)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    limits = write_limits(store, args.run_id, rpm, tpm, most, at)
    said = []
    if limits.rpm:
        said.append(f"rpm {_say(limits.rpm)}")
    if limits.tpm:
        said.append(f"tpm {_say(limits.tpm)}")
    if limits.max_in_flight:
        said.append(f"max in flight {limits.max_in_flight}")
    _record(store, args.run_id, f"retuned #{limits.seq}: {', '.join(said)}", at)
    print(
        f"run {args.run_id} retuned (#{limits.seq}): {', '.join(said)}; its "
        "workers apply it within a few seconds"
    )
    return 0


def _record(store: Any, run_id: str, event: str, at: str) -> None:
    """The retune as an event of the run's history (read again just before: the run's
    heartbeat rewrites the manifest while it runs)."""
    from dataclasses import replace

    from evalfleet.engine.store.manifest import code_version, require_manifest
    from evalfleet.engine.store.manifest_types import Event
    from evalfleet.storage import layout

    manifest = require_manifest(store, run_id)
    retuned = Event(event, at, code_version() or "unknown")
    updated = replace(manifest, history=(*manifest.history, retuned))
    store.put(layout.manifest_key(run_id), updated.to_bytes())


def _count(flag: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{flag} {raw!r}: expected a whole number of at least 1")
    return value


def _figures(flag: str, given: list[str], models: list[str]) -> dict[str, int]:
    """`N` (every model: "*") or `MODEL=N`, a model of the run."""
    out: dict[str, int] = {}
    for raw in given:
        model, sep, number = raw.rpartition("=")
        if not sep:
            out["*"] = _count(flag, raw)
            continue
        if model not in models:
            known = ", ".join(models) or "none"
            raise UsageError(f"{flag} {raw!r}: {model!r} is not a model of this run ({known})")
        out[model] = _count(flag, number)
    return out


def _run_models(manifest: Any) -> list[str]:
    """The model ids a run asks (its models and judges), from its manifest."""
    return sorted(manifest.models)


def _say(figures: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" if k != "*" else str(v) for k, v in sorted(figures.items()))
