"""How fast the run report opens and filters: a run of 20,000 answered items in headless
Chromium.

A synthetic ZeroBench-format dataset (2,000 questions with a noisy 384 x 384 JPEG each,
about 60 kB: photographs, not flat colours, so the thumbnails and the embedded full images
weigh what real ones do) and a run of two models x 5 epochs are planned by the real engine;
their 20,000 records are written straight into a local store (no requests), aggregated by
`aggregate_run`, and the report written by `reports.report.write_report`. Then Debian's
chromium opens the page and applies filters, the free-text search over every response
last.

Prints (last line): items=<n> open_s=<the first open: load to first render>
warm_open_s=<the median of three opens> filter_s=<the slowest filter> page_mb=<size>
build_s=<writing the report>. Needs chromium and chromedriver.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf.work import work_folder  # noqa: E402

MODELS = ["openai/sim-0.3-big", "openai/sim-0.7-big"]
FILTERS = [
    ("f-model", MODELS[0]),
    ("f-status", "incorrect"),
    ("f-epoch", "3"),
    ("f-status", "correct"),
    ("f-model", ""),
]


def write_dataset(path: Path, questions: int, side: int) -> str:
    """ZeroBench's schema, each question with one noisy JPEG of `side` pixels."""
    import io

    import datasets
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)

    def jpeg(i: int) -> bytes:
        base = np.linspace(0, 255, side, dtype=np.float32)[None, :, None]
        pixels = (base + rng.normal(0, 40, (side, side, 3)) + i) % 256
        buffer = io.BytesIO()
        Image.fromarray(pixels.astype(np.uint8)).save(buffer, "JPEG", quality=85)
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
        "question_text": [f"What is the code hidden in image {i + 1}?" for i in range(questions)],
        "question_images_decoded": [[{"bytes": jpeg(i), "path": None}] for i in range(questions)],
        "question_images": [[f"images/{i + 1}_0.jpg"] for i in range(questions)],
        "question_answer": [str(i * 7 % 1000) for i in range(questions)],
        "image_attribution": ["generated"] * questions,
    }
    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"zerobench": dataset}).save_to_disk(str(path))
    return str(path)


def build_run(work: Path, questions: int, epochs: int, side: int) -> tuple[object, int]:
    import json

    from engine.prepare.resolve import resolve
    from engine.run.request import EvalRequest
    from engine.store.manifest import open_run
    from storage import open_store

    dataset = write_dataset(work / "zerobench", questions, side)
    request = EvalRequest(
        models=MODELS,
        benchmarks=["zerobench"],
        dataset_path=dataset,
        protocol="sampled-k",
        epochs=epochs,
        run_id="big",
        store=str(work / "runs"),
        simulator_url="http://127.0.0.1:9",  # never called: the records are written here
    )
    run = resolve(request)
    open_run(run.store, run.manifest, run.data, False)
    from engine.run.items import answer_items

    bodies = {}
    for n, item in enumerate(answer_items(run)):
        sample = run.data["zerobench"].by_id[item.key.sample_id]
        right = (n * 7919) % 10 < (3 if item.key.model == MODELS[0] else 7)
        value = sample.target if right else str(int(sample.target) + 1)
        record = {
            "record_version": 2,
            "run_id": "big",
            "stage": "answer",
            "judge_model": None,
            "model": item.key.model,
            "benchmark": "zerobench",
            "sample_id": item.key.sample_id,
            "epoch": item.key.epoch,
            "request_hash": item.request_hash,
            "provider": "openai",
            "api_model": item.key.model.split("/")[1],
            "model_reported": item.key.model.split("/")[1],
            "request": item.decoding.to_dict(),
            "response": "Let me look at the image and count carefully, step by step. "
            f"The colours suggest a code. So the final answer is {{{value}}}",
            "reasoning": None,
            "finish_reason": "stop",
            "usage": {"input_tokens": 320, "output_tokens": 40, "reasoning_tokens": 0},
            "cost_usd": 0.0005,
            "cost": {
                "input": 0.0004,
                "cached_input": 0.0,
                "output": 0.0001,
                "reasoning": 0.0,
                "total": 0.0005,
            },  # fmt: skip
            "latency_s": 1.2,
            "attempts": 1,
            "attempt_errors": [],
            "error": None,
            "batch": None,
        }
        bodies[item.store_key] = json.dumps(record).encode()
    run.store.put_many_if_absent(bodies)
    return open_store(str(work / "runs")), len(bodies)


def open_seconds(driver, page: Path) -> float:
    """One open of a report in `driver`: from the load to its first render (the page sets
    `window.__reportReady` to its own clock's reading then); the longer of the two clocks."""
    begun = time.perf_counter()
    driver.get(page.as_uri())
    while not driver.execute_script("return window.__reportReady || false"):
        time.sleep(0.01)
    wall = time.perf_counter() - begun
    in_page = driver.execute_script("return window.__reportReady") / 1000
    print(f"opened in {max(wall, in_page):.2f} s (page's own clock {in_page:.2f} s)", flush=True)
    return max(wall, in_page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--image-side", type=int, default=384)
    options = parser.parse_args()

    from engine.scoring.aggregate import aggregate_run
    from reports.report import write_report
    from tests.support.browser import close, headless_chromium

    work = work_folder("report-open")
    store, items = build_run(work, options.questions, options.epochs, options.image_side)
    print(f"wrote {items} records", flush=True)
    aggregate_run(store, "big")
    started = time.perf_counter()
    page = Path(write_report(store, "big"))
    build_s = time.perf_counter() - started
    size_mb = page.stat().st_size / 2**20
    print(f"report written in {build_s:.1f} s: {page} ({size_mb:.1f} MB)", flush=True)

    driver = headless_chromium(1400, 1000)
    try:
        opens = [open_seconds(driver, page) for _ in range(3)]
        filters = []
        for element, value in FILTERS:
            driver.execute_script(
                "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
                "e.dispatchEvent(new Event('change'));",
                element,
                value,
            )
            filters.append(driver.execute_script("return window.__lastFilterMs") / 1000)
        while not driver.execute_script("return window.__textsLoaded || false"):
            time.sleep(0.05)  # the free-text search over every response, once they are decoded
        driver.execute_script(
            "const e = document.getElementById('f-q'); e.value = 'answer is {7';"
            "e.dispatchEvent(new Event('input'));"
        )
        time.sleep(0.5)  # the search box waits for typing to pause (150 ms)
        filters.append(driver.execute_script("return window.__lastFilterMs") / 1000)
        shown = driver.find_element("id", "count").text
        print(f"filters: {', '.join(f'{f * 1000:.1f} ms' for f in filters)}; last: {shown}")
    finally:
        close(driver)
    print(
        f"items={items} open_s={opens[0]:.2f} warm_open_s={sorted(opens)[1]:.2f} "
        f"filter_s={max(filters):.3f} page_mb={size_mb:.1f} build_s={build_s:.1f}"
    )


if __name__ == "__main__":
    main()
