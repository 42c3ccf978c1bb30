"""Every answer of a run classified against one listing of its records (done, failed,
stale, missing), one at a time: what a plan keeps of it is the places of those left to ask.
`engine.prepare.listing_ahead` sweeps in its child when it can, the plan here otherwise."""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from evalfleet.core import collector
from evalfleet.core.types import Decoding
from evalfleet.engine.run.items import AnswerSpace, RunShape
from evalfleet.engine.run.state import Listing, Reconciled, classify, classify_key
from evalfleet.tasks.work import WorkItem


def wanted_states(retry_errors: bool) -> set[str]:
    """The states of the answers a run asks (again): a failed one only when retrying."""
    return {"missing", "stale", "failed"} if retry_errors else {"missing", "stale"}


@dataclass
class Swept:
    """What one pass over a run's answers found (`sweep`)."""

    states: Counter[str] = field(default_factory=Counter)
    todo: array[int] = field(default_factory=lambda: array("q"))  # places, 8 bytes each
    unverified: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)  # zero-byte records: set aside
    # The answers of judged benchmarks, kept whole: their judgements need the stored texts.
    judged: Reconciled = field(default_factory=Reconciled)
    judged_places: list[tuple[int, WorkItem]] = field(default_factory=list)


@collector.held_back()
def sweep(space: AnswerSpace, listing: Listing, wanted: set[str], busy: set[str]) -> Swept:
    """Every answer of the run classified against the listing, one at a time: only the places
    of those left to ask are kept (and whole answers of judged benchmarks)."""
    out = Swept()
    states, todo, unverified, empty = out.states, out.todo, out.unverified, listing.empty
    for name in space.names:
        places = space.places_of(name)
        if name in space.judged:
            for place, item in zip(places, space.items(places), strict=True):
                state, found = classify(listing, item)
                out.judged.state[item.key] = state
                if found is not None:
                    out.judged.record_key[item.key] = found
                out.judged_places.append((place, item))
            continue
        # With no open batch job, an answer the listing lacks is missing whatever it hashes to.
        only = (listing.ok, listing.failed) if not busy else None
        answers = zip(places, space.keys_and_hashes(name, only), strict=True)
        for place, (key, request_hash) in answers:
            if not request_hash:
                states["missing"] += 1
                if "missing" in wanted:
                    todo.append(place)
                continue
            state, found = classify_key(listing, key, request_hash)
            if found is not None and found in empty:
                out.empty.append(found)
                state, found = "missing", None
            states[state] += 1
            if state in wanted:
                if request_hash not in busy:
                    todo.append(place)
            elif found is not None:
                unverified.append(found)
    return out


class _Sample(NamedTuple):
    id: str


@dataclass
class _Benchmark:
    """Of a benchmark's data, what its answers' keys and request hashes are made from."""

    sample_ids: list[str]
    digests: dict[str, str]
    decodings: list[Decoding]
    revision: str

    @cached_property
    def samples(self) -> list[_Sample]:
        return [_Sample(i) for i in self.sample_ids]


@dataclass
class RunOutline:
    """A run's answers as `AnswerSpace` sees them, without the samples' media: what another
    process needs to sweep them (a few MB pickled for 83,000 samples)."""

    run_id: str
    models: list[str]
    judges: list[str]
    api_models: dict[str, str]
    data: dict[str, _Benchmark]

    @classmethod
    def of(cls, run: RunShape) -> RunOutline:
        data = {
            name: _Benchmark([s.id for s in d.samples], d.digests, d.decodings, d.revision)
            for name, d in run.data.items()
        }
        return cls(run.run_id, list(run.models), list(run.judges), dict(run.api_models), data)
