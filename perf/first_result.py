"""Time to first result: a 10-question, 2-epoch ZeroBench run (20 requests) at 200 ms simulated
latency, timed as a user types it, from `evalfleet run` to its exit with tables written.

- cold: no stack; the command starts its own Prefect server and Ray head and stops them (the
  Prefect database under ~/.evalfleet prepared by an earlier command, as after a first run).
- warm: `evalfleet up --ray` is running; the command is forked from the stack's launcher, and
  attaches to its Prefect server, Ray head and warm workers.

The dataset, the answer key and the simulator are prepared before timing. Figures (last line):
  cold_s   wall time of the cold run
  warm_s   wall time of the warm run (median of --warm-runs)
Targets: warm <= 4 s, cold <= 10 s.

Usage: python perf/first_result.py [--latency-ms 200] [--warm-runs 3] [--smoke]
  --smoke   one warm run (a check that the script works, not a measurement)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from perf.throughput import write_dataset  # noqa: E402
from perf.work import work_folder  # noqa: E402

EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))


def timed_run(env: dict[str, str], args: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([EVALFLEET, "run", *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"evalfleet run failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed, done.stdout + done.stderr


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one warm run: a check")
    return parser


def main() -> None:
    options = build_parser().parse_args()
    if options.smoke:
        options.warm_runs = 1

    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.simulator.process import start_simulator

    work = work_folder("first-result")
    dataset = write_dataset(work / "zerobench", 10)
    key = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_ADDRESS"))}
    env.update(EVALFLEET_STACK=str(work / "stack"), RAY_USAGE_STATS_ENABLED="0")
    config = {"latency": {"ms": options.latency_ms}}
    with start_simulator(key, config, work / "sim.jsonl") as sim:

        def args(run_id: str) -> list[str]:
            return [
                *("-m", "openai/sim-0.7", "-b", "zerobench", "--dataset-path", dataset),
                *("--protocol", "sampled-k", "--epochs", "2", "--run-id", run_id),
                *("--store", str(work / "runs"), "--simulator-url", sim.url),
            ]

        cold, _ = timed_run(env, args("cold"))
        print(f"cold run: {cold:.1f} s", flush=True)
        up = subprocess.run([EVALFLEET, "up", "--ray"], env=env, capture_output=True, text=True)
        if up.returncode != 0:
            raise SystemExit(f"evalfleet up failed:\n{up.stdout}{up.stderr}")
        try:
            warm = []
            for i in range(options.warm_runs):
                elapsed, output = timed_run(env, args(f"warm-{i}"))
                assert "using the running evalfleet stack" in output, output
                warm.append(elapsed)
                print(f"warm run {i}: {elapsed:.1f} s", flush=True)
        finally:
            subprocess.run([EVALFLEET, "down"], env=env, capture_output=True)
    requests = sum(1 for line in (work / "sim.jsonl").read_text().splitlines() if "chat" in line)
    print(f"requests={requests} (expected {20 * (1 + options.warm_runs)})")
    print(f"cold_s={cold:.1f} warm_s={statistics.median(warm):.1f}")


if __name__ == "__main__":
    main()
