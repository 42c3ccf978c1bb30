"""Scoring in worker processes: `python -m engine.scoring.workers`, each reading
length-prefixed pickles on stdin (first the store and run, then a task at a time: a shard of
answers, then a metric group) and answering each with its result or the error it met.

Plain child processes rather than `multiprocessing`: a forked copy of a flow run's process
inherits its threads' locks (Prefect's client, logging), and a spawned one re-imports the
caller's `__main__`, which fails for a script without a main guard. A worker whose parent
dies reads the end of its input and leaves.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, Any

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
    `GroupTask`) in turns and yields the answers in the tasks' order. A worker is sent its
    next task only once its last answer is read: a task and an answer are each larger than
    a pipe holds, and two writers waiting on each other's pipes would wait for ever."""

    def __init__(self, store: Any, run_id: str, workers: int) -> None:
        self.procs = [_start(store, run_id) for _ in range(workers)]

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def map(self, tasks: Iterable[Any]) -> Iterator[Any]:
        flight: deque[subprocess.Popen[bytes]] = deque()
        for turn, task in enumerate(tasks):
            proc = self.procs[turn % len(self.procs)]
            if len(flight) == len(self.procs):  # the oldest one is this worker's
                yield _result(flight.popleft())
            assert proc.stdin is not None
            send(proc.stdin, task)
            flight.append(proc)
        while flight:
            yield _result(flight.popleft())

    def close(self) -> None:
        for proc in self.procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _start(store: Any, run_id: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.scoring.workers"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None
    send(proc.stdin, (store, run_id))
    return proc


def _result(proc: subprocess.Popen[bytes]) -> Any:
    assert proc.stdout is not None
    try:
        kind, value = receive(proc.stdout)
    except EOFError:
        raise ScoringWorkerError(
            f"a scoring worker exited with {proc.wait()} before it answered"
        ) from None
    if kind == "error":
        raise ScoringWorkerError(f"a scoring worker failed:\n{value}")
    return value


def _serve() -> None:
    from engine.scoring.score import GroupTask, group_rows
    from engine.scoring.shards import score_shard
    from engine.store.stored import plan_run

    # Ctrl-C reaches the whole process group: the parent stops sending and closes the pipe,
    # and this worker leaves at its end, without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers goes down the pipe
    store, run_id = receive(source)
    run = plan_run(store, run_id)
    while True:
        try:
            task = receive(source)
        except EOFError:
            return
        try:
            if isinstance(task, GroupTask):
                answer = ("ok", group_rows(run, task))
            else:
                answer = ("ok", score_shard(run, task))
        except Exception:
            answer = ("error", traceback.format_exc())
        send(sink, answer)


if __name__ == "__main__":
    _serve()
