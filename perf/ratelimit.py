"""How much of a provider's rate limit two concurrent runs on one Ray cluster use.

One Ray cluster (started here), one simulator. Two phases, each with two runs started at
the same time as separate driver processes joined to the cluster, evaluating the same
simulated model with the same key, so they share one rate budget:

- requests phase: the model is limited to R requests/min (no token limit);
- tokens phase: another model is limited to T tokens/min (no request limit).

The simulator enforces each limit over a sliding 60 s window, as the providers do, and
answers 429 beyond it. Each phase is measured over a fixed window (default 95 s) starting at
its first admitted request; the runs are then stopped. From the simulator's request log:

  rpm_share     requests admitted in the requests phase's window / (R * window / 60)
  tpm_share     tokens (input + output, as the simulator counts them) admitted in the tokens
                phase's window / (T * window / 60)
  limiter_429s  429s the simulator answered in both phases: only the budget's own traffic
                reaches it, so every one is the limiter's fault

Usage: python perf/ratelimit.py [--rpm 1200] [--tpm 600000] [--window-s 95] [--latency-ms 200]
                                [--questions 600] [--smoke]
  --smoke   100 questions, 5 s windows: the same code in seconds (a check that the script
            works, not a measurement: a window shorter than the limit's 60 s says little)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from perf.work import work_folder  # noqa: E402

RPM_MODEL, TPM_MODEL = "sim-0.5-rpm", "sim-0.5-tpm"


def child(args: argparse.Namespace) -> None:
    """One run: a driver joined to the cluster (RAY_ADDRESS), no Prefect."""
    from evalfleet.engine.pipeline import evaluate, plain_steps
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.request import EvalRequest

    kind, value = args.limit.split("=")
    limits = {kind: {args.model: int(value)}}
    request = EvalRequest(
        models=[args.model],
        benchmarks=["zerobench"],
        dataset_path=args.dataset,
        run_id=args.run_id,
        store=args.store,
        simulator_url=args.simulator_url,
        max_in_flight=128,
        **limits,
    )
    evaluate(resolve(request), plain_steps())


def phase(model: str, limit_flag: str, limit: int, common: list[str], env, window_s, log, sim):
    """Two runs at once; returns the window's admitted entries once it has passed."""
    procs = []
    for n in (1, 2):
        command = [sys.executable, __file__, "--child", "--model", f"openai/{model}"]
        command += ["--limit", f"{limit_flag}={limit}", "--run-id", f"{model}-{n}", *common]
        procs.append(subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL))
    first = None
    try:
        while first is None or time.time() < first + window_s + 2:
            time.sleep(1)
            sim.flush_log()
            if first is None:
                first = first_admitted(log, model)
            for proc in procs:
                if proc.poll() is not None:
                    raise SystemExit(f"a run ended before the window did (exit {proc.returncode})")
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    sim.flush_log()
    entries = [e for e in read_log(log) if e.get("model") == model]
    window = [e for e in entries if first <= e["t"] < first + window_s]
    return window, entries


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def first_admitted(log: Path, model: str) -> float | None:
    times = [e["t"] for e in read_log(log) if e.get("model") == model and e["status"] == 200]
    return min(times) if times else None


SMOKE = {"questions": 100, "window_s": 5.0}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rpm", type=int, default=1200)
    parser.add_argument("--tpm", type=int, default=600_000)
    parser.add_argument("--window-s", type=float, default=95.0)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("--model", "--limit", "--run-id", "--dataset", "--store", "--simulator-url"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="5 s windows: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    if args.child:
        child(args)
        return

    import ray

    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.simulator.process import start_simulator
    from perf.throughput import write_dataset

    work = work_folder("ratelimit")
    dataset = write_dataset(work / "zerobench", args.questions)
    answers = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    config = {
        "latency": {"ms": args.latency_ms},
        "rules": [
            {"match": RPM_MODEL, "requests_per_minute": args.rpm},
            {"match": TPM_MODEL, "tokens_per_minute": args.tpm},
        ],
    }
    from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG

    context = ray.init(include_dashboard=False, num_cpus=2, _system_config=RAY_SYSTEM_CONFIG)
    env = {**os.environ, "RAY_ADDRESS": context.address_info["gcs_address"]}
    env["PYTHONPATH"] = str(ROOT)
    log = work / "sim.jsonl"
    try:
        with start_simulator(answers, config, log) as sim:
            common = ["--dataset", dataset, "--store", str(work / "runs")]
            common += ["--simulator-url", sim.url]
            rpm_window, rpm_all = phase(
                RPM_MODEL, "rpm", args.rpm, common, env, args.window_s, log, sim
            )
            tpm_window, tpm_all = phase(
                TPM_MODEL, "tpm", args.tpm, common, env, args.window_s, log, sim
            )
    finally:
        ray.shutdown()
    minutes = args.window_s / 60.0
    admitted = [e for e in rpm_window if e["status"] == 200]
    rpm_share = len(admitted) / (args.rpm * minutes)
    tokens = sum(
        (e.get("input_tokens") or 0) + (e.get("output_tokens") or 0)
        for e in tpm_window
        if e["status"] == 200
    )
    tpm_share = tokens / (args.tpm * minutes)
    limiter_429s = sum(1 for e in [*rpm_all, *tpm_all] if e["status"] == 429)
    print(
        f"rpm={args.rpm} tpm={args.tpm} window_s={args.window_s:g} "
        f"latency_ms={args.latency_ms:g} requests_in_window={len(admitted)} "
        f"tokens_in_window={tokens}"
    )
    print(f"rpm_share={rpm_share:.3f} tpm_share={tpm_share:.3f} limiter_429s={limiter_429s}")


if __name__ == "__main__":
    main()
