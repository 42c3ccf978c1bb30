"""What a run stopped by its cost cap says: what it spent, what is left to ask and what that
is expected to cost (`engine.prepare.estimate`, measured from the records the run just stored), and
a cap that would finish it."""

from __future__ import annotations

import math

from evalfleet.engine.prepare.resolve import ResolvedRun

MARGIN = 1.1  # the suggested cap leaves this much room over the estimate of what is left


def budget_stop(run: ResolvedRun, spent_usd: float, cap_usd: float) -> tuple[str, float | None]:
    """The line the run ends with, and a cap that would finish the run (None when what is
    left could not be estimated)."""
    said = f"spent {dollars(spent_usd)} of the {dollars(cap_usd)} cap"
    if spent_usd > cap_usd:
        said += (
            f" ({dollars(spent_usd - cap_usd)} over: the calls in flight when it was reached "
            "cost more than their estimate)"
        )
    left = _left(run)
    if left is None:
        return said, None
    requests, usd = left
    finish = round_up((spent_usd + usd) * MARGIN)
    return f"{said}; {requests} requests left to ask, expected {dollars(usd)} more", finish


def dollars(usd: float) -> str:
    """Four decimals, or as many as show two significant digits of a smaller sum: a cap of
    $0.00001 is not "$0.0000"."""
    small = 0 < abs(usd) < 0.001
    places = min(10, 1 - math.floor(math.log10(abs(usd)))) if small else 4
    return f"${usd:.{places}f}"


def _left(run: ResolvedRun) -> tuple[int, float] | None:
    """Requests left to ask and their expected cost (the estimate's rows)."""
    if not run.answers:  # a judge added to a stored run: the answers' models are not resolved
        return None
    from evalfleet.engine.prepare.estimate import estimate_run

    rows = estimate_run(run)
    return sum(r["to_request"] for r in rows), sum(r["cost_usd"] for r in rows)


def round_up(usd: float) -> float:
    """Up to two significant digits: 0.01463 -> 0.015."""
    if usd <= 0:
        return 0.01
    step = 10.0 ** (math.floor(math.log10(usd)) - 1)
    return round(math.ceil(usd / step - 1e-9) * step, 12)
