"""A run's judge panel as it was asked for (`evalfleet judge --judge A --judge B --judge C
--panel majority`), kept in `{run}/panel.json`: its rule and members. A later `--panel` on the
same run must name the same panel, or it is refused in one line before any judge is asked
(two panels of one run would print two different majority verdicts under one name)."""

from __future__ import annotations

import json
from typing import Any

from evalfleet.core.types import ConfigError
from evalfleet.storage.base import Store


def panel_key(run_id: str) -> str:
    return f"{run_id}/panel.json"


def read_panel(store: Store, run_id: str) -> dict[str, Any] | None:
    """The recorded panel ({"rule", "members"}), None when the run has none."""
    data = store.get(panel_key(run_id))
    if data is None:
        return None
    try:
        panel = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        panel = None
    if not (
        isinstance(panel, dict)
        and isinstance(panel.get("rule"), str)
        and isinstance(panel.get("members"), list)
        and all(isinstance(m, str) for m in panel["members"])
    ):
        raise ConfigError(
            f"{panel_key(run_id)} in {store.describe()} is damaged: restore it from a backup "
            "or delete it to record the panel again"
        )
    return panel


def check_panel_record(store: Store, run_id: str, rule: str, members: list[str]) -> None:
    """Refuse a panel other than the one the run recorded (the order of members is free)."""
    recorded = read_panel(store, run_id)
    if recorded is None:
        return
    if recorded["rule"] != rule or sorted(recorded["members"]) != sorted(members):
        raise ConfigError(
            f"run {run_id} has the panel {recorded['rule']} of {', '.join(recorded['members'])}"
            f", not {rule} of {', '.join(members)}: judge with that panel again, or judge "
            "into another run"
        )


def record_panel(store: Store, run_id: str, rule: str, members: list[str]) -> None:
    """Keep the panel with the run (once: a resume with the same panel leaves it as it was)."""
    document = {"rule": rule, "members": list(members)}
    store.put_if_absent(panel_key(run_id), json.dumps(document, indent=2).encode())


def panel_label(panel: dict[str, Any]) -> str:
    """How reports name the panel: `panel (majority of A, B, C)`."""
    return f"panel ({panel['rule']} of {', '.join(panel['members'])})"
