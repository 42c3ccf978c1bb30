"""The temporary Prefect server's database after many runs: it stays under its bound.

50 runs (`--runs`) of the demo's ZeroBench data (4 questions, one simulated model, one epoch)
into one store, each as `evalfleet run` makes it (`api.launch.run_request`: its own temporary
Prefect server, started, trimmed to the newest `--keep` flow runs, and stopped; the flow run
with its task runs, logs, events and artifacts, the leaderboard's among them). Each run is a
process forked from this one, as the stack's launcher forks commands, and all share one Ray
head: a fresh interpreter and Ray head per run would add time, not rows. The database lives
in a private $EVALFLEET_HOME.

Figures: per tenth of the runs, the database's size (the file and its write-ahead log) and its
flow runs; last line
  runs          runs made
  keep          the bound, in flow runs
  flow_runs     flow runs in the database at the end (at most keep)
  peak_mb       the largest size after any run once the history was full
  full_mb       the size after run keep + 1, the first with the history full
  db_mb         the size at the end

Usage: python perf/prefect_db.py [--runs 50] [--keep 10] [--smoke]
  --smoke   2 runs keeping 1: the same code in under a minute (a check, not a measurement)
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from perf.work import work_folder  # noqa: E402


def database_mb(database: Path) -> float:
    files = (database, database.with_name(database.name + "-wal"))
    return sum(f.stat().st_size for f in files if f.exists()) / 2**20


def flow_runs(database: Path) -> int:
    with sqlite3.connect(database) as con:
        return con.execute("SELECT count(*) FROM flow_run").fetchone()[0]


def forked_run(request, keep: int) -> None:
    """`run_request` in a child process, as the launcher runs a command; raises if it failed."""
    from evalfleet.api.launch import run_request

    names = [t.name for t in threading.enumerate()]
    assert len(names) == 1, f"a fork copies a thread's locks, not the thread: {names}"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            run_request(request, flow_runs_kept=keep)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # not the parent's exit handlers (its work folder's removal)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"run {request.run_id} failed")


SMOKE = {"runs": 2, "keep": 1}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="2 runs: a check, not a figure")
    return parser


def main() -> None:
    options = build_parser().parse_args()
    if options.smoke:
        vars(options).update(SMOKE)

    work = work_folder("prefect-db")
    os.environ["EVALFLEET_HOME"] = str(work / "home")
    os.environ["EVALFLEET_STACK"] = str(work / "stack")  # never a stack running here
    import tqdm

    tqdm.tqdm.monitor_interval = 0  # its monitor thread would be copied into each fork
    for name in ("PREFECT_API_URL", "RAY_ADDRESS"):
        os.environ.pop(name, None)

    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.benchmarks.zerobench.demo import write_demo_dataset
    from evalfleet.cli.launcher import preload
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.simulator.process import start_simulator
    from evalfleet.stack.services import LocalStack, state_dir

    dataset = str(write_demo_dataset(work / "zerobench"))
    key = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    database = state_dir() / "prefect-runs.db"
    preload()  # what a command imports, once, as in the launcher
    ray_head = LocalStack()  # one head for every run: each run's own would cost 10 s
    ray_head.use_private_ray()
    ray_head.start(ray=True)
    ray_head.wait_ray()
    sizes: list[float] = []
    started = time.monotonic()
    try:
        with start_simulator(key, {"latency": {"ms": 1}}, work / "sim.jsonl") as sim:
            for index in range(1, options.runs + 1):
                request = EvalRequest(
                    models=["openai/sim-0.7"],
                    benchmarks=["zerobench"],
                    dataset_path=dataset,
                    epochs=1,
                    run_id=f"history-{index:03d}",
                    store=str(work / "runs"),
                    simulator_url=sim.url,
                )
                forked_run(request, options.keep)
                sizes.append(database_mb(database))
                if index % max(1, options.runs // 10) == 0 or index == options.runs:
                    print(
                        f"run {index}: {sizes[-1]:.2f} MB, {flow_runs(database)} flow runs "
                        f"({time.monotonic() - started:.0f} s)",
                        flush=True,
                    )
    finally:
        ray_head.stop()
    full = sizes[min(options.keep, len(sizes) - 1)]
    peak = max(sizes[options.keep :] or sizes)
    print(
        f"runs={options.runs} keep={options.keep} flow_runs={flow_runs(database)} "
        f"peak_mb={peak:.2f} full_mb={full:.2f} db_mb={sizes[-1]:.2f}"
    )


if __name__ == "__main__":
    main()
