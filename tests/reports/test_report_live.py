"""`evalfleet report RUN --watch`: the report of a run while it runs, at one address.

The run: the stored ZeroBench demo run (`tests/data/stored_runs`, 180 answers) taken apart:
its manifest says it is running (this process's heartbeat) and its records arrive 60 at a
time between two looks, as a run stores them; then its heartbeat says finished. The looks are
the real ones: aggregation of what is stored, the report of it, the live page."""

from __future__ import annotations

import json
import os
import shutil
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.reports.live import watch
from evalfleet.storage import open_store

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"
RUN = "stored-zerobench"


def beat(run: Path, state: str) -> None:
    path = run / "manifest.json"
    manifest = json.loads(path.read_text())
    now = datetime.now(UTC).isoformat(timespec="seconds")
    manifest["heartbeat"].update(
        state=state, at=now, host=socket.gethostname(), pid=os.getpid(), flow_run_id=None
    )
    path.write_text(json.dumps(manifest, indent=2))


@pytest.fixture
def arriving(tmp_path) -> tuple[Path, Path, list[list[Path]]]:
    """(the store, where the records wait, the records still to come in three batches of 60,
    in the stored order)."""
    runs, held = tmp_path / "runs", tmp_path / "held"
    shutil.copytree(STORED / RUN, runs / RUN)
    shutil.move(runs / RUN / "completions", held)
    (runs / RUN / "completions").mkdir()
    beat(runs / RUN, "running")
    records = sorted(held.rglob("*.json"))
    assert len(records) == 180
    return runs, held, [records[i : i + 60] for i in range(0, 180, 60)]


def test_a_watch_looks_as_records_arrive_and_ends_with_the_run(arriving):
    runs, held, batches = arriving
    lines: list[str] = []
    pages: list[str] = []

    def arrive(_seconds: float) -> None:  # the run stores its next 60 records, or ends
        pages.append((runs / RUN / "results" / "live.html").read_text())
        if batches:
            for record in batches.pop(0):
                target = runs / RUN / "completions" / record.relative_to(held)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(record, target)
        else:
            beat(runs / RUN, "finished")

    final = watch(open_store(str(runs)), RUN, 5.0, say=lines.append, sleep=arrive)
    looks = [line.split(" ", 1)[1] for line in lines[1:-1]]  # without their clock time
    assert lines[0] == (
        f"the live report (open it once, it follows the run): {runs}/{RUN}/results/live.html"
    )
    assert looks == [
        f"run {RUN}: 0 answers done, 0 failed, 180 missing",
        f"run {RUN}: 60 answers done, 0 failed, 120 missing",
        f"run {RUN}: 120 answers done, 0 failed, 60 missing",
        f"run {RUN}: 180 answers done, 0 failed, 0 missing",
    ]
    versions = sorted(p.name for p in (runs / RUN / "results").iterdir() if p.is_dir())
    assert len(versions) == 1  # each look's version went when a newer one replaced it
    (version,) = versions
    assert lines[-1] == (
        f"run {RUN} is finished: 180 answers done, 0 failed, 0 missing; its report: "
        f"{runs}/{RUN}/results/{version}/report.html"
    )
    assert final == f"{runs}/{RUN}/results/{version}/report.html"
    # every look pointed the live address at its own version, the last at the final one
    assert len(pages) == 4 and len(set(pages)) == 4
    assert (
        f'location.replace("{version}/report.html"+location.search+location.hash)'
        in (runs / RUN / "results" / "live.html").read_text()
    )
    page = Path(final).read_text()
    assert 'id="live-banner"' not in page  # the run ended: no banner, no timer
    latest = json.loads((runs / RUN / "results" / "latest.json").read_text())
    assert latest["version"] == version


def test_a_look_says_how_far_the_run_is_and_goes_back_to_the_live_address(arriving):
    runs, held, batches = arriving
    for record in batches[0]:
        target = runs / RUN / "completions" / record.relative_to(held)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(record, target)
    seen: list[str] = []

    def stop(_seconds: float) -> None:
        live = (runs / RUN / "results" / "live.html").read_text()
        version = live.split('location.replace("', 1)[1].split("/", 1)[0]
        seen.append((runs / RUN / "results" / version / "report.html").read_text())
        raise KeyboardInterrupt  # Ctrl-C while it waits

    with pytest.raises(KeyboardInterrupt):
        watch(open_store(str(runs)), RUN, 7.5, say=lambda _line: None, sleep=stop)
    (page,) = seen
    assert (
        f"live: run {RUN}, 60 of 180 answers done, 0 failed, 120 to come; this page looks "
        "again in 7.5 s</div>"
    ) in page
    assert (
        "setTimeout(function(){location.replace('../live.html'+location.search+location.hash)}"
        ",7500);"
    ) in page


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--watch", "1"], "error: --watch takes seconds from 2 to 3600, not '1'"),
        (["--watch", "nan"], "error: --watch takes seconds from 2 to 3600, not 'nan'"),
        (
            ["--watch", "5", "--version", "v-000000000000"],
            "error: --watch follows the run's newest look and --version names one: drop one "
            "of them",
        ),
        *(  # a path for a version's name was told as a store key ("'.' or '..' segment")
            (
                ["--version", bad],
                "error: --version takes a results version's name, such as v-0123456789ab "
                f"(`evalfleet status RUN` names the run's latest), not {bad!r}",
            )
            for bad in (".", "..", "../other-run/results/v-0", "")
        ),
    ],
)
def test_a_wrong_watch_is_one_line_and_changes_nothing(arriving, capsys, argv, line):
    runs, _, _ = arriving
    before = sorted(str(p.relative_to(runs)) for p in runs.rglob("*"))
    code = main(["report", RUN, "--store", str(runs), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith(line)
    assert sorted(str(p.relative_to(runs)) for p in runs.rglob("*")) == before


def test_watching_a_run_that_is_not_there_names_the_fix(tmp_path, capsys):
    code = main(["report", "nope", "--store", str(tmp_path / "runs"), "--watch"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: run nope is not in local directory {tmp_path / 'runs'}: start it first "
        "(`evalfleet run --run-id nope ...`), or see `evalfleet runs`"
    )


@pytest.mark.slow  # Chromium
def test_the_live_address_follows_the_run_in_a_browser_with_the_pages_state(arriving):
    """At 1400 x 1000: the live address opens the newest look with its banner; the look goes
    back to it after its seconds and lands on the next look, the filter in the address kept."""
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.support.browser import close, headless_chromium

    runs, held, batches = arriving
    live = runs / RUN / "results" / "live.html"
    driver = headless_chromium(1400, 1000)
    seen: list[tuple[str, str, str]] = []

    def banner(d) -> str:
        return d.execute_script(
            "const b = document.getElementById('live-banner'); return b ? b.textContent : ''"
        )

    def look(_seconds: float) -> None:
        if not seen:  # the first look (nothing stored yet): open the live address
            driver.get(live.as_uri() + "#q=the")
        else:  # a newer look is written: the page in the browser comes to it by itself
            WebDriverWait(driver, 20).until(lambda d: "60 of 180" in banner(d))
        WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.__reportReady"))
        page, _, state = driver.current_url.partition("#")
        seen.append((page.rsplit("/", 2)[-2], state, banner(driver)))
        if len(seen) == 2:
            raise KeyboardInterrupt
        for record in batches.pop(0):
            target = runs / RUN / "completions" / record.relative_to(held)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(record, target)

    try:
        with pytest.raises(KeyboardInterrupt):
            watch(open_store(str(runs)), RUN, 2.0, say=lambda _line: None, sleep=look)
    finally:
        close(driver)
    (first, state, said), (second, state_after, said_after) = seen
    assert first != second and state == state_after == "q=the"
    assert said == (
        f"live: run {RUN}, 0 of 180 answers done, 0 failed, 180 to come; this page looks again "
        "in 2 s"
    )
    assert said_after == said.replace("0 of 180", "60 of 180").replace("180 to come", "120 to come")
