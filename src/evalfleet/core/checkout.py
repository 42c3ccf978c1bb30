"""Which code a checkout holds, cheaply: a digest of the path, size and modification time of
every source and registry file of some of its top-level packages (a few milliseconds for the
whole project). A long-lived process started from older code (a warm worker or launcher of
the stack) is told apart by it; the launcher also by the packages installed beside it
(`installed_digest`: another package's benchmarks are part of the code it runs)."""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".py", ".yaml", ".yml")
PROJECT_PACKAGES = (  # every package of the project: what the stack's launcher has loaded
    "cli",
    "api",
    "flows",
    "stack",
    "reports",
    "engine",
    "tasks",
    "providers",
    "simulator",
    "benchmarks",
    "storage",
    "metrics",
    "core",
    "deployments",
)


def checkout_digest(packages: Iterable[str]) -> str:
    parts = [sys.executable]
    for package in packages:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                stat = path.stat()
                parts.append(f"{path.relative_to(ROOT)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def project_digest() -> str:
    return checkout_digest(PROJECT_PACKAGES)


def installed_digest() -> str:
    """Which packages the interpreter finds besides the checkout: each folder it imports them
    from (site-packages, $PYTHONPATH's) with its modification time, which installing or
    removing a package changes (a few system calls, no metadata read)."""
    paths = sysconfig.get_paths()
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    parts = [sys.executable]
    for folder in dict.fromkeys([paths["purelib"], paths["platlib"], *map(os.path.abspath, extra)]):
        try:
            parts.append(f"{folder}:{os.stat(folder).st_mtime_ns}")
        except OSError:
            parts.append(f"{folder}:-")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def environment_digest() -> str:
    """The checkout's code and the packages installed beside it: what a warm launcher runs."""
    return hashlib.sha256(f"{project_digest()} {installed_digest()}".encode()).hexdigest()[:16]
