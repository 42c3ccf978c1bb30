"""How a run that did not finish says what it left: counted by what was sent, for a stop by
signal and for a lost Ray head."""

from __future__ import annotations

from collections import Counter

import pytest

from evalfleet.engine.run.interrupts import STOP
from evalfleet.engine.run.outcome import RunFailed, RunOutcome, check_done, interrupted_message

LOST = "the Ray head at 10.0.0.7:6379 has not answered for 8 s"


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


def test_a_lost_head_fails_the_run_saying_what_was_sent():
    outcome = RunOutcome("r1", statuses=Counter(ok=16), abandoned=8, not_started=51)
    outcome = RunOutcome("r1").add(outcome).add(RunOutcome("r1", ray_lost=LOST))
    assert outcome.failed
    with pytest.raises(RunFailed) as failed:
        check_done(outcome)
    assert failed.value.exit_code == 4
    assert str(failed.value) == (
        f"run r1 stopped: {LOST}, so the run ended: 16 new records stored, 8 asked and not "
        "stored (possibly paid for; asked again on resume), 51 never sent; start the Ray "
        "cluster again (its head's logs say why it stopped; without RAY_ADDRESS a run starts a "
        "Ray of its own); then run the same command again: it asks only what is not stored"
    )
