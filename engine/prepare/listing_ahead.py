"""A resumed run's records listed in a child process while the command starts its services and
reads its data; the plan takes that listing instead of listing again.

Listing 500,000 local records and parsing their keys takes about five seconds of CPU. In the
command's own process it held the interpreter's lock through the data reading and imports that
come before the first request; in a child it runs on the other core and the command only
unpickles the result (about a second). Only a run that exists is listed ahead (a new one has
nothing stored), and only by a command that runs the run itself: the held-elsewhere check
refuses another writer of the run, so no record is written between this listing and the plan.
Batch collectors can write a run's records at any time, so a run that uses batches lists at
its plan as before.

The child (`python -m engine.prepare.listing_ahead FD`) reads the store's address on stdin and
writes its answer on a pipe of its own. It runs in its own session (a terminal's Ctrl-C
reaches only the command) and dies with the command (`core.fate`). Any failure of its own
(the store unreachable, the child killed) only means the plan lists again, and meets the
problem there.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator

from core import collector
from core.checkout import ROOT
from engine.run.state import Listing, list_records
from storage import layout
from storage.base import Store

_ahead: dict[tuple[str, str, tuple[str, ...]], _Child] = {}
_lock = threading.Lock()


class _Child:
    """One listing child and the pipe its answer comes on."""

    def __init__(self, store: Store, s3_endpoint_url: str | None, run_id: str, stages) -> None:
        answer_read, answer_write = os.pipe()
        command = [sys.executable, "-m", "core.fate", str(os.getpid()), "--"]
        command += [sys.executable, "-m", "engine.prepare.listing_ahead", str(answer_write)]
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                pass_fds=(answer_write,),
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": path},
            )
        except BaseException:
            os.close(answer_read)
            raise
        finally:
            os.close(answer_write)
        self.answer = os.fdopen(answer_read, "rb")
        asked = (store.url, s3_endpoint_url, run_id, tuple(stages))
        with contextlib.suppress(OSError):  # a child that died at once: no answer, listed again
            self.process.stdin.write(pickle.dumps(asked))
            self.process.stdin.close()

    @collector.held_back()  # half a million keys unpickled: the GC would walk them again and again
    def listing(self) -> Listing | None:
        try:
            with self.answer:  # read whole, then unpickled: not in step with its pickling
                outcome = pickle.loads(self.answer.read())
        except Exception:
            outcome = None
        self.close(wait_s=2.0)
        return outcome if isinstance(outcome, Listing) else None

    def close(self, wait_s: float = 0.0) -> None:
        """End the child: it is given `wait_s` to exit on its own (it has answered), else it
        is killed (its answer was not wanted)."""
        with contextlib.suppress(OSError):
            self.answer.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=wait_s)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@contextlib.contextmanager
def listing_ahead(
    store: Store, s3_endpoint_url: str | None, run_id: str, stages: tuple[str, ...]
) -> Iterator[None]:
    """Within the block, the plan of `run_id` takes the records listed by a child started
    now (if the run exists)."""
    if not store.exists(layout.manifest_key(run_id)):
        yield
        return
    key = (store.url, run_id, stages)
    child = _Child(store, s3_endpoint_url, run_id, stages)
    with _lock:
        _ahead[key] = child
    try:
        yield
    finally:
        with _lock:
            if _ahead.get(key) is child:
                del _ahead[key]
        child.close()


def taken_ahead(store: Store, run_id: str, stages: tuple[str, ...]) -> Listing | None:
    """The listing made ahead for this plan (once), or None."""
    with _lock:
        child = _ahead.pop((store.url, run_id, stages), None)
    return None if child is None else child.listing()


def _child_main(answer_fd: int) -> int:
    from storage import open_store

    store_url, s3_endpoint_url, run_id, stages = pickle.loads(sys.stdin.buffer.read())
    try:
        store = open_store(store_url, s3_endpoint_url=s3_endpoint_url)
        answer: Listing | None = list_records(store, run_id, stages)
    except Exception:  # the plan lists again and meets the problem there
        answer = None
    blob = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)  # before the command asks
    with os.fdopen(answer_fd, "wb") as out:
        out.write(blob)
    return 0


if __name__ == "__main__":
    code = _child_main(int(sys.argv[1]))
    os._exit(code)  # answered: half a million keys need no freeing one by one
