"""A resumed run's records listed in a child process while the command starts its services and
reads its data, and its answers swept there too; the plan takes that instead of listing again.

Listing 500,000 local records and parsing their keys takes about five seconds of CPU, and
classifying a million answers against them (`engine.prepare.sweep`) two or three more. In the
command's own process they held the interpreter's lock through the data reading and imports that
come before the first request; in a child they run on the other core. Once the command has
resolved the run it sends the child the run's outline (`RunOutline`: sample ids, prompt digests,
decodings) and the child answers the plan's sweep: the places left to ask and the records kept.
When the run has judged benchmarks or a cost cap (the plan needs the listing itself then), or no
outline comes, the child answers its listing.

A listing taken seconds before the plan must not miss a record written in between, or the plan
would ask (and pay for) that answer again. So a run is listed ahead only when nothing else can
be writing its records:
- not while another process holds it (a live heartbeat: the plan's own check would refuse the
  run anyway), nor while it has batch jobs open (their collector writes records at any time);
- and the plan takes the answer only if, by then, no writer outside a run command left a mark
  (`storage.changes`: the batch collector, `status --quarantine`) and the manifest's history
  grew by this command's own event alone (no other command opened the run meanwhile).
Otherwise, and whenever the child fails (the store unreachable, the child killed), the plan
lists and sweeps as before.

The child (`python -m engine.prepare.listing_ahead FD`) reads the store's address on stdin, then
the outline or the end of its stdin (in a thread, while it lists: the command never waits to
send it), and writes its answer, pickled whole before it is written, on a pipe of its own. It
runs in its own session (a terminal's Ctrl-C reaches only the command), dies with the command
(`core.fate`), prints nothing, and is killed once the plan has its answer or the command ends.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, cast

from evalfleet.core import collector
from evalfleet.core.answering import end_answering, start_answering
from evalfleet.engine.prepare.sweep import RunOutline, Swept, sweep, wanted_states
from evalfleet.engine.run.items import AnswerSpace, judged_benchmarks
from evalfleet.engine.run.state import Listing, list_records
from evalfleet.engine.store import heartbeat
from evalfleet.engine.store.manifest_types import Manifest, UnreadableManifest
from evalfleet.storage import changes, layout
from evalfleet.storage.base import Store
from evalfleet.tasks import batch_jobs

if TYPE_CHECKING:
    from evalfleet.engine.prepare.resolve import ResolvedRun
    from evalfleet.engine.run.items import RunShape

_ahead: dict[tuple[str, str], _Child] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class _Before:
    """What the run looked like when its listing began."""

    stages: tuple[str, ...]
    history: int  # the manifest's events
    marks: frozenset[str]  # evalfleet.storage.changes marks


class _Child:
    """One listing child and the pipe its answer comes on."""

    def __init__(
        self, store: Store, s3_endpoint_url: str | None, run_id: str, before: _Before
    ) -> None:
        self.before = before
        self.wanted: set[str] | None = None  # what its sweep asks again, once it is sent
        # Quiet: a failure of its own only means the plan lists again.
        self.process, self.answer = start_answering(
            "evalfleet.engine.prepare.listing_ahead", quiet=True
        )
        self._send((store.url, s3_endpoint_url, run_id, before.stages))

    def _send(self, message: object) -> None:
        asking = self.process.stdin
        assert asking is not None  # started with a pipe for its stdin
        try:
            pickle.dump(message, asking, protocol=pickle.HIGHEST_PROTOCOL)
            asking.flush()
        except OSError:  # a child that died: no answer, listed again
            self.end_asking()

    def sweep(self, outline: RunOutline, wanted: set[str]) -> None:
        """Have the child sweep the run's answers against its listing."""
        self.wanted = set(wanted)
        self._send((outline, self.wanted))
        self.end_asking()

    def end_asking(self) -> None:
        """Nothing more is sent: without an outline, the child answers its listing."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()

    @collector.held_back()  # half a million keys unpickled: the GC would walk them again and again
    def taken(self) -> Listing | Swept | None:
        self.end_asking()
        try:
            with self.answer:  # read whole, then unpickled: not in step with its pickling
                outcome = pickle.loads(self.answer.read())
        except Exception:
            outcome = None
        self.close(wait_s=2.0)
        return outcome if isinstance(outcome, Listing | Swept) else None

    def close(self, wait_s: float = 0.0) -> None:
        """End the child: it is given `wait_s` to exit on its own (it has answered), else it
        is killed (its answer was not wanted)."""
        self.end_asking()
        end_answering(self.process, self.answer, wait_s)


@contextlib.contextmanager
def listing_ahead(
    store: Store, s3_endpoint_url: str | None, run_id: str, stages: tuple[str, ...]
) -> Iterator[bool]:
    """Within the block, the plan of `run_id` may take the records listed by a child started
    now (see the module's docstring for when it is not started, or not taken). Yields whether
    a child was started."""
    before = _before(store, run_id, stages)
    if before is None:
        yield False
        return
    key = (store.url, run_id)
    child = _Child(store, s3_endpoint_url, run_id, before)
    with _lock:
        _ahead[key] = child
    try:
        yield True
    finally:
        with _lock:
            if _ahead.get(key) is child:
                del _ahead[key]
        child.close()


def sweep_ahead(run: ResolvedRun, retry_errors: bool) -> None:
    """Once the run is resolved: its listing child (if any) sweeps its answers, unless the plan
    will need the listing itself (judged benchmarks, a cost cap), when it answers that."""
    with _lock:
        child = _ahead.get((run.store.url, run.run_id))
    if child is None:
        return
    if (
        not run.answers
        or judged_benchmarks(run.judges, run.data)
        or run.request.max_cost_usd is not None
    ):
        child.end_asking()
    else:
        child.sweep(RunOutline.of(run), wanted_states(retry_errors))


def taken_ahead(
    store: Store, run_id: str, stages: tuple[str, ...], wanted: set[str]
) -> Listing | Swept | None:
    """What was made ahead for this plan (once): the run's answers swept (asking again those in
    `wanted` states), or its listing; None when nothing was, it lists other stages, it swept
    for other states, or the run may have changed since it began."""
    with _lock:
        child = _ahead.pop((store.url, run_id), None)
    if child is None:
        return None
    swept_for = child.wanted
    if child.before.stages != stages or not _unchanged(store, run_id, child.before):
        child.close()
        return None
    taken = child.taken()
    if isinstance(taken, Swept) and swept_for != wanted:
        return None
    return taken


def _before(store: Store, run_id: str, stages: tuple[str, ...]) -> _Before | None:
    """The run as its listing begins, or None when it must not be listed ahead: it does not
    exist yet, another process holds it, or it has batch jobs open."""
    manifest = _manifest(store, run_id)
    if manifest is None or heartbeat.held_elsewhere(manifest):
        return None
    if batch_jobs.in_open_jobs(batch_jobs.read_jobs(store, run_id)):
        return None
    return _Before(stages, len(manifest.history), frozenset(changes.marks(store, run_id)))


def _manifest(store: Store, run_id: str) -> Manifest | None:
    """The run's manifest; None without one, or with one that does not read (the plan's own
    check says what is wrong with it)."""
    key = layout.manifest_key(run_id)
    blob = store.get(key)
    try:
        return Manifest.from_bytes(blob, key) if blob is not None else None
    except UnreadableManifest:
        return None


def _unchanged(store: Store, run_id: str, before: _Before) -> bool:
    """No writer outside a run command marked a change, and only this command's own event
    was added to the manifest's history, since the listing began."""
    if frozenset(changes.marks(store, run_id)) != before.marks:
        return False
    manifest = _manifest(store, run_id)
    return manifest is not None and len(manifest.history) == before.history + 1


def _child_main(answer_fd: int) -> int:
    from evalfleet.storage import open_store

    gc.disable()  # a short-lived process whose objects all live until it exits

    asked = sys.stdin.buffer
    store_url, s3_endpoint_url, run_id, stages = pickle.load(asked)
    # The outline is read while the store is listed: the command never waits to send it.
    sent: list[tuple[RunOutline | None, set[str]]] = []
    reader = threading.Thread(target=_read_outline, args=(asked, sent), daemon=True)
    reader.start()
    try:
        store = open_store(store_url, s3_endpoint_url=s3_endpoint_url)
        answer: Listing | Swept | None = list_records(store, run_id, stages)
    except Exception:  # the plan lists again and meets the problem there
        answer = None
    reader.join()
    outline, wanted = sent[0]
    if outline is not None and isinstance(answer, Listing):
        # an outline has what AnswerSpace reads of each benchmark (no media)
        answer = sweep(AnswerSpace(cast("RunShape", outline)), answer, wanted, busy=set())
    blob = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)  # before the command asks
    with os.fdopen(answer_fd, "wb") as out:
        out.write(blob)
    return 0


def _read_outline(asked: BinaryIO, sent: list[tuple[RunOutline | None, set[str]]]) -> None:
    """The outline and the states to ask again, or (None, set()) at the end of stdin."""
    try:
        sent.append(pickle.load(asked))
    except Exception:
        sent.append((None, set()))


if __name__ == "__main__":
    code = _child_main(int(sys.argv[1]))
    os._exit(code)  # answered: half a million keys need no freeing one by one
