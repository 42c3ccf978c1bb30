"""The README's pictures, taken from the demo so that they stay current:

    .venv/bin/python docs/screenshots.py        # about three minutes; needs chromium

runs the ZeroBench and ROME demos (`evalfleet demo`, simulated models and judge) into a
temporary store, then photographs in headless Chromium at 1400 x 1000:

- `docs/images/report.png`: the ROME run's report, one model's answers its judge graded, the
  first one open (its verdicts, prompt, image, response, the judge's words and cost);
- `docs/images/one-sample.png`: a ZeroBench sample across both models, every epoch;
- `docs/images/leaderboard.png`: the store's leaderboard, its plots folded;
- `docs/images/runs.png`: the store's index of runs (`leaderboard/runs.html`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

IMAGES = ROOT / "docs" / "images"
WIDTH, HEIGHT = 1400, 1000


def run_demos(work: Path) -> Path:
    """Each demo as `evalfleet demo` runs it, in a process of its own (each starts and stops
    its own Prefect server and Ray)."""
    runs = work / "runs"
    evalfleet = str(Path(sys.executable).with_name("evalfleet"))
    for benchmark in ("zerobench", "rome"):
        command = [evalfleet, "demo", "-b", benchmark, "--run-id", benchmark, "--store", str(runs)]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode:
            said = (done.stdout + done.stderr)[-3000:]
            raise SystemExit(f"the {benchmark} demo failed:\n{said}")
    return runs


def report_of(runs: Path, run_id: str) -> Path:
    import json

    latest = json.loads((runs / run_id / "results" / "latest.json").read_text())
    return runs / run_id / "results" / latest["version"] / "report.html"


def until(driver, script: str, what: str) -> None:
    deadline = time.monotonic() + 20
    while not driver.execute_script(script):
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not show")
        time.sleep(0.05)


def open_report(driver, page: Path, fragment: str) -> None:
    driver.get(page.as_uri() + fragment)
    until(driver, "return window.__reportReady || false", "the report")


def shoot(driver, name: str) -> Path:
    from PIL import Image

    IMAGES.mkdir(parents=True, exist_ok=True)
    path = IMAGES / name
    driver.save_screenshot(str(path))
    with Image.open(path) as image:  # smaller files: the README carries them
        image.convert("RGB").quantize(colors=256).save(path, optimize=True)
    return path


def photograph(runs: Path) -> list[Path]:
    from tests.support.browser import close, headless_chromium

    driver = headless_chromium(WIDTH, HEIGHT)
    driver.execute_cdp_cmd(  # the page's viewport itself 1400 x 1000
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
    )
    taken = []
    try:
        fragment = "#model=openai/sim-0.3&scoring=judge&status=judged"
        open_report(driver, report_of(runs, "rome"), fragment)
        driver.find_element("css selector", "tr.item-row").click()
        until(driver, "return document.querySelector('#detail pre.response')", "an item")
        taken.append(shoot(driver, "report.png"))

        open_report(driver, report_of(runs, "zerobench"), "#one=zerobench/1")
        until(driver, "return document.querySelector('#one pre.prompt')", "one sample")
        taken.append(shoot(driver, "one-sample.png"))

        driver.get((runs / "leaderboard" / "index.html").as_uri())
        until(driver, "return document.readyState === 'complete'", "the leaderboard")
        taken.append(shoot(driver, "leaderboard.png"))

        driver.get((runs / "leaderboard" / "runs.html").as_uri())
        until(driver, "return document.readyState === 'complete'", "the index of runs")
        taken.append(shoot(driver, "runs.png"))
    finally:
        close(driver)
    return taken


def main() -> None:
    # a folder of a fixed name: the pages show the demo's dataset path, the same each time
    work = Path(tempfile.gettempdir()) / "evalfleet-demo"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        for path in photograph(run_demos(work)):
            print(f"{path.relative_to(ROOT)} ({path.stat().st_size // 1024} kB)")
    finally:
        if not os.environ.get("EVALFLEET_KEEP_WORK"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
