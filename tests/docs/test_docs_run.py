"""Docs that run: every shell block of the README and of docs/ says whether it runs
(`bash runnable`, or `bash skip: REASON`; docs/shell_blocks.py), and the runnable ones do, in
order, in an empty folder, against the simulator, as a newcomer would type them (on the test
session's Ray and Prefect server, as after `evalfleet up`).

The README's blocks come first, then each page's in the order of the site's navigation, so a
page may use what the README's tour made (`./demo-data/`, the run `tour`). The blocks run as
one bash script with `set -euo pipefail`; the test then checks that every file a block names
exists, and kills whatever the script left running."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support.leftovers import removed_afterwards

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
SIMULATOR_PORT = 8765  # the port the docs' examples give `evalfleet simulate`
TIMEOUT_S = 900  # the whole script: 9.4 minutes at load 8-10 on 2 cores (the demo 4 times slower
# than quiet, so about 2.5 minutes on a quiet machine)


def _shell_blocks():
    spec = importlib.util.spec_from_file_location("shell_blocks", DOCS / "shell_blocks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("shell_blocks", module)
    spec.loader.exec_module(module)
    return module


shell_blocks = _shell_blocks()


def nav_pages() -> list[Path]:
    """The site's pages in the order of its navigation (mkdocs.yml)."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    return [DOCS / page for page in walk(config["nav"])]


def markdown_files() -> list[Path]:
    """The README, then the pages in navigation order, then any page the navigation lacks
    (the generated CLI reference only when `make docs` has made it)."""
    pages = [p for p in nav_pages() if p.exists()]
    rest = sorted(set(DOCS.rglob("*.md")) - set(pages))
    return [README, *pages, *rest]


def all_blocks():
    return [b for path in markdown_files() for b in shell_blocks.blocks(path, REPO)]


def test_every_shell_block_is_marked():
    broken = [
        line
        for path in markdown_files()
        for line in shell_blocks.broken_fences(path.read_text(), path.relative_to(REPO))
    ]
    assert broken == []
    blocks = all_blocks()
    unmarked = [f"{b.where}: {b.problem}" for b in blocks if b.problem]
    assert unmarked == []
    assert any(b.runnable for b in blocks if b.path == Path("README.md"))
    skipped = [b for b in blocks if not b.runnable]
    assert all(b.reason.strip() for b in skipped)


def test_every_page_is_in_the_navigation():
    pages = set(nav_pages())
    generated = {DOCS / "reference" / "cli.md"}  # made by `make docs`, git-ignored
    assert {p for p in pages if not p.exists()} <= generated
    assert set(DOCS.rglob("*.md")) - generated <= pages


def test_the_readme_is_short_and_its_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if "://" not in t and not t.startswith("#")]
    assert local, "the README links to the docs"
    assert [t for t in local if not (REPO / t).exists()] == []


def test_the_leaderboard_legend_names_the_page_that_holds_the_methods():
    from evalfleet.reports.board_cells import METHODS

    page, _, section = METHODS.partition(", ")
    assert (REPO / page).exists()
    heading = section.strip("“”")
    assert f"## {heading}\n" in (REPO / page).read_text()


def runs_small(text: str) -> bool:
    """Whether a block's commands are small runs only: each `evalfleet run` capped by --limit
    and online (no --batch), and no demo, judge or Python among them. Without a stack such a
    run asks its items in its own process (`api.launch.runs_here`), which costs less than
    joining a Ray cluster and a Prefect server; any other run would start both."""
    lines = [line.split("#")[0].strip() for line in text.replace("\\\n", " ").splitlines()]
    runs = [line for line in lines if line.startswith("evalfleet run ")]
    others = ("evalfleet demo", "evalfleet judge", "python")
    return (
        bool(runs)
        and all("--limit" in run.split() and "--batch" not in run.split() for run in runs)
        and not any(line.startswith(others) for line in lines)
    )


def script(blocks, marks: Path, ray_address: str, prefect_api_url: str) -> str:
    """The blocks as one script. Before each, the services its commands see: none for a
    block of small runs (as a newcomer's, they run in their own process), else the test
    session's Ray and Prefect server (as after `evalfleet up`: see `environment`)."""
    lines = ["set -euo pipefail"]
    for index, block in enumerate(blocks):
        if runs_small(block.text):
            services = "unset RAY_ADDRESS PREFECT_API_URL"
        else:
            services = f"export RAY_ADDRESS={ray_address} PREFECT_API_URL={prefect_api_url}"
        lines += [
            f"# --- block {index}: {block.where}",
            f'echo "{index} $SECONDS" >> "{marks}"',
            services,
            block.text.rstrip("\n"),
        ]
    lines.append(f'echo "end $SECONDS" >> "{marks}"')
    return "\n".join(lines) + "\n"


def environment(home: Path, ray_address: str, prefect_api_url: str) -> dict[str, str]:
    """The caller's environment less anything that would point the commands elsewhere (a
    store, a stack, a simulator); `evalfleet` first on PATH. The commands attach to the test
    session's Ray and Prefect server, as they would to those of `evalfleet up`, instead of each
    starting its own (10 to 30 s apiece on 2 cores): the commands are the docs' own. (A block
    of small runs goes without them: `script`.)"""
    dropped = {
        "EVALFLEET_STORE",
        "EVALFLEET_SIMULATOR_URL",
        "EVALFLEET_MODELS",
        "EVALFLEET_NO_LAUNCHER",
        "PREFECT_API_URL",
        "RAY_ADDRESS",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
    }
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        EVALFLEET_HOME=str(home),
        EVALFLEET_STACK=str(home / "stack"),
        TQDM_DISABLE="1",
        COLUMNS="120",
        RAY_ADDRESS=ray_address,
        PREFECT_API_URL=prefect_api_url,
    )
    return env


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the script's process group (a simulator it started with `&`, a command it
    was in), then SIGKILL to what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)


def which_block(marks: Path, blocks) -> str:
    lines = marks.read_text().split("\n") if marks.exists() else []
    started = [line.split()[0] for line in lines if line and not line.startswith("end")]
    if not started:
        return "before the first block"
    block = blocks[int(started[-1])]
    return f"block {started[-1]} ({block.where}):\n{block.text}"


def timings(marks: Path, blocks) -> str:
    rows = [line.split() for line in marks.read_text().split("\n") if line]
    out = []
    for (index, start), (_, end) in zip(rows, rows[1:], strict=False):
        out.append(f"{int(end) - int(start):4d} s  {blocks[int(index)].where}")
    return "\n".join(out)


@pytest.mark.slow
def test_runnable_blocks_run(tmp_path, ray_address, prefect_api_url):
    blocks = [b for b in all_blocks() if b.runnable]
    assert blocks
    if any(str(SIMULATOR_PORT) in b.text for b in blocks):
        assert port_is_free(SIMULATOR_PORT), (
            f"port {SIMULATOR_PORT}, which the docs' examples give the simulator, is taken on "
            "this machine: stop what listens there and run the docs test again"
        )
    work, home, marks = tmp_path / "work", tmp_path / "home", tmp_path / "marks"
    work.mkdir()
    (tmp_path / "docs.sh").write_text(script(blocks, marks, ray_address, prefect_api_url))
    log = tmp_path / "output.log"
    started = time.monotonic()
    with removed_afterwards(), log.open("w") as output:
        process = subprocess.Popen(
            ["bash", str(tmp_path / "docs.sh")],
            cwd=work,
            env=environment(home, ray_address, prefect_api_url),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: all of it is stopped below
        )
        try:
            code = process.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            stop_group(process)
    elapsed = time.monotonic() - started
    print(f"the runnable blocks took {elapsed:.0f} s:\n{timings(marks, blocks)}")
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert code is not None, f"not done after {TIMEOUT_S} s, in {which_block(marks, blocks)}"
    assert code == 0, f"exit {code} in {which_block(marks, blocks)}\n--- output ---\n{tail}"
    missing = [
        f"{block.where}: {name}"
        for block in blocks
        for name in shell_blocks.names_of_files(block.text)
        if not (work / name).exists()
    ]
    assert missing == [], "files the docs name that the blocks did not leave"


def test_only_blocks_of_small_runs_go_without_the_session_services():
    run = "evalfleet run -m openai/sim-0.5 \\\n    --run-id a"
    small = f"{run} --limit 2\nevalfleet compare a:x a:y"
    assert runs_small(small)
    assert runs_small(f"{run} --limit 2  # not --batch\n")
    assert not runs_small("evalfleet runs\nevalfleet status tour")  # no run
    assert not runs_small(f"{run}\n")  # no --limit: the whole dataset
    assert not runs_small(f"{run} --limit 2 --batch\n")
    assert not runs_small(f"{small}\nevalfleet demo -b rome")
    assert not runs_small(f"cat > x.py <<'EOF'\nEOF\npython x.py\n{small}")
