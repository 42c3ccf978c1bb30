"""Rebuilds of a local store's leaderboard take turns: one that read the store first and wrote
last left another run off the board (CI, 2026-11-30: a run's rebuild from the stack's launcher
and another's from the served deployment, 2 s apart)."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
from pathlib import Path

import pandas as pd

from evalfleet.engine.scoring.aggregate import aggregate_run
from evalfleet.reports.leaderboard import update
from evalfleet.storage import open_store

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"
RUN = "stored-zerobench"


def test_a_rebuild_waits_for_the_one_before_and_reads_what_it_left(tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(STORED / RUN, root / RUN)
    store = open_store(str(root))
    aggregate_run(store, RUN)
    update(store)  # warm: the second rebuild takes well under the second it is held below
    board_file = root / "leaderboard" / "leaderboard.parquet"
    written = board_file.stat().st_mtime_ns
    done: list[float] = []
    rebuild = threading.Thread(target=lambda: (update(store), done.append(time.monotonic())))
    held = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # another rebuild, as it writes
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        rebuild.start()
        time.sleep(2.0)
        assert done == [] and board_file.stat().st_mtime_ns == written
        released = time.monotonic()
    finally:
        os.close(held)
    rebuild.join(60)
    assert len(done) == 1 and done[0] > released
    assert board_file.stat().st_mtime_ns > written
    assert set(pd.read_parquet(board_file)["run_id"]) == {RUN}
    assert sorted(p.name for p in root.iterdir()) == ["leaderboard", RUN]  # the lock made no file
