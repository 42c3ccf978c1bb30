"""Every record a run will write can be stored: checked when the run is resolved, before any
request, so no answer is paid for that cannot be kept. Its keys fit (below), and the folders
they go to can take them (`evalfleet.engine.store.places`).

A record's key holds the model (and judge) id and the sample id, each percent-encoded into one
segment. The longest key a run may write is, per (stage, caller, model, benchmark), that of
its longest sample id at its last epoch as a terminal error's record moved to quarantine/;
each segment must fit a local disk's file name (255 bytes), and the whole key, the store's
prefix included, an S3 key (1,024 bytes), whatever the store: a run can be copied between
them. Checking those keys checks every shorter one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalfleet.core.types import ConfigError
from evalfleet.engine.store.places import check_places
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.keys import KEY_BYTES, SEGMENT_BYTES, oversize
from evalfleet.storage.layout import ItemKey

if TYPE_CHECKING:
    from evalfleet.engine.run.items import BenchmarkData

LATEST_MS = 10**13 - 1  # a failure record's time in ms: 13 digits until the year 2286
ANY_HASH = "0" * 64


def check_storable(
    run_id: str,
    store: Store,
    models: Sequence[str],
    judges: Sequence[str],
    data: dict[str, BenchmarkData],
) -> None:
    """Raise a one-line ConfigError naming the name that makes a record's key too long, or a
    StoreError naming a place of the run that cannot take its files."""
    for name, bench_data in data.items():
        if not bench_data.samples:
            continue
        sample = max((s.id for s in bench_data.samples), key=lambda i: len(layout.segment(i)))
        epoch = len(bench_data.decodings) - 1
        judged = judges if bench_data.benchmark.judge is not None else ()
        for model in models:
            answer = ItemKey.answer(model, name, sample, epoch)
            for key in (answer, *(answer.judged_by(judge) for judge in judged)):
                _check(run_id, store, key)
    check_places(run_id, store, models, judges, data)


def _check(run_id: str, store: Store, key: ItemKey) -> None:
    longest = layout.quarantine_key(run_id, layout.failure_key(run_id, key, ANY_HASH, LATEST_MS))
    found = oversize(longest, store.key_prefix)
    if found is None:
        return
    segment, size, _ = found
    names = [("model", key.model), ("judge", key.judge), ("sample id", key.sample_id)]
    for what, value in names:
        if value and segment == layout.segment(value):
            raise ConfigError(
                f"{what} {_short(value)} cannot be stored: it makes a {size}-byte name in its "
                f"records' keys, over the {SEGMENT_BYTES} bytes a file name may have; "
                + _fix(what, key.benchmark)
            )
    if segment:  # the run id or a benchmark name: checked elsewhere, short by rule
        raise ConfigError(f"a record key of run {run_id} has a {size}-byte segment {segment!r}")
    raise ConfigError(
        f"the records of {key.caller} on {key.benchmark} in run {run_id} cannot be stored: "
        f"their keys under {store.describe()} would be {size} bytes, over the {KEY_BYTES} an "
        "S3 key may have; use a shorter model id, sample ids, run id or store prefix"
    )


def _fix(what: str, benchmark: str) -> str:
    if what == "sample id":
        return f"shorten the sample ids of the {benchmark} dataset"
    return (
        f"give the {what} a shorter id in the model registry (its api_model keeps the "
        "name the provider knows)"
    )


def _short(value: str) -> str:
    return repr(value) if len(value) <= 60 else f"{value[:40]!r}… ({len(value)} characters)"
