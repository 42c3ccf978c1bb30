"""Throughput of the real pipeline (Prefect flow -> Ray actors -> openai SDK -> simulator -> store).

Builds a ZeroBench-format dataset of Q questions (one small PNG each), starts the simulator
with a fixed latency and no rate limit, and runs the `evaluate` flow for M simulated models
with the zerobench-paper protocol (6 epochs), so N = Q * 6 * M items.

Figures (last line):
  items_per_s            items / wall time of the generate phase (dispatch to last checkpoint)
  overhead_ms_per_item   (wall - ideal) / N, where ideal = N * latency / in_flight is the time a
                         perfect pipeline bound only by latency and concurrency would take:
                         the wall time each item costs beyond that ideal

Usage: python perf/throughput.py [--questions 500] [--models 2] [--latency-ms 200]
                                 [--in-flight 256] [--workers 2]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def write_dataset(path: Path, questions: int) -> str:
    import datasets
    from PIL import Image

    def png(i: int) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (32, 32), (i % 256, (i * 7) % 256, (i * 13) % 256)).save(buffer, "PNG")
        return buffer.getvalue()

    features = datasets.Features(
        {
            "question_id": datasets.Value("string"),
            "question_text": datasets.Value("string"),
            "question_images_decoded": datasets.Sequence(datasets.Image()),
            "question_images": datasets.Sequence(datasets.Value("string")),
            "question_answer": datasets.Value("string"),
            "image_attribution": datasets.Value("string"),
        }
    )
    rows = {
        "question_id": [str(i + 1) for i in range(questions)],
        "question_text": [f"What is the colour code of image {i + 1}?" for i in range(questions)],
        "question_images_decoded": [[{"bytes": png(i), "path": None}] for i in range(questions)],
        "question_images": [[f"images/{i + 1}_0.png"] for i in range(questions)],
        "question_answer": [str(i * 7 % 1000) for i in range(questions)],
        "image_attribution": ["generated"] * questions,
    }
    dataset = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"zerobench": dataset}).save_to_disk(str(path))
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from flows.demo import write_answer_key
    from flows.evaluate import evaluate
    from flows.request import EvalRequest
    from providers.simulator.process import start_simulator

    work = Path(tempfile.mkdtemp(prefix="evalfleet-perf-"))
    dataset = write_dataset(work / "zerobench", args.questions)
    answers = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    models = [f"openai/sim-0.{5 + i % 5}-m{i}" for i in range(args.models)]
    config = {"latency": {"ms": args.latency_ms}}
    with start_simulator(answers, config, work / "sim.jsonl") as sim:
        request = EvalRequest(
            models=models,
            benchmarks=["zerobench"],
            dataset_path=dataset,
            run_id="throughput",
            store=str(work / "runs"),
            simulator_url=sim.url,
            max_in_flight=args.in_flight,
            workers=args.workers,
        )
        started = time.monotonic()
        result = evaluate(request)
        total = time.monotonic() - started
    items = result["submitted"]
    wall = result["elapsed_s"]
    rate = items / wall
    ideal = items * (args.latency_ms / 1000) / args.in_flight
    overhead_ms = (wall - ideal) / items * 1000
    print(
        f"items={items} generate_s={wall:.2f} flow_total_s={total:.2f} "
        f"in_flight={args.in_flight} latency_ms={args.latency_ms:.0f} statuses={result['statuses']}"
    )
    print(f"items_per_s={rate:.1f} overhead_ms_per_item={overhead_ms:.1f}")


if __name__ == "__main__":
    main()
