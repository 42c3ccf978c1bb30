"""How a run that did not finish says what it left: counted by what was sent, for a stop by
signal."""

from __future__ import annotations

from collections import Counter

from engine.run.interrupts import STOP
from engine.run.outcome import RunOutcome, interrupted_message


def test_an_interrupt_tells_asked_and_not_stored_from_never_sent():
    STOP.reset()  # no signal seen: named SIGINT
    outcome = RunOutcome(
        "r1",
        statuses=Counter(ok=5, failed=1, exists=2, write_failed=1),
        abandoned=3,
        not_started=40,
        stopped=True,
    )
    assert interrupted_message(outcome) == (
        "run r1 interrupted by SIGINT: 6 new records stored, 4 asked and not stored (possibly "
        "paid for; asked again on resume), 40 never sent; everything stored is kept and a rerun "
        "with run id r1 asks only the rest"
    )
    one = RunOutcome("r2", statuses=Counter(ok=1), stopped=True)
    assert "1 new record stored, 0 asked and not stored" in interrupted_message(one)
