"""A scoring worker process: `python -m evalfleet.engine.scoring.worker_main`, started by
`engine.scoring.workers.WorkerPool`. It reads the store and run on stdin, then scores each task
it is sent (a `Shard`, or a metric group's `GroupTask`) and answers with the result or the
error it met, until its input ends.
"""

from __future__ import annotations

import signal
import sys
import traceback
from typing import Any

from evalfleet.engine.scoring.score import GroupTask, group_rows
from evalfleet.engine.scoring.shards import score_shard
from evalfleet.engine.scoring.workers import receive, send
from evalfleet.engine.store.stored import plan_run


def main() -> None:
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
        answer: tuple[str, Any]
        try:
            if isinstance(task, GroupTask):
                answer = ("ok", group_rows(run, task))
            else:
                answer = ("ok", score_shard(run, task))
        except Exception:
            answer = ("error", traceback.format_exc())
        send(sink, answer)


if __name__ == "__main__":
    main()
