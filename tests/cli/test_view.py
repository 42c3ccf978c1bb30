"""`evalfleet view`: its one line with the URL and the token, exit 0 on Ctrl-C (a real SIGINT)
with nothing on stderr; `--open` hands that URL to the browser; a busy port or a store that is
not there is one `error:` line, exit 2."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evalfleet.cli.main import main


def test_a_busy_port_and_a_missing_store_are_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "runs").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["view", "--store", str(tmp_path / "runs"), "--port", str(port)]) == 2
    assert capsys.readouterr() == (
        "",
        f"error: port {port} on 127.0.0.1 is not free (Address already in use): give another "
        "with --port, or --port 0 for any free one\n",
    )
    assert main(["view", "--store", str(tmp_path / "none"), "--port", "0"]) == 2
    assert capsys.readouterr() == (
        "",
        f"error: no store at {tmp_path / 'none'}: give the folder of your runs with --store "
        "(`evalfleet runs --store ...` lists what one holds)\n",
    )
    assert main(["view", "--store", str(tmp_path / "runs"), "--port", "70000"]) == 2
    assert capsys.readouterr().err == (
        "error: --port 70000 is not a port: give 1 to 65535, or 0 for any free\n"
    )
    assert not (tmp_path / "none").exists()


def start_view(store: Path, *flags: str, **env: str) -> subprocess.Popen:
    """`evalfleet view --store STORE --port 0 FLAGS` in a child process, these variables set."""
    argv = [sys.executable, "-m", "evalfleet.cli.main", "view", "--store", str(store)]
    return subprocess.Popen(
        [*argv, "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def stop_with_ctrl_c(process: subprocess.Popen) -> tuple[int, str, str]:
    """A real SIGINT, as a terminal sends: (exit code, stdout, stderr)."""
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    return process.returncode, out, err


@pytest.mark.slow  # a subprocess
def test_ctrl_c_stops_it_with_exit_0(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    process = start_view(tmp_path / "runs")
    try:
        line = process.stdout.readline()
        prefix, _, rest = line.partition("http://127.0.0.1:")
        port, _, rest = rest.partition("/?token=")
        token, _, end = rest.partition(" ")
        assert (prefix, end, len(token)) == ("evalfleet view: ", "(Ctrl-C stops)\n", 32)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={token}") as page:
            assert page.url == f"http://127.0.0.1:{port}/leaderboard/runs.html?token={token}"
            assert b'<span id="shown">0</span> of 0 runs' in page.read()
        ended = stop_with_ctrl_c(process)
    finally:
        process.kill()
    assert ended == (0, "", "")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == []  # the index not written


@pytest.mark.slow  # a subprocess
def test_open_hands_the_url_with_its_token_to_the_browser(tmp_path: Path) -> None:
    """`--open` goes through Python's `webbrowser`, which runs the command $BROWSER names with
    the URL: here a script that writes down what it was given."""
    (tmp_path / "runs").mkdir()
    given = tmp_path / "given.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {given}\n')
    browser.chmod(0o755)
    process = start_view(tmp_path / "runs", "--open", BROWSER=str(browser))
    try:
        url = process.stdout.readline().split()[2]
        deadline = time.monotonic() + 60
        while not given.exists() or not given.read_text().endswith("\n"):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        assert given.read_text() == f"{url}\n"
        with urllib.request.urlopen(url) as page:
            assert b'<span id="shown">0</span> of 0 runs' in page.read()
        ended = stop_with_ctrl_c(process)
    finally:
        process.kill()
    assert ended == (0, "", "")
