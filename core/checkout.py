"""Which code a checkout holds, cheaply: a digest of the path, size and modification time of
every source and registry file of some of its top-level packages (a few milliseconds for the
whole project). A long-lived process started from older code (a warm worker or launcher of
the stack) is told apart by it."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".py", ".yaml", ".yml")
PROJECT_PACKAGES = (  # every package of the project: what the stack's launcher has loaded
    "cli",
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
