"""`evalfleet --version`: the package version and the commit of the checkout it runs from."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_version_names_package_and_commit() -> None:
    sha = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    out = subprocess.run(
        [sys.executable, "-m", "evalfleet.cli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout, out.stderr) == (
        0,
        f"evalfleet {version('evalfleet')} (code {sha})\n",
        "",
    )
