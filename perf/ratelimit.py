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

Then the headers case: a third model the run gives no limit (and the registry has none for a
simulated model), which the simulator limits to --headers-rpm (600) and says so in its
OpenAI headers (x-ratelimit-limit-requests, -remaining-requests). One run, measured over
--headers-window-s (120) from its first admitted request; then `evalfleet limits RUN --rpm
--retune-rpm` (300) retunes it, and it is watched 30 s more:

  headers_rpm_share  requests admitted in the window / (--headers-rpm * window / 60)
  headers_429_share  429s / calls the simulator answered in the window
  retune_s           from the retune command's return to the last moment the requests
                     admitted over the trailing 5 s were above --retune-rpm (+10 %)

Usage: python perf/ratelimit.py [--rpm 1200] [--tpm 600000] [--window-s 95] [--latency-ms 200]
                                [--questions 600] [--headers-rpm 600] [--headers-window-s 120]
                                [--retune-rpm 300] [--smoke]
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
HDR_MODEL = "sim-0.5-hdr"  # no limit given: the simulator's headers state it


def child(args: argparse.Namespace) -> None:
    """One run: a driver joined to the cluster (RAY_ADDRESS), no Prefect."""
    from evalfleet.engine.pipeline import evaluate, plain_steps
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.request import EvalRequest

    kind, value = args.limit.split("=")
    limits = {kind: {args.model: int(value)}} if kind != "none" else {}
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


def headers_case(args, common: list[str], env, log: Path, sim, store: str):
    """One run with no limit of its own against the simulator's stated 600 rpm, then
    retuned: (headers_rpm_share, headers_429_share, retune_s)."""
    run_id = f"{HDR_MODEL}-1"
    command = [sys.executable, __file__, "--child", "--model", f"openai/{HDR_MODEL}"]
    command += ["--limit", "none=0", "--run-id", run_id, *common]
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    retuned = first = None
    watch_s = 30.0 if not args.smoke else 8.0
    try:
        while first is None or time.time() < first + args.headers_window_s + 1:
            time.sleep(0.5)
            sim.flush_log()
            if first is None:
                first = first_admitted(log, HDR_MODEL)
            if proc.poll() is not None:
                raise SystemExit(f"the headers run ended early (exit {proc.returncode})")
        limits = [sys.executable, "-m", "evalfleet.cli.main", "limits", run_id]
        limits += ["--rpm", str(args.retune_rpm), "--store", store]
        subprocess.run(limits, env=env, cwd=ROOT, check=True, capture_output=True)
        retuned = time.time()
        time.sleep(watch_s)
    finally:
        proc.kill()
        proc.wait()
    sim.flush_log()
    entries = [e for e in read_log(log) if e.get("model") == HDR_MODEL]
    end = first + args.headers_window_s
    window = [e for e in entries if first <= e["t"] < end]
    admitted = [e for e in window if e["status"] == 200]
    share = len(admitted) / (args.headers_rpm * args.headers_window_s / 60.0)
    share_429 = sum(1 for e in window if e["status"] == 429) / max(1, len(window))
    times = sorted(e["t"] for e in entries if e["status"] == 200)
    most = args.retune_rpm / 60.0 * 5.0 * 1.1  # in any trailing 5 s, at the retuned rate
    last_over = retuned
    t = retuned
    while t <= retuned + watch_s:
        if sum(1 for x in times if t - 5.0 < x <= t) > most:
            last_over = t
        t += 0.1
    return share, share_429, last_over - retuned


SMOKE = {"questions": 100, "window_s": 5.0, "headers_window_s": 5.0}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rpm", type=int, default=1200)
    parser.add_argument("--tpm", type=int, default=600_000)
    parser.add_argument("--window-s", type=float, default=95.0)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--headers-rpm", type=int, default=600)
    parser.add_argument("--headers-window-s", type=float, default=120.0)
    parser.add_argument("--retune-rpm", type=int, default=300)
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
            {"match": HDR_MODEL, "requests_per_minute": args.headers_rpm},
        ],
    }
    from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG

    # "local": a new instance, never a `ray start` cluster another program runs on this machine
    context = ray.init(
        address="local", include_dashboard=False, num_cpus=2, _system_config=RAY_SYSTEM_CONFIG
    )
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
            stated = headers_case(args, common, env, log, sim, str(work / "runs"))
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
    print(
        f"rpm_share={rpm_share:.3f} tpm_share={tpm_share:.3f} limiter_429s={limiter_429s} "
        f"headers_rpm_share={stated[0]:.3f} headers_429_share={stated[1]:.4f} "
        f"retune_s={stated[2]:.1f}"
    )


if __name__ == "__main__":
    main()
