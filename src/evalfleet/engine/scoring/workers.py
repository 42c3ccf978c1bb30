"""Scoring in worker processes (`evalfleet.engine.scoring.worker_main`), each reading
length-prefixed pickles on stdin (first the store and run, then a task at a time: a shard of
answers, then a metric group) and answering each with its result or the error it met. This
module is the parent's side and the framing both sides use; what a worker does with a task
is the worker's own module, so that scoring imports this one and not the other way round.

Plain child processes rather than `multiprocessing`: a forked copy of a flow run's process
inherits its threads' locks (Prefect's client, logging), and a spawned one re-imports the
caller's `__main__`, which fails for a script without a main guard. A worker whose parent
dies reads the end of its input and leaves.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import struct
import subprocess
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, Any

from evalfleet.core.interpreter import module_command

WORKER_MODULE = "evalfleet.engine.scoring.worker_main"
_LENGTH = struct.Struct("!Q")


class ScoringWorkerError(RuntimeError):
    """A worker process failed at a task (its traceback is in the message)."""


def send(stream: IO[bytes], value: Any) -> None:
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(blob)) + blob)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """The next value, or EOFError when the other side has closed."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    blob = stream.read(size)
    if len(blob) < size:
        raise EOFError
    return pickle.loads(blob)


class WorkerPool:
    """`workers` processes serving one stored run; `map` hands them tasks (a `Shard`, a
    `GroupTask`) in turns and yields the answers in the tasks' order.

    Each worker has a thread writing its tasks and one reading its answers, so that it always
    has its next task waiting (`AHEAD` of them) and never waits for this process to take its
    last answer: a task and an answer are each larger than a pipe holds, and a writer and a
    reader waiting on each other's pipes in one thread would wait for ever."""

    AHEAD = 2  # tasks given to a worker before its first answer is taken

    def __init__(self, store: Any, run_id: str, workers: int) -> None:
        self.workers = [_Worker(store, run_id) for _ in range(workers)]

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def map(self, tasks: Iterable[Any]) -> Iterator[Any]:
        flight: deque[_Worker] = deque()
        for turn, task in enumerate(tasks):
            if len(flight) == self.AHEAD * len(self.workers):
                yield flight.popleft().result()
            worker = self.workers[turn % len(self.workers)]
            worker.inbox.put(task)
            flight.append(worker)
        while flight:
            yield flight.popleft().result()

    def close(self) -> None:
        for worker in self.workers:
            _drop_waiting(worker.inbox)  # tasks not sent yet (a run stopped early)
            worker.inbox.put(_END)
        for worker in self.workers:
            worker.stop()


_END = object()  # the end of a worker's tasks


def _drop_waiting(tasks: queue.Queue[Any]) -> None:
    with contextlib.suppress(queue.Empty):
        while True:
            tasks.get_nowait()


class _Worker:
    """One scoring process, with a thread feeding it tasks and one taking its answers."""

    def __init__(self, store: Any, run_id: str) -> None:
        self.proc = subprocess.Popen(
            module_command(WORKER_MODULE),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.outbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.inbox.put((store, run_id))
        self.threads = [
            threading.Thread(target=self._feed, daemon=True),
            threading.Thread(target=self._take, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def _feed(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (task := self.inbox.get()) is not _END:
                send(stdin, task)
        except OSError:  # the worker is gone: its reader says why
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _take(self) -> None:
        assert self.proc.stdout is not None
        while True:
            try:
                answer = receive(self.proc.stdout)
            except EOFError:
                self.outbox.put(("gone", None))
                return
            self.outbox.put(answer)

    def result(self) -> Any:
        kind, value = self.outbox.get()
        if kind == "gone":
            raise ScoringWorkerError(
                f"a scoring worker exited with {self.proc.wait()} before it answered"
            )
        if kind == "error":
            raise ScoringWorkerError(f"a scoring worker failed:\n{value}")
        return value

    def stop(self) -> None:
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for thread in self.threads:
            thread.join(timeout=10)
