"""How figures are written on every page and table people read: the leaderboard's Markdown
and HTML, `compare`, the run report's headline. One function per kind of figure."""

from __future__ import annotations

import math
from typing import Any

from evalfleet.core.escape import markdown_cell

MISSING = "—"
ERROR_MARK = 0.05  # a row whose calls failed more often than this is marked
MARK = "!"


def missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def share(value: float | None) -> str:
    """A fraction of 1 (a score, an accuracy, an interval's end): 3 decimals."""
    return MISSING if missing(value) else f"{value:.3f}"


def signed(value: float | None) -> str:
    """A difference of two shares: 3 decimals with its sign."""
    return MISSING if missing(value) else f"{value:+.3f}"


def interval(low: float | None, high: float | None) -> str:
    return MISSING if missing(low) or missing(high) else f"{low:.3f}–{high:.3f}"


def p_value(p: float | None) -> str:
    if p is None or missing(p):
        return MISSING
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def tokens(value: float | None) -> str:
    """A token count or mean: a whole number."""
    return MISSING if value is None or missing(value) else f"{round(value):,}"


def money(value: float | None) -> str:
    """US dollars to two significant digits ($0.00077, $0.013, $1.2, $12, $1,234)."""
    if value is None or missing(value):
        return MISSING
    if value == 0:
        return "$0"
    digits = max(0, 1 - math.floor(math.log10(abs(value))))
    return f"${value:,.{digits}f}"


def coverage(done: int, expected: int) -> str:
    return f"{done}/{expected}"


def md_text(text: Any) -> str:
    """Untrusted text in a Markdown table or list, on one line (`evalfleet.core.escape`)."""
    return markdown_cell(" ".join(str(text).split()))


def errors(failed: int, answers: int, threshold: float = ERROR_MARK) -> str:
    """A row's failed calls: the count, with its share and `MARK` above `threshold`; "every
    call failed" when none succeeded (its score of 0 measures nothing)."""
    if not answers or not failed:
        return str(failed)
    if failed >= answers:
        return f"{failed} {MARK} every call failed"
    share = failed / answers
    return f"{failed} ({share:.0%}) {MARK}" if share > threshold else str(failed)
