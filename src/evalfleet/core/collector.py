"""Python's cyclic garbage collector around a process's start, and around bulk work.

Importing Prefect, Ray and pandas creates a few hundred thousand long-lived objects (pydantic
models, FastAPI routes), and at the default thresholds the collector walks them again and
again: some 10 to 25 % of the CPU a Prefect server or a command spends before its first
request. While importing, collections are rare; once imported, what exists is frozen (never
walked again) and the default thresholds come back for the work.

A step that makes a million objects that outlive it (a resume's listing of 500,000 records and
the states of a million items) holds collections back the same way while it runs: at the
default thresholds the collector walked every live object again and again as they were made,
about a sixth of the planning's CPU.

Unpickling hundreds of thousands of objects at once (a run's samples, 40 MB for 83,334
questions) is worse still: even held back, the collector's passes took half of it. There
`paused` turns it off for the while.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

DEFAULT = gc.get_threshold()
WHILE_IMPORTING = (50_000, 20, 10)
_holding = 0  # steps inside `held_back`, in any thread
_lock = threading.Lock()
_before = DEFAULT


def while_importing() -> None:
    gc.set_threshold(*WHILE_IMPORTING)


def imported() -> None:
    """The default thresholds from now on (once the steps holding them back end)."""
    global _before
    gc.collect(0)
    gc.freeze()
    with _lock:
        if _holding:
            _before = DEFAULT
        else:
            gc.set_threshold(*DEFAULT)


@contextlib.contextmanager
def held_back() -> Iterator[None]:
    """Collections rare inside, the thresholds as they were once the last step holding them
    back (in any thread) ends."""
    global _holding, _before
    with _lock:
        if _holding == 0:
            _before = gc.get_threshold()
            gc.set_threshold(*WHILE_IMPORTING)
        _holding += 1
    try:
        yield
    finally:
        with _lock:
            _holding -= 1
            if _holding == 0:
                gc.set_threshold(*_before)


@contextlib.contextmanager
def paused(freeze: bool = False) -> Iterator[None]:
    """No collection inside (one bulk step whose objects all outlive it); collections as
    before once it ends. With `freeze`, what exists then is frozen first (never walked again:
    objects that live as long as the process), or the first collection after would walk
    them all."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()
