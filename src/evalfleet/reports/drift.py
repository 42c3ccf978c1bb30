"""What changed since the last run (`evalfleet drift`): each model's latest run paired with its
previous run on the same benchmark and scoring mode, one row each, in
`leaderboard/drift.csv`.

- `diff` is after − before on the units both runs hold, `low`/`high` its paired 95 %
  interval and `p` the paired test: `metrics.intervals.paired` and `metrics.paired.paired_test`,
  the functions compare and ranks use. `changed`: that interval excludes 0.
- `version_changed`: the provider-reported model versions (model id and OpenAI's
  `system_fingerprint`) differ between the two runs; `judge_changed`: the judge model or the
  versions it reported differ.
- Two runs on different item sets (another dataset revision, other samples, other options)
  are not paired: the row says why in `reason` and flags nothing.

`flagged` is any of the three; `--notify URL` POSTs the flagged rows (`notify`).
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import pandas as pd

from evalfleet.metrics.intervals import UnitValues, paired
from evalfleet.metrics.paired import paired_test
from evalfleet.reports.board_rows import StoreRows, read_runs, units_key
from evalfleet.reports.history import Point, points
from evalfleet.storage.base import Store

DRIFT_KEY = "leaderboard/drift.csv"
COLUMNS = [
    "model",
    "benchmark",
    "scoring",
    "item_set",
    "run_before",
    "run_after",
    "before",
    "after",
    "diff",
    "low",
    "high",
    "p",
    "test",
    "changed",
    "version_before",
    "version_after",
    "version_changed",
    "judge_before",
    "judge_after",
    "judge_changed",
    "flagged",
    "reason",
]
TIMEOUT_S = 10.0


class NotifyError(Exception):
    """The webhook did not take the drift document (one line: the URL and why)."""


def drift_rows(store: Store, stored: StoreRows | None = None) -> list[dict[str, Any]]:
    """One row per (model, benchmark, scoring) with at least two runs: the latest and the
    one before it. `stored`: the store's rows, when read already."""
    stored = stored if stored is not None else read_runs(store)
    found, units = points(store, found=stored), stored.units
    by_key: dict[tuple[str, str, str], list[Point]] = {}
    for p in found:  # in time order
        by_key.setdefault((p.model, p.benchmark, p.scoring), []).append(p)
    rows = []
    for runs in by_key.values():
        if len(runs) >= 2:
            rows.append(_row(runs[-2], runs[-1], units))
    return rows


def _row(before: Point, after: Point, units: dict[Any, UnitValues]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "model": after.model,
        "benchmark": after.benchmark,
        "scoring": after.scoring,
        "item_set": after.item_set,
        "run_before": before.run_id,
        "run_after": after.run_id,
        "before": before.value,
        "after": after.value,
        "diff": None,
        "low": None,
        "high": None,
        "p": None,
        "test": None,
        "changed": False,
        "version_before": " | ".join(before.versions),
        "version_after": " | ".join(after.versions),
        "version_changed": before.versions != after.versions,
        "judge_before": _judge(before),
        "judge_after": _judge(after),
        "judge_changed": _judge(before) != _judge(after),
        "reason": "",
    }
    if before.item_set != after.item_set:
        row["reason"] = f"not paired: different item sets ({before.items} | {after.items})"
    else:
        ua = units.get(units_key(after.run_id, after.model, after.benchmark, after.scoring))
        ub = units.get(units_key(before.run_id, before.model, before.benchmark, before.scoring))
        found = paired(ua, ub) if ua is not None and ub is not None else None
        test = paired_test(ua, ub) if found is not None and ua and ub else None
        if found is None or test is None:
            row["reason"] = "not paired: no unit in common"
        else:
            row.update(diff=found.difference, low=found.low, high=found.high)
            row.update(p=test.p, test=test.name)
            if found.low is None or found.high is None:
                row["reason"] = f"no interval: {found.why}"
            else:
                row["changed"] = found.low > 0 or found.high < 0
    row["flagged"] = bool(row["changed"] or row["version_changed"] or row["judge_changed"])
    return row


def _judge(point: Point) -> str:
    if not point.judge:
        return ""
    return f"{point.judge} ({', '.join(point.judge_versions) or '?'})"


def drift_table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=COLUMNS)


def write_drift(store: Store, rows: Sequence[dict[str, Any]]) -> str:
    """`leaderboard/drift.csv` of the store (written even when nothing is flagged)."""
    buffer = io.StringIO()
    drift_table(rows).to_csv(buffer, index=False)
    store.put(DRIFT_KEY, buffer.getvalue().encode())
    return DRIFT_KEY


def document(store: Store, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON a webhook gets: the flagged rows, and where the whole table is."""
    flagged = [row for row in rows if row["flagged"]]
    return {
        "event": "evalfleet.drift",
        "store": store.describe(),
        "table": DRIFT_KEY,
        "flagged": [{k: _plain(v) for k, v in row.items()} for row in flagged],
        "text": summary_text(flagged),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def notify(url: str, doc: dict[str, Any], timeout_s: float = TIMEOUT_S) -> bool:
    """POST `doc` to `url` when it lists a flagged row (True when posted); a URL that does
    not answer, or answers with an error status, is one NotifyError line."""
    if not doc["flagged"]:
        return False
    request = urllib.request.Request(
        url,
        data=json.dumps(doc).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise NotifyError(f"--notify {url} answered HTTP {exc.code}: check the webhook") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise NotifyError(
            f"--notify {url} did not answer within {timeout_s:g} s ({why}): check the URL; "
            f"the drift table was written to {DRIFT_KEY}"
        ) from None
    return True


def summary_text(rows: Sequence[dict[str, Any]]) -> str:
    """One line per row: what changed, in words."""
    lines = []
    for row in rows:
        what = []
        if row["changed"]:
            what.append(f"headline {row['before']:.3f} -> {row['after']:.3f}")
        if row["version_changed"]:
            what.append(f"version {row['version_before']} -> {row['version_after']}")
        if row["judge_changed"]:
            what.append(f"judge {row['judge_before']} -> {row['judge_after']}")
        if not what:
            what.append(row["reason"] or "no change")
        lines.append(
            f"{row['model']} on {row['benchmark']} ({row['scoring']}), "
            f"{row['run_before']} -> {row['run_after']}: {'; '.join(what)}"
        )
    return "\n".join(lines)
