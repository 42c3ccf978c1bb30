"""A run's last line: how many of its items ended in errors, and the exit code that goes with
it (5 when some did, unless `--allow-errors`; `cli.main` lists every code)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

ERRORS_EXIT = 5  # items ended in errors: distinct from 0 (done), 2, 3, 4, 130 / 143 and 1


def end_line(
    run_id: str,
    tables: Mapping[str, Any],
    errors: Counter[str],
    *,
    allow_errors: bool,
    rerun: str,
    code: int = 0,
) -> tuple[str, int]:
    """The last line of a run whose tables were written, and its exit code. `tables` is the
    aggregation (its answer counts), `errors` this command's terminal errors by kind, `rerun`
    the command that asks the errored items again, `code` the exit code the run already ends
    with (3: its cost cap), which stays."""
    failed = int(tables.get("failed") or 0)
    total = sum(int(tables.get(key) or 0) for key in ("done", "failed", "stale", "missing"))
    if not failed:
        done = int(tables.get("done") or 0)
        if done < total:  # a cost cap, or a run stopped early: not "N items" as if all were
            return (
                f"run {run_id}: {done} of {total} {_items(total)} done, none ended in an error",
                code,
            )
        return f"run {run_id}: {total} {_items(total)}, none ended in an error", code
    # the kinds of this command's errors: shown when they are all of them (not on a resume
    # that kept earlier errors)
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(errors.items()) if n)
    kinds = kinds if sum(errors.values()) == failed else ""
    said = f"run {run_id}: {failed} of {total} {_items(total)} ended in errors"
    said += f" ({kinds})" if kinds else ""
    if code:
        return f"{said}; ask them again with: {rerun}", code
    if allow_errors:
        return f"{said}; kept with --allow-errors; ask them again with: {rerun}", 0
    return (
        f"{said}: exit {ERRORS_EXIT}; ask them again with: {rerun} "
        "(or pass --allow-errors to accept them and exit 0)",
        ERRORS_EXIT,
    )


def _items(n: int) -> str:
    return "item" if n == 1 else "items"
