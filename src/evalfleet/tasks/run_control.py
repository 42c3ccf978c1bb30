"""A live run's limits, retuned from outside it: the run's control file.

`evalfleet limits RUN --rpm N --tpm N --max-in-flight N` writes `{run_id}/control.json` in the
run's store (any process that can write the store may: the command line, a deployment the UI
starts). Every worker of the run reads it about once a second (`Retunes`) and applies it to its
leases: the rates go to the key's shared budget with the next lease, a ceiling to its window.
The driver reads it as often for --max-in-flight. So a retune holds on every worker within
about two seconds, whatever runs the run (a cluster, or the command's own process).

The file, version 1: `{"version": 1, "seq": N, "written_at": ISO, "rpm": {MODEL|"*": N},
"tpm": {MODEL|"*": N}, "max_in_flight": N|null, "history": [...]}`. "*" is every model of the
run (a model's own entry wins). `seq` grows with each retune; `history` keeps each one.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from evalfleet.storage.base import Store

log = logging.getLogger("evalfleet.control")
VERSION = 1
EVERY_S = 1.0  # how often a reader looks at the file


def control_key(run_id: str) -> str:
    return f"{run_id}/control.json"


@dataclass(frozen=True)
class RunLimits:
    """What the control file says; a figure left out keeps what the run started with."""

    seq: int = 0
    rpm: dict[str, int] = field(default_factory=dict)
    tpm: dict[str, int] = field(default_factory=dict)
    max_in_flight: int | None = None

    def rpm_for(self, model: str) -> int | None:
        return self.rpm.get(model, self.rpm.get("*"))

    def tpm_for(self, model: str) -> int | None:
        return self.tpm.get(model, self.tpm.get("*"))

    @classmethod
    def of(cls, data: dict[str, Any]) -> RunLimits:
        def figures(value: Any) -> dict[str, int]:
            if not isinstance(value, dict):
                return {}
            return {str(k): int(v) for k, v in value.items() if _positive(v)}

        most = data.get("max_in_flight")
        return cls(
            seq=int(data.get("seq", 0)) if _positive(data.get("seq")) else 0,
            rpm=figures(data.get("rpm")),
            tpm=figures(data.get("tpm")),
            max_in_flight=int(most) if _positive(most) else None,
        )


def _positive(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def read_control(store: Store, run_id: str) -> dict[str, Any] | None:
    """The control file as written, or None (absent or unreadable: the run keeps its limits)."""
    try:
        blob = store.get(control_key(run_id))
        data = json.loads(blob) if blob is not None else None
    except (ValueError, OSError) as exc:
        log.warning("the control file of run %s cannot be read (%s): limits unchanged", run_id, exc)
        return None
    return data if isinstance(data, dict) and data.get("version") == VERSION else None


def read_limits(store: Store, run_id: str) -> RunLimits | None:
    data = read_control(store, run_id)
    return RunLimits.of(data) if data is not None else None


def write_limits(
    store: Store,
    run_id: str,
    rpm: dict[str, int],
    tpm: dict[str, int],
    max_in_flight: int | None,
    at: str,
) -> RunLimits:
    """Add a retune to the run's control file (figures not given keep their last value)."""
    before = read_control(store, run_id) or {"version": VERSION, "seq": 0, "history": []}
    retune = {"at": at, "rpm": rpm, "tpm": tpm, "max_in_flight": max_in_flight}
    data = {
        "version": VERSION,
        "seq": int(before.get("seq", 0)) + 1,
        "written_at": at,
        "rpm": {**(before.get("rpm") or {}), **rpm},
        "tpm": {**(before.get("tpm") or {}), **tpm},
        "max_in_flight": max_in_flight or before.get("max_in_flight"),
        "history": [*(before.get("history") or []), retune],
    }
    store.put(control_key(run_id), json.dumps(data, indent=2).encode())
    return RunLimits.of(data)


class Retunes:
    """The run's control file, read at most once every `every_s` (a call in between gets the
    last reading)."""

    def __init__(
        self, store: Store, run_id: str, max_in_flight: int, every_s: float = EVERY_S
    ) -> None:
        self.store, self.run_id, self.every_s = store, run_id, every_s
        self._started_with = max_in_flight
        self._read_at = float("-inf")
        self._limits: RunLimits | None = None

    def current(self) -> RunLimits | None:
        now = time.monotonic()
        if now - self._read_at >= self.every_s:
            self._read_at = now
            self._limits = read_limits(self.store, self.run_id) or self._limits
        return self._limits

    def max_in_flight(self) -> int:
        limits = self.current()
        if limits is None or limits.max_in_flight is None:
            return self._started_with
        return limits.max_in_flight
