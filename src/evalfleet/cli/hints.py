"""The command that resumes a run: the command line as it was given, with its run id."""

from __future__ import annotations

import shlex
import sys


def resume_hint(
    run_id: str, max_cost_usd: float | None = None, without: tuple[str, ...] = ()
) -> str:
    """The command that resumes this run: the same command line, with its run id (as --run-id
    unless the command line names it), `max_cost_usd` as its cap when given, and none of the
    flags (options without a value) in `without`."""
    args = [a for a in sys.argv[1:] if a not in without]
    if max_cost_usd is not None:
        args = _without_option(args, "--max-cost-usd") + ["--max-cost-usd", f"{max_cost_usd:g}"]
    named = run_id in args or any(a.startswith("--run-id=") for a in args)
    if not named:
        args = [*args, "--run-id", run_id]
    return "evalfleet " + " ".join(shlex.quote(a) for a in args)


def _without_option(args: list[str], option: str) -> list[str]:
    """`args` without `option VALUE` and `option=VALUE`."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        elif not arg.startswith(option + "="):
            out.append(arg)
    return out
