"""A bare asyncio client: the pipeline's chat-completions requests with no framework at all.

The floor `perf/throughput.py` compares the pipeline against: aiohttp and the standard library
only (no Ray, no Prefect, no openai SDK). For every (model, sample, epoch) it does what the
pipeline does per item, at minimum, inside the timed window:

- builds the chat-completions body the openai SDK sends for the item (`chat_body`: the user
  message's text part and base64 PNG `image_url` part, `max_completion_tokens`, and
  temperature / top_p / seed as the epoch protocol gives them; None is not sent), base64 and
  JSON encoding included;
- POSTs it to the simulator with at most `--in-flight` requests in flight (one semaphore, plus
  one per model when `--per-model-limit` is given, as the pipeline's dispatcher caps each
  model at its `max_concurrency`);
- parses the JSON response and checkpoints one JSON record per item the way the local store
  does (temp file beside the target, hard link, unlink), under `--out`.

Samples and the epochs' decodings come from the project's own benchmark code (data loading,
outside the timed window), so the prompts are byte-identical to the pipeline's.

Run by `perf/throughput.py` in its own process (so no Ray or Prefect thread shares its
interpreter); prints one JSON object as its last line: items, elapsed_s, statuses, and the
CPU used over the timed window by itself, the simulator (`--simulator-pid`) and the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalfleet.benchmarks.protocols import Sampling, decodings  # noqa: E402
from evalfleet.core.types import Decoding, Part, Sample  # noqa: E402

API_KEY = "simulator-key"  # what the pipeline sends the simulator (EVALFLEET_SIMULATOR_API_KEY)


def chat_content(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Text and image parts as chat `content`, in order (as providers.openai_chat does)."""
    content: list[dict[str, Any]] = []
    for part in parts:
        if part.kind == "text":
            content.append({"type": "text", "text": part.text or ""})
        elif part.kind == "image":
            b64 = base64.b64encode(part.data or b"").decode("ascii")
            url = f"data:{part.media_type};base64,{b64}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise ValueError(f"the bare client sends text and images, not {part.kind}")
    return content


def chat_body(api_model: str, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
    """The JSON body of one chat completion, as the pipeline's openai client sends it to a
    simulated model (which accepts every parameter and has no output cap)."""
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": chat_content(parts)}],
        "model": api_model,
        "max_completion_tokens": decoding.max_tokens,
    }
    for name in ("temperature", "top_p", "seed", "reasoning_effort"):
        value = getattr(decoding, name)
        if value is not None:
            body[name] = value
    return body


def checkpoint(root: str, key: str, data: bytes) -> bool:
    """Put-if-absent as the local store does it: temp file, hard link, unlink."""
    path = os.path.join(root, *key.split("/"))
    if os.path.lexists(path):
        return False
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


Job = tuple[str, Sample, int, Decoding]  # (api model, sample, epoch, decoding)


def make_jobs(models: Sequence[str], samples: Sequence[Sample], epochs: Sequence[Decoding]):
    """Every (model, sample, epoch), the models taking turns (as the dispatcher serves them)."""
    for sample in samples:
        for epoch, decoding in enumerate(epochs):
            for model in models:
                yield model, sample, epoch, decoding


async def run(
    base_url: str,
    jobs: Iterable[Job],
    *,
    in_flight: int,
    per_model_limit: int | None,
    out: str,
    run_id: str = "bare",
    benchmark: str = "zerobench",
) -> dict[str, Any]:
    import aiohttp

    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    statuses: Counter[str] = Counter()
    overall = asyncio.Semaphore(in_flight)
    per_model: dict[str, asyncio.Semaphore] = {}
    connector = aiohttp.TCPConnector(limit=in_flight, limit_per_host=in_flight)
    timeout = aiohttp.ClientTimeout(total=60)

    async def one(session: aiohttp.ClientSession, job: Job) -> None:
        model, sample, epoch, decoding = job
        started = time.time()
        try:
            payload = json.dumps(chat_body(model, sample.parts, decoding)).encode()
            t0 = time.monotonic()
            async with session.post(url, data=payload, headers=headers) as response:
                raw = await response.read()
                status = response.status
                request_id = response.headers.get("x-request-id")
            latency = time.monotonic() - t0
            if status != 200:
                statuses[f"http_{status}"] += 1
                return
            body = json.loads(raw)
            choice = body["choices"][0]
            record = {
                "run_id": run_id,
                "model": model,
                "benchmark": benchmark,
                "sample_id": sample.id,
                "epoch": epoch,
                "request": decoding.to_dict(),
                "model_reported": body.get("model"),
                "response": choice["message"].get("content"),
                "reasoning": choice["message"].get("reasoning_content"),
                "finish_reason": choice.get("finish_reason"),
                "usage": body.get("usage"),
                "request_id": request_id,
                "latency_s": latency,
                "started": started,
                "finished": time.time(),
            }
            key = f"{run_id}/completions/{model}/{benchmark}/{sample.id}/{epoch}.json"
            data = json.dumps(record, ensure_ascii=False).encode()
            statuses["ok" if checkpoint(out, key, data) else "exists"] += 1
        except Exception as exc:  # counted, never silently dropped
            statuses[type(exc).__name__] += 1

    async def guarded(session: aiohttp.ClientSession, job: Job, model_gate) -> None:
        try:
            await one(session, job)
        finally:
            overall.release()
            if model_gate is not None:
                model_gate.release()

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks: set[asyncio.Task[None]] = set()
        started = time.monotonic()
        for job in jobs:
            gate = None
            if per_model_limit is not None:
                gate = per_model.setdefault(job[0], asyncio.Semaphore(per_model_limit))
                await gate.acquire()
            await overall.acquire()
            task = asyncio.create_task(guarded(session, job, gate))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*list(tasks))
        elapsed = time.monotonic() - started
    return {"items": sum(statuses.values()), "elapsed_s": elapsed, "statuses": dict(statuses)}


# --- CPU accounting from /proc (also used by perf/throughput.py) -----------------------------

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int | str) -> float:
    """User + system CPU seconds of one process (all its threads); 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def all_cpu() -> dict[int, tuple[str, float]]:
    """Every process's (name, CPU seconds)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = tail.split()
        out[int(entry)] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / TICKS)
    return out


def host_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class CpuWindow:
    """Over one window: CPU seconds of named sets of processes, of every other process
    (`outside`: another user's load, or kernel threads doing loopback networking; the busiest
    one is named), and the machine's busy cores (all of it, interrupts included)."""

    def __init__(self, pids: dict[str, set[int]]) -> None:
        self.pids = pids
        self.before = all_cpu()
        self.host_before = host_cpu()
        self.started = time.monotonic()

    def close(self, also_ours: set[int] = frozenset()) -> dict[str, Any]:
        after = all_cpu()
        busy, total = host_cpu()
        wall = time.monotonic() - self.started

        def used(pid: int) -> float:
            name, cpu = after.get(pid) or self.before.get(pid, ("", 0.0))
            return cpu - self.before.get(pid, (name, 0.0))[1]

        out: dict[str, Any] = {name: sum(used(p) for p in ps) for name, ps in self.pids.items()}
        ours = set(also_ours).union(*self.pids.values())
        outside = {p: used(p) for p in after if p not in ours}
        out["outside"] = sum(outside.values())
        top = max(outside, key=outside.get, default=None)
        out["outside_top"] = (
            f"{after[top][0]}:{outside[top] / wall:.2f}cores" if top is not None else "-"
        )
        busy_share = (busy - self.host_before[0]) / max(1, total - self.host_before[1])
        out["host_busy_cores"] = busy_share * (os.cpu_count() or 1)
        out["wall_s"] = wall
        return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", required=True, help="the simulator's OpenAI root (.../v1)")
    parser.add_argument("--dataset", required=True, help="a ZeroBench-format save_to_disk copy")
    parser.add_argument("--models", required=True, help="API model names, comma-separated")
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--per-model-limit", type=int, default=None)
    parser.add_argument("--out", required=True, help="directory for the records")
    parser.add_argument("--epochs", type=int, default=5, help="sampled epochs after the greedy")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument("--max-tokens", type=int, default=16000)
    parser.add_argument("--base-seed", type=int, default=42)
    parser.add_argument("--simulator-pid", type=int, default=None, help="report its CPU too")
    args = parser.parse_args(argv)

    from evalfleet.benchmarks.zerobench.dataset import load_samples

    samples, _ = load_samples("zerobench", args.dataset)
    sampling = Sampling(args.temperature, args.top_p, args.max_tokens, args.base_seed)
    epochs = decodings("zerobench-paper", args.epochs, sampling)
    models = args.models.split(",")
    jobs = list(make_jobs(models, samples, epochs))
    window = CpuWindow({"client": {os.getpid()}, "simulator": {args.simulator_pid} - {None}})
    result = asyncio.run(
        run(
            args.base_url,
            jobs,
            in_flight=args.in_flight,
            per_model_limit=args.per_model_limit,
            out=args.out,
        )
    )
    result["cpu"] = window.close()
    with open("/proc/self/status", encoding="ascii") as f:
        # VmHWM, not getrusage: ru_maxrss of a child counts the RSS it was forked with
        peak_kb = int(f.read().split("VmHWM:", 1)[1].split()[0])
    result["peak_rss_mb"] = peak_kb / 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()
