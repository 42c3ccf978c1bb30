"""How fast the run report opens and filters: a run of 20,000 answered items in headless
Chromium, or with `--items 1000000` a paged report of a million.

A synthetic ZeroBench-format dataset (by default 2,000 questions with a noisy 384 x 384 JPEG
each, about 60 kB: photographs, not flat colours, so the thumbnails and the embedded full
images weigh what real ones do) and a run of two models x 5 epochs are planned by the real
engine; their records are written straight into a local store (no requests), each with its
own tokens, latency and cost, so the index weighs what a real one does, and aggregated by
`aggregate_run`. `--items N` makes ceil(N / 12) questions of two models x 6 epochs (1,000,008
for a million: about 10 minutes to write, 15 to aggregate here) with 64-pixel images
(`--image-side`); `--work` runs again on a folder a run kept (EVALFLEET_KEEP_WORK=1),
aggregating only a run without results. The report is written by
`evalfleet.reports.report.write_report` in a child process (its time and peak memory measured); then
Debian's chromium opens the page three times, applies filters and a sort over every item,
and searches the responses for a text.

Prints (last line): items=<n> report_open_s=<the first open: load to first render>
warm_open_s=<the median of three opens> filter_s=<the slowest filter> sort_s=<sorting by cost>
search_s=<the text search over every response> heap_mb=<the page's JavaScript heap>
page_mb=<report.html> files_mb=<the folder beside it> index_mb=<its index.js>
build_s=<writing the report> build_peak_mb=<its peak RSS>. Needs chromium and chromedriver.

`--smoke`: 20 questions x 2 epochs x 2 models = 80 items, the same code in seconds (a check
that the script works, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import subprocess
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
SEARCH = "answer is {7"
PAGED_ABOVE = 20_000


def write_dataset(path: Path, questions: int, side: int) -> str:
    """ZeroBench's schema, each question with one noisy JPEG of `side` pixels."""
    import io

    import datasets
    import numpy as np
    from PIL import Image

    from evalfleet.benchmarks.zerobench.dataset import upstream_features

    rng = np.random.default_rng(0)

    def jpeg(i: int) -> bytes:
        base = np.linspace(0, 255, side, dtype=np.float32)[None, :, None]
        pixels = (base + rng.normal(0, 40, (side, side, 3)) + i) % 256
        buffer = io.BytesIO()
        Image.fromarray(pixels.astype(np.uint8)).save(buffer, "JPEG", quality=85)
        return buffer.getvalue()

    features = upstream_features()
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
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.items import answer_items
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.engine.store.manifest import open_run
    from evalfleet.storage import open_store

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
    bodies: dict[str, bytes] = {}
    written = 0
    for n, item in enumerate(answer_items(run)):
        bodies[item.store_key] = json.dumps(record(run, n, item)).encode()
        if len(bodies) == 20_000:
            run.store.put_many_if_absent(bodies)
            written += len(bodies)
            bodies = {}
    run.store.put_many_if_absent(bodies)
    return open_store(str(work / "runs")), written + len(bodies)


def right(n: int, model: str) -> bool:
    return (n * 7919) % 10 < (3 if model == MODELS[0] else 7)


def tokens_out(n: int) -> int:
    return 20 + n * 2654435761 % 381  # 20 to 400, scattered


def record(run, n: int, item) -> dict:
    sample = run.data["zerobench"].by_id[item.key.sample_id]
    value = sample.target if right(n, item.key.model) else str(int(sample.target) + 1)
    cost = round(320 * 1.25e-6 + tokens_out(n) * 1e-5, 7)
    return {
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
        "usage": {"input_tokens": 320, "output_tokens": tokens_out(n), "reasoning_tokens": 0},
        "cost_usd": cost,
        "cost": None,
        "latency_s": 0.3 + n * 0.6180339887498949 % 1 * 8.7,  # each its own, as measured
        "attempts": 1,
        "attempt_errors": [],
        "error": None,
        "batch": None,
    }


def build_report(work: Path) -> tuple[Path, float, float]:
    """`write_report` in a child process: the page's path, seconds, peak RSS in MB."""
    # its own peak (VmHWM): ru_maxrss of a child counts what it had when forked from here
    code = (
        "from evalfleet.reports.report import write_report;"
        "from evalfleet.storage import open_store;"
        f"print(write_report(open_store({str(work / 'runs')!r}), 'big'));"
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
    )
    build_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the report failed ({done.returncode}):\n{done.stderr[-3000:]}")
    *_, page, peak_kb = done.stdout.split()
    return Path(page), build_s, int(peak_kb) / 1024


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


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


SMOKE = {"items": None, "questions": 20, "epochs": 2}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=None, help="about this many items")
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=None, help="5; 6 with --items")
    parser.add_argument("--image-side", type=int, default=None, help="384; 64 above 20,000")
    parser.add_argument("--work", help="a folder kept from a run of this script: its run again")
    parser.add_argument("--smoke", action="store_true", help="80 items: a check, not a figure")
    return parser


def main() -> None:
    options = build_parser().parse_args()
    if options.smoke:
        vars(options).update(SMOKE)
    epochs = options.epochs or (6 if options.items else 5)
    questions = options.questions
    if options.items:
        questions = -(-options.items // (len(MODELS) * epochs))
    large = questions * epochs * len(MODELS) > PAGED_ABOVE
    side = options.image_side or (64 if large else 384)

    from evalfleet.engine.scoring.aggregate import aggregate_run
    from tests.support.browser import close, headless_chromium

    if options.work:  # the records of a kept work folder
        from evalfleet.storage import open_store

        work, items = Path(options.work), questions * epochs * len(MODELS)
        store = open_store(str(work / "runs"))
    else:
        work = work_folder("report-open")
        started = time.perf_counter()
        store, items = build_run(work, questions, epochs, side)
        print(f"wrote {items} records in {time.perf_counter() - started:.0f} s", flush=True)
    if not (work / "runs" / "big" / "results" / "latest.json").exists():
        started = time.perf_counter()
        aggregate_run(store, "big")
        print(f"aggregated in {time.perf_counter() - started:.0f} s", flush=True)
    page, build_s, peak_mb = build_report(work)
    folder = page.parent / "report_items"
    page_mb, files_mb = size_mb(page), size_mb(folder) if folder.exists() else 0.0
    index_mb = size_mb(folder / "index.js") if folder.exists() else 0.0
    print(f"report written in {build_s:.1f} s, peak {peak_mb:.0f} MB: {page}", flush=True)

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
        sort_s = (
            driver.execute_script(
                "state.sort = 'cost'; state.desc = true; applyFilters();"
                "return window.__lastFilterMs"
            )
            / 1000
        )
        driver.execute_script("state.sort = ''; applyFilters()")
        search_s = search(driver, large)
        if not large:
            filters.append(search_s)
        shown = driver.find_element("id", "count").text
        heap_mb = driver.execute_script("return performance.memory.usedJSHeapSize") / 2**20
        print(f"filters: {', '.join(f'{f * 1000:.1f} ms' for f in filters)}; last: {shown}")
    finally:
        close(driver)
    print(
        f"items={items} report_open_s={opens[0]:.2f} warm_open_s={sorted(opens)[1]:.2f} "
        f"filter_s={max(filters):.3f} sort_s={sort_s:.3f} search_s={search_s:.2f} "
        f"heap_mb={heap_mb:.0f} page_mb={page_mb:.1f} files_mb={files_mb:.1f} "
        f"index_mb={index_mb:.1f} build_s={build_s:.1f} build_peak_mb={peak_mb:.0f}"
    )


def search(driver, paged: bool) -> float:
    """The text search over every response: a single page's once its texts are decoded (the
    filter's time), a paged report's until every file is read (from the typing)."""
    if not paged:
        while not driver.execute_script("return window.__textsLoaded || false"):
            time.sleep(0.05)
    begun = time.perf_counter()
    driver.execute_script(
        "window.__searchDone = 0; const e = document.getElementById('f-q');"
        "e.value = arguments[0]; e.dispatchEvent(new Event('input'));",
        SEARCH,
    )
    if not paged:
        time.sleep(0.5)  # the search box waits for typing to pause (150 ms)
        return driver.execute_script("return window.__lastFilterMs") / 1000
    while not driver.execute_script("return window.__searchDone || false"):
        time.sleep(0.05)
    return time.perf_counter() - begun - 0.15  # less the pause the box waits for


if __name__ == "__main__":
    main()
