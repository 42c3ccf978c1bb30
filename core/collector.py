"""Python's cyclic garbage collector around a process's start.

Importing Prefect, Ray and pandas creates a few hundred thousand long-lived objects (pydantic
models, FastAPI routes), and at the default thresholds the collector walks them again and
again: some 10 to 25 % of the CPU a Prefect server or a command spends before its first
request. While importing, collections are rare; once imported, what exists is frozen (never
walked again) and the default thresholds come back for the work.
"""

from __future__ import annotations

import gc

DEFAULT = gc.get_threshold()
WHILE_IMPORTING = (50_000, 20, 10)


def while_importing() -> None:
    gc.set_threshold(*WHILE_IMPORTING)


def imported() -> None:
    gc.collect(0)
    gc.freeze()
    gc.set_threshold(*DEFAULT)
