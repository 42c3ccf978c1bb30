"""The team's deployment rehearsed on one machine, with real processes on loopback, and two of
its parts lost mid-run.

It brings up, through evalfleet's own commands:
- a Prefect server, deployments/prefect.yaml applied to the process work pool `evalfleet`,
  and two `prefect worker` processes (`evalfleet up --pool --workers 2`);
- a Ray head that hosts no work and two worker nodes, each its own `ray start --address`
  (`--ray --ray-nodes 2`);
- S3 on moto's server, the store of the run;
- the provider simulator.

Then it starts one run of three models (one per provider API) on 100 ZeroBench-format
questions, 2 epochs (600 answers), through the Prefect API as the UI does, and during it:
1. SIGKILLs one Ray worker node's process group (its raylet, agents and workers): the run
   goes on, on the other node;
2. SIGKILLs the pool worker running the flow run and the flow-run process it started (its
   machine is gone): the crash automation marks the flow run Crashed (its window is
   --crash-after seconds; flow runs beat every 30 s, Prefect's minimum);
3. retries the flow run through the API: the other worker resumes it from the store.
Then `evalfleet down`.

Last line:
  lost                answers the simulator gave (a usable 200) that have no stored record
  repeated            usable answers beyond the first to the same request, not explained by
                      a kill (the request in flight when its node or driver was killed)
  crashed_marked_s    from the worker's SIGKILL to the flow run seen Crashed
  resumed             1 if the retried flow run completed on the other worker
  leftover_processes  processes of the rehearsal alive 30 s after `evalfleet down`
Targets: lost=0 repeated=0 resumed=1 leftover_processes=0.

Usage: python perf/team.py [--questions 100] [--crash-after 40] [--latency-ms 300] [--smoke]
  --smoke   20 questions (120 answers) at 1,000 ms, so that both kills still land mid-run,
            and the shortest crash window (35 s): every step above, in two to three minutes
            rather than seconds (the stack's start and Prefect's 30 s heartbeat are most of
            it); a check that the script works, not a measurement
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from perf.work import keep, work_folder  # noqa: E402
from tests.support.leftovers import removed_afterwards  # noqa: E402

MODELS = ["openai/sim-0.5", "anthropic/sim-0.6", "google/sim-0.4"]
USABLE = ("ok", "length", "truncate")
WRITE_S = 5.0  # after its answer, an item's record may still be being written
RUN_ID = "team"


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


class Rehearsal:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = work_folder("team")
        self.tag = f"team-{uuid.uuid4().hex[:12]}"
        self.kills: list[float] = []

    def evalfleet(self, *args: str) -> subprocess.CompletedProcess:
        evalfleet = str(Path(sys.executable).with_name("evalfleet"))
        done = subprocess.run([evalfleet, *args], env=self.env, capture_output=True, text=True)
        (self.work / "commands.log").open("a").write(f"$ evalfleet {' '.join(args)}\n"
                                                     f"{done.stdout}{done.stderr}\n")  # fmt: skip
        return done

    def stored(self) -> int:
        prefix = f"{RUN_ID}/{RUN_ID}/completions/"
        pages = self.s3_client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        return sum(len(p.get("Contents", ())) for p in pages)

    def wait_stored(self, count: int, timeout_s: float = 300) -> int:
        deadline = time.monotonic() + timeout_s
        while (now := self.stored()) < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {now} records stored after {timeout_s:.0f} s")
            time.sleep(0.3)
        return now

    def main(self) -> None:
        from evalfleet.benchmarks.answer_key import write_answer_key
        from evalfleet.simulator.process import start_simulator
        from evalfleet.stack.services import free_port
        from perf.throughput import write_dataset
        from tests.support.helpers import wait_for_no_processes
        from tests.support.s3_server import FAKE_AWS_ENV, MotoS3Server
        from tests.support.stack import Stack

        dataset = write_dataset(self.work / "zerobench", self.args.questions)
        answers = write_answer_key(dataset, ["zerobench"], self.work / "answers.jsonl")
        os.environ.update(FAKE_AWS_ENV)
        s3 = MotoS3Server()
        s3.start()
        self.bucket = f"evalfleet-team-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(self.bucket)
        import boto3

        self.endpoint = s3.endpoint
        self.s3_client = boto3.client("s3", endpoint_url=s3.endpoint)
        store = f"s3://{self.bucket}/{RUN_ID}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
        self.env.update(
            EVALFLEET_TEST_TAG=self.tag,
            EVALFLEET_STACK=str(self.work / "state"),
            EVALFLEET_HOME=str(self.work / "home"),
            EVALFLEET_CRASH_AFTER_S=str(self.args.crash_after),
            AWS_ENDPOINT_URL_S3=s3.endpoint,
            RAY_USAGE_STATS_ENABLED="0",
        )
        port = free_port()
        latency = {"ms": self.args.latency_ms, "distribution": "uniform", "jitter_ms": 100}
        log = self.work / "sim.jsonl"
        figures: dict[str, object] = {}
        try:
            with start_simulator(answers, {"latency": latency}, log) as sim:
                say("evalfleet up --pool --workers 2 --ray --ray-nodes 2")
                started = time.monotonic()
                up = self.evalfleet(
                    "up", "--pool", "--workers", "2", "--ray", "--ray-nodes", "2",
                    "--port", str(port), "--store", store,
                )  # fmt: skip
                if up.returncode != 0:
                    keep(self.work)  # the stack's logs, under state/
                    raise SystemExit(f"evalfleet up failed:\n{up.stdout}{up.stderr}")
                say(f"up in {time.monotonic() - started:.0f} s")
                stack = Stack(self.env, self.tag, f"http://127.0.0.1:{port}", Path(), sim.url,
                              log, self.work)  # fmt: skip
                figures = self.drive(stack, dataset, store, s3.endpoint)
                sim.flush_log()
            figures["lost"], figures["repeated"] = self.count(log)
        finally:
            down = self.evalfleet("down")
            say("evalfleet down" + ("" if down.returncode == 0 else f" failed: {down.stderr}"))
            s3.stop()
        left = wait_for_no_processes(self.tag, timeout_s=30)
        for pid, command in left:
            say(f"left: {pid} {command[:120]}")
        figures["leftover_processes"] = len(left)
        if figures["lost"] or figures["repeated"] or left or not figures.get("resumed"):
            keep(self.work)
        print(
            f"lost={figures['lost']} repeated={figures['repeated']} "
            f"crashed_marked_s={figures.get('crashed_marked_s', float('nan')):.0f} "
            f"resumed={figures.get('resumed', 0)} leftover_processes={len(left)}"
        )

    def drive(self, stack, dataset: str, store: str, endpoint: str) -> dict[str, object]:
        from tests.support.stack import kill_tree, worker_of, worker_running

        state = json.loads((self.work / "state" / "stack.json").read_text())
        request = {
            "models": MODELS,
            "benchmarks": ["zerobench"],
            "dataset_path": dataset,
            "protocol": "sampled-k",
            "epochs": 2,
            "run_id": RUN_ID,
            "store": store,
            "s3_endpoint_url": endpoint,
            "simulator_url": stack.sim_url,
            "max_in_flight": 12,
        }
        total = len(MODELS) * self.args.questions * 2
        flow_run = stack.start_run("evaluate-and-aggregate/evaluate", request)
        say(f"flow run {flow_run} started through the API: {total} answers")

        at = self.wait_stored(total // 5)
        node = state["ray_nodes"][0]
        os.killpg(node["pid"], signal.SIGKILL)  # the node's raylet, agents and workers
        self.kills.append(time.time())
        say(f"Ray node 1 (pid {node['pid']}) SIGKILLed at {at} records")

        at = self.wait_stored(total // 2)
        name = worker_running({w["address"]: w["pid"] for w in state["workers"]}, flow_run)
        worker = next(w for w in state["workers"] if w["address"] == name)
        killed_at = time.time()
        self.kills.append(killed_at)
        tree = kill_tree(worker["pid"])
        say(f"{name} and its flow run SIGKILLed at {at} records ({len(tree)} processes)")

        crashed = stack.wait(flow_run, timeout=self.args.crash_after + 120)
        marked_s = time.time() - killed_at
        say(f"flow run {crashed['state']['name']} {marked_s:.0f} s after the kill")
        if crashed["state"]["name"] != "Crashed":
            return {"crashed_marked_s": marked_s, "resumed": 0}

        stack.retry(flow_run)
        done = stack.wait(flow_run, timeout=600)
        other = next(w for w in state["workers"] if w["address"] != name)
        resumed_by = worker_of([Path(other["log"])], flow_run)
        stored = self.stored()
        say(f"retried: {done['state']['name']} by {resumed_by}; {stored}/{total} records")
        ok = done["state"]["name"] == "Completed" and resumed_by == other["address"]
        return {"crashed_marked_s": marked_s, "resumed": int(ok and stored == total)}

    def count(self, log: Path) -> tuple[int, int]:
        """Usable answers without a stored record, and repeats no kill explains."""
        from evalfleet.engine.prepare.resolve import resolve
        from evalfleet.engine.run.items import answer_items
        from evalfleet.engine.run.request import EvalRequest
        from evalfleet.simulator.answering import prompt_sha256
        from evalfleet.storage import layout, open_store

        entries = [json.loads(x) for x in log.read_text().splitlines()]
        usable = [e for e in entries if e["status"] == 200 and e.get("outcome") in USABLE]
        answered = Counter((e["model"], e["prompt_sha256"], e["seed"]) for e in usable)
        cut_off = Counter(
            (e["model"], e["prompt_sha256"], e["seed"])
            for e in usable
            if any(e["t"] <= k <= e["t"] + e["latency_ms"] / 1000 + WRITE_S for k in self.kills)
        )
        repeated = sum(max(0, n - 1 - cut_off[k]) for k, n in answered.items())

        store = open_store(f"s3://{self.bucket}/{RUN_ID}", s3_endpoint_url=self.endpoint)
        done = set()
        for key in store.list(f"{RUN_ID}/completions/"):
            name = layout.parse_record_key(RUN_ID, key)
            if name is not None and not name.failed:
                done.add(name.item)
        plan = EvalRequest(
            models=MODELS,
            benchmarks=["zerobench"],
            dataset_path=str(self.work / "zerobench"),
            protocol="sampled-k",
            epochs=2,
            run_id="team-plan",
            store=str(self.work / "plan-store"),
            simulator_url="http://127.0.0.1:9",
        )
        run = resolve(plan)
        prompts = {
            s.id: prompt_sha256(next(p.text for p in s.parts if p.kind == "text"))
            for s in run.data["zerobench"].samples
        }
        items = {
            (run.configs[i.key.model].api_model, prompts[i.key.sample_id], i.decoding.seed): i.key
            for i in answer_items(run)
        }
        lost = sum(1 for key in answered if key in items and items[key] not in done)
        return lost, repeated


SMOKE = {"questions": 20, "crash_after": 35, "latency_ms": 1000.0}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--crash-after", type=int, default=40)
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--smoke", action="store_true", help="120 answers: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    with removed_afterwards():  # the lost flow run's workspace, the runners' storage
        Rehearsal(args).main()


if __name__ == "__main__":
    main()
