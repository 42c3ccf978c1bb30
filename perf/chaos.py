"""Chaos: drive one run through kills and faults, then count what was lost or paid twice.

Everything is real and on loopback: a two-node Ray cluster (`ray.cluster_utils.Cluster`),
a Prefect server (Prefect's test harness), moto's S3 server injecting write faults, and the
provider simulator injecting provider faults. The run (`evalfleet run`, one model per
provider, each behind its own fault mix) goes through:

1. repeated SIGKILLs of the driver's process group, each followed by a resume;
2. the worker node killed mid-run, with the run's workers on it (the head hosts none): their
   calls are sent again to replacements on a node that joined meanwhile;
3. all along: a 429 storm with Retry-After on one model (the simulator allows it fewer
   requests a minute than the run sends, and the run declares no limit), 5xx/529 bursts (on
   one model so many that some items use up their attempts and end as errors),
   hangs past the per-attempt timeout, malformed JSON bodies and truncated answers; record
   writes to S3 refused (503 SlowDown), written with the response lost (500), or slow;
4. then the faults stop (a clean simulator on the same port, no S3 faults) and a last
   resume with --no-retry-errors finishes the run.

Every call carries a canary API key. The last line:

  lost          items the simulator answered (a usable 200) that have no stored record
  repeated      usable answers to the same request beyond the first, not explained by a
                kill: an item in flight when the driver or the node was killed (its request
                sent, its record not yet written: up to WRITE_S after the answer)
  unfinished    items with no record at all once the faults stopped and the run resumed
  secrets       places the canary key was found: S3 objects, the runs' output, Ray's logs,
                Prefect's logs, artifacts and flow-run parameters
  errors_apart  items whose stored record is an error (kept apart from wrong answers)

Usage: python perf/chaos.py [--questions 40] [--kills 3] [--workers 2] [--in-flight 32]
                            [--latency-ms 300] [--seed 0] [--smoke] [--outage [--outage-s 10]]
  --smoke   4 questions (72 items), one driver kill (at 24 records), the worker node added and
            killed 6 records apart; one worker actor and 8 calls in flight a run at 600 ms,
            so that the resumed run outlasts the node's start: every step above at a size that
            runs in about a minute (a check that the script works, not a measurement)
  --outage  instead of the above: a run (one model, 64 in flight, 200 ms) whose simulator is
            stopped for --outage-s seconds mid-run and started again on its port. Its last line:
              outage_recovery_s  from the simulator's return to the end of the first second in
                                 which the run's answers are back to 90 % of their rate over
                                 the 10 s before the outage (the simulator's request log; 1.0
                                 is the least it can say)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG  # noqa: E402
from perf.work import keep, work_folder  # noqa: E402
from tests.support.leftovers import removed_afterwards  # noqa: E402

CANARY = "sk-chaos-canary-" + uuid.uuid4().hex
MODELS = ("openai/sim-0.5", "anthropic/sim-0.6", "google/sim-0.4")
EPOCHS = 6  # zerobench's default protocol
USABLE = ("ok", "length", "truncate")  # outcomes of a 200 that gave an answer
LATENCY = {"ms": 300, "distribution": "uniform", "jitter_ms": 150}
FAULTS = {
    "http_500": 0.03,
    "http_503": 0.03,
    "http_529": 0.02,
    "hang": 0.01,
    "hang_s": 12,
    "malformed_json": 0.03,
    "truncate": 0.03,
}
STORM = {"match": "sim-0.6", "requests_per_minute": 200}  # the run sends more: 429s
# Most attempts fail: some items use up their 6 attempts and are stored as errors.
FLAKY = {"match": "sim-0.4", "faults": {"http_500": 0.55}}
# How long after its answer an item may still be in flight: its checkpoint write (the
# injected slow writes, 1.5 s, and the store's own retries with back-off).
WRITE_S = 5.0


class Chaos:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = work_folder("chaos")
        self.kills: list[tuple[float, float]] = []  # (killed at, resumed at)
        self.outputs: list[Path] = []

    # --- the run --------------------------------------------------------------------------

    def command(self, *extra: str) -> list[str]:
        args = ["run", *[x for m in MODELS for x in ("-m", m)], "-b", "zerobench"]
        args += ["--dataset-path", self.dataset, "--run-id", "chaos", "--store", self.store]
        args += ["--s3-endpoint-url", self.s3.endpoint, "--simulator-url", self.sim_url]
        args += ["--timeout-s", "4", "--max-in-flight", str(self.args.in_flight)]
        args += ["--workers", str(self.args.workers)]
        return [sys.executable, "-m", "evalfleet.cli.main", *args, *extra]

    def start(self, *extra: str) -> subprocess.Popen:
        out = self.work / f"run-{len(self.outputs)}.log"
        self.outputs.append(out)
        return subprocess.Popen(
            self.command(*extra),
            cwd=ROOT,
            env=self.env,
            stdout=out.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stored(self) -> list[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.bucket, Prefix="chaos/chaos/completions/")
        return [o["Key"] for p in pages for o in p.get("Contents", ())]

    def wait_for(self, proc: subprocess.Popen, more: int) -> bool:
        """Until `more` new records are stored; False if the run ended first."""
        target = len(self.stored()) + more
        while len(self.stored()) < target:
            if proc.poll() is not None:
                return False
            time.sleep(0.2)
        return True

    def quiet(self, sim) -> None:
        """Until the simulator has seen nothing for 2 s: a killed driver's actors are gone."""
        seen = -1
        for _ in range(60):
            sim.flush_log()
            now = len(self.log.read_text().splitlines()) if self.log.exists() else 0
            if now == seen:
                return
            seen = now
            time.sleep(2)

    def drive(self, cluster, worker_node, sim) -> None:
        # Records to wait for before each driver kill, then before the node is added and
        # killed: 40, 20 and 20, or less at a size where those would outlast the run.
        items = len(MODELS) * self.args.questions * EPOCHS
        before_kill, step = min(40, items // 3), min(20, items // 12)
        for _ in range(self.args.kills):
            proc = self.start()
            if not self.wait_for(proc, before_kill):
                break
            os.killpg(proc.pid, signal.SIGKILL)
            killed = time.time()
            proc.wait()
            self.quiet(sim)
            self.kills.append((killed, time.time()))
            print(f"driver killed at {len(self.stored())} records (t={killed:.2f})", flush=True)
        proc = self.start()
        if self.wait_for(proc, step):
            cluster.add_node(num_cpus=1)  # where the lost workers' replacements will go
            cluster.wait_for_nodes()
        if self.wait_for(proc, step):
            cluster.remove_node(worker_node)
            killed = time.time()
            self.kills.append((killed, killed))
            stored = len(self.stored())
            print(f"worker node killed at {stored} records (t={killed:.2f})", flush=True)
        code = proc.wait()
        print(f"run with faults ended with exit code {code}", flush=True)

    # --- the world ------------------------------------------------------------------------

    def main(self) -> None:
        from ray.cluster_utils import Cluster

        from evalfleet.benchmarks.answer_key import write_answer_key
        from evalfleet.simulator.process import start_simulator
        from perf.throughput import write_dataset
        from tests.support.prefect_server import prefect_server
        from tests.support.s3_server import FAKE_AWS_ENV, Chaos, MotoS3Server

        os.environ.update(FAKE_AWS_ENV)
        os.environ.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_ACCEPT_CLUSTER_AUTH_TOKEN": "1"})
        os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
        self.dataset = write_dataset(self.work / "zerobench", self.args.questions)
        answers = write_answer_key(self.dataset, ["zerobench"], self.work / "answers.jsonl")
        self.s3 = MotoS3Server()
        self.s3.start()
        self.bucket = f"evalfleet-chaos-{uuid.uuid4().hex[:8]}"
        self.s3.create_bucket(self.bucket)
        import boto3

        self.client = boto3.client("s3", endpoint_url=self.s3.endpoint)
        self.store = f"s3://{self.bucket}/chaos"
        fast_death = {"health_check_period_ms": 500, "health_check_failure_threshold": 4}
        # The head hosts no worker (no CPU): the run's workers are all on the node killed.
        config = {**fast_death, **RAY_SYSTEM_CONFIG}  # as the heads evalfleet starts
        head = {"num_cpus": 0, "include_dashboard": False, "_system_config": config}
        cluster = Cluster(initialize_head=True, connect=False, head_node_args=head)
        worker_node = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        self.log = self.work / "sim-faults.jsonl"
        clean_log = self.work / "sim-clean.jsonl"
        try:
            with prefect_server() as prefect_api_url:
                self.env = {
                    **os.environ,
                    "RAY_ADDRESS": cluster.address,
                    "PREFECT_API_URL": prefect_api_url,
                    "EVALFLEET_SIMULATOR_API_KEY": CANARY,
                    "TQDM_DISABLE": "1",
                }
                latency = {**LATENCY, "ms": self.args.latency_ms}
                faulty = {"latency": latency, "faults": FAULTS, "rules": [STORM, FLAKY]}
                self.s3.chaos(Chaos(refused=0.05, lost_response=0.05, slow=0.05, slow_s=1.5,
                                    rng=random.Random(self.args.seed)))  # fmt: skip
                with start_simulator(answers, {**faulty, "seed": self.args.seed}, self.log) as sim:
                    self.sim_url = sim.url
                    self.drive(cluster, worker_node, sim)
                    port = int(sim.url.rsplit(":", 1)[1])
                self.s3.chaos(None)
                with start_simulator(answers, {"latency": LATENCY}, clean_log, port) as sim:
                    final = self.start("--no-retry-errors")
                    code = final.wait()
                    sim.flush_log()
                print(f"run without faults ended with exit code {code}", flush=True)
                prefect_texts = asyncio.run(read_prefect())
        finally:
            cluster.shutdown()
        self.report([self.log, clean_log], prefect_texts, cluster)
        self.s3.stop()

    # --- the figures ----------------------------------------------------------------------

    def report(self, logs: list[Path], prefect_texts: list[str], cluster) -> None:
        from evalfleet.simulator.answering import prompt_sha256
        from evalfleet.storage import layout

        entries = [json.loads(x) for path in logs for x in path.read_text().splitlines()]
        usable = [e for e in entries if e["status"] == 200 and e.get("outcome") in USABLE]
        answered = Counter((e["model"], e["prompt_sha256"], e["seed"]) for e in usable)
        cut_off = Counter()
        for e in usable:
            start, end = e["t"], e["t"] + e["latency_ms"] / 1000 + WRITE_S
            if any(start <= resumed and killed <= end for killed, resumed in self.kills):
                cut_off[(e["model"], e["prompt_sha256"], e["seed"])] += 1
        repeated = sum(max(0, n - 1 - cut_off[k]) for k, n in answered.items())

        items = self.items(prompt_sha256)
        done, failed = set(), set()
        for key in self.stored():
            name = layout.parse_record_key("chaos", key[len("chaos/") :])
            if name is not None:
                (failed if name.failed else done).add(name.item)
        asked = {items[k] for k in answered if k in items}
        lost = len(asked - done)
        unfinished = len(set(items.values()) - done - failed)
        errors_apart = len(failed - done)
        secrets = self.secrets(prefect_texts)
        if lost or repeated or unfinished or secrets:
            keep(self.work)  # the logs and the request log, to look into
        print(
            f"items={len(items)} usable_answers={sum(answered.values())} "
            f"cut_off_by_kills={sum(cut_off.values())} kills={len(self.kills)} "
            f"s3_faults={self.s3.chaos_counts}"
        )
        print(
            f"lost={lost} repeated={repeated} unfinished={unfinished} secrets={secrets} "
            f"errors_apart={errors_apart}"
        )

    def items(self, prompt_sha256) -> dict[tuple[str, str, int], object]:
        """(simulator model name, prompt sha256, seed) -> the run's item key."""
        from evalfleet.engine.prepare.resolve import resolve
        from evalfleet.engine.run.items import answer_items
        from evalfleet.engine.run.request import EvalRequest

        os.environ["EVALFLEET_SIMULATOR_API_KEY"] = CANARY
        request = EvalRequest(
            models=list(MODELS),
            benchmarks=["zerobench"],
            dataset_path=self.dataset,
            run_id="chaos-plan",
            store=str(self.work / "plan-store"),
            simulator_url=self.sim_url,
        )
        prepared = resolve(request)
        prompts = {
            s.id: prompt_sha256(next(p.text for p in s.parts if p.kind == "text"))
            for s in prepared.data["zerobench"].samples
        }
        out = {}
        for item in answer_items(prepared):
            name = prepared.configs[item.key.model].api_model
            out[(name, prompts[item.key.sample_id], item.decoding.seed)] = item.key
        return out

    def secrets(self, prefect_texts: list[str]) -> int:
        found = 0
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        for key in [o["Key"] for p in pages for o in p.get("Contents", ())]:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            found += CANARY.encode() in body
        for path in self.outputs:
            found += CANARY in path.read_text(errors="replace")
        ray_logs = Path(tempfile.gettempdir()) / "ray"
        for path in ray_logs.glob("session_*/logs/*"):
            if path.is_file() and path.stat().st_mtime > self.started:
                found += CANARY.encode() in path.read_bytes()
        found += sum(CANARY in text for text in prefect_texts)
        return found


async def read_prefect() -> list[str]:
    from prefect.client.orchestration import get_client

    async def every(read) -> list:
        out, offset = [], 0
        while True:
            page = await read(limit=200, offset=offset)
            out += page
            if len(page) < 200:
                return out
            offset += 200

    async with get_client() as client:
        logs = await every(client.read_logs)
        artifacts = await every(client.read_artifacts)
        runs = await every(client.read_flow_runs)
    texts = [log.message for log in logs]
    texts += [json.dumps(a.data, default=str) for a in artifacts]
    texts += [json.dumps(r.parameters, default=str) for r in runs]
    print(f"prefect: {len(logs)} log lines, {len(artifacts)} artifacts, {len(runs)} flow runs")
    return texts


# Slower answers, fewer at a time: the resumed run lasts while the node is added and killed.
SMOKE = {"questions": 4, "kills": 1, "workers": 1, "in_flight": 8, "latency_ms": 600}


def outage_recovery(args: argparse.Namespace) -> None:
    """--outage: how long a run takes to answer at its steady rate again after an outage."""
    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.simulator.process import start_simulator
    from perf.throughput import write_dataset

    work = work_folder("outage")
    dataset = write_dataset(work / "zerobench", 3000)
    answers = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    log = work / "sim.jsonl"
    config = {"latency": {"ms": 200}}
    sim = start_simulator(answers, config, log)
    port = sim.port
    command = [sys.executable, "-m", "evalfleet.cli.main", "run", "-m", "openai/sim-0.5"]
    command += ["-b", "zerobench", "--dataset-path", dataset, "--store", str(work / "runs")]
    command += ["--simulator-url", sim.url, "--max-in-flight", "64", "--max-attempts", "20"]
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PREFECT_API_URL")}
    env["EVALFLEET_STACK"] = str(work / "no-stack")
    run = subprocess.Popen(
        command,
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def answered() -> list[float]:
        with contextlib.suppress(OSError):  # stopped: its log was flushed as it stopped
            sim.flush_log()
        lines = log.read_text().splitlines() if log.exists() else []
        return [e["t"] for e in map(json.loads, lines) if e.get("status") == 200]

    try:
        while len(answered()) < 200:  # the run's start-up (a Ray head, a Prefect server)
            if run.poll() is not None:
                raise SystemExit(f"the run ended before the outage (exit {run.returncode})")
            time.sleep(1.0)
        time.sleep(12.0)  # steady state, the 10 s measured and a margin
        down = time.time()
        sim.stop()
        time.sleep(args.outage_s)
        sim = start_simulator(answers, config, log, port)
        up = time.time()
        time.sleep(20.0)
        sim.flush_log()
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        sim.stop()
    times = sorted(answered())
    steady = sum(1 for t in times if down - 10.0 <= t < down) / 10.0
    recovered = None
    t = up + 1.0
    while t <= up + 20.0 and recovered is None:
        if sum(1 for x in times if t - 1.0 <= x < t) >= 0.9 * steady:
            recovered = t - up
        t += 0.1
    print(f"outage_s={up - down:.1f} steady_answers_per_s={steady:.1f}")
    figure = f"{recovered:.1f}" if recovered is not None else "nan"
    print(f"outage_recovery_s={figure}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="each run's worker actors")
    parser.add_argument("--in-flight", type=int, default=32, help="each run's --max-in-flight")
    parser.add_argument("--latency-ms", type=int, default=300, help="the faulty simulator's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="72 items: a check, not a figure")
    parser.add_argument("--outage", action="store_true", help="the outage recovery instead")
    parser.add_argument("--outage-s", type=float, default=10.0)
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    if args.outage:
        outage_recovery(args)
        return
    chaos = Chaos(args)
    chaos.started = time.time()
    with removed_afterwards():  # the killed node's Ray session, once searched for secrets
        chaos.main()


if __name__ == "__main__":
    main()
