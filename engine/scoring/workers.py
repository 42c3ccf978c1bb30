"""Scoring shards in worker processes: `python -m engine.scoring.workers`, each reading
length-prefixed pickles on stdin (first the store and run, then a shard at a time) and
answering each with its `ShardScores` or the error it met.

Plain child processes rather than `multiprocessing`: a forked copy of a flow run's process
inherits its threads' locks (Prefect's client, logging), and a spawned one re-imports the
caller's `__main__`, which fails for a script without a main guard. A worker whose parent
dies reads the end of its input and leaves.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, Any

_LENGTH = struct.Struct("!Q")


class ScoringWorkerError(RuntimeError):
    """A worker process failed to score a shard (its traceback is in the message)."""


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


def score_in_workers(store: Any, run_id: str, shards: Iterable[Any], workers: int) -> Iterator[Any]:
    """Each shard's `ShardScores`, in the shards' order, from `workers` processes taking
    turns. A worker is sent its next shard only once its last answer is read: a shard and
    an answer are each larger than a pipe holds, and two writers waiting on each other's
    pipes would wait for ever."""
    procs = [_start(store, run_id) for _ in range(workers)]
    flight: deque[subprocess.Popen[bytes]] = deque()
    try:
        for turn, shard in enumerate(shards):
            proc = procs[turn % workers]
            if len(flight) == workers:  # the oldest one is this worker's
                yield _result(flight.popleft())
            assert proc.stdin is not None
            send(proc.stdin, shard)
            flight.append(proc)
        while flight:
            yield _result(flight.popleft())
    finally:
        for proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in procs:
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
    from engine.scoring.shards import score_shard
    from engine.store.stored import stored_run_shape

    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers goes down the pipe
    store, run_id = receive(source)
    run = stored_run_shape(store, run_id)
    while True:
        try:
            shard = receive(source)
        except EOFError:
            return
        try:
            answer = ("ok", score_shard(run, shard))
        except Exception:
            answer = ("error", traceback.format_exc())
        send(sink, answer)


if __name__ == "__main__":
    _serve()
