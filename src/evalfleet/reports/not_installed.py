"""A stored run whose benchmark is not installed here (a plugin package uninstalled, or the run
made elsewhere): the one line that says so and how to fix it. The listings (`runs`, the
leaderboard) show the run with that line; `status`, `report` and `aggregate` of the run say
it instead of failing on the first table that needs the benchmark."""

from __future__ import annotations

from evalfleet.benchmarks import registry
from evalfleet.core.types import ConfigError
from evalfleet.engine.run.identity import RunError
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.storage.base import Store

FIX = "install its package (see docs/extending.md)"


def not_installed(name: str) -> str:
    """The words for one benchmark no installed package declares."""
    return f"needs benchmark '{name}', not installed: {FIX}"


def missing_benchmarks(manifest: Manifest) -> dict[str, str | None]:
    """The run's benchmarks this installation cannot give: name -> None when no installed
    package declares it, else the line saying why its package does not load."""
    missing: dict[str, str | None] = {}
    for name in manifest.identity.benchmarks:
        if name in registry.names():
            try:
                registry.get(name)
            except ConfigError as exc:  # declared, but its package does not load
                missing[name] = str(exc)
            continue
        missing[name] = None
    return missing


def needs_line(manifest: Manifest) -> str | None:
    """`needs benchmark 'parity', not installed: install its package (see docs/extending.md)`,
    or None when every benchmark of the run is here."""
    lines = []
    for name, problem in missing_benchmarks(manifest).items():
        if problem is None:
            lines.append(not_installed(name))
        else:
            lines.append(f"needs benchmark '{name}', which does not load: {problem}")
    return "; ".join(lines) or None


def check_installed(store: Store, run_id: str) -> None:
    """A RunError (one line, exit 2) when the run needs a benchmark that is not here; nothing
    when it does not, or when there is no such run (the command then says that)."""
    manifest = read_manifest(store, run_id)
    line = needs_line(manifest) if manifest is not None else None
    if line is not None:
        raise RunError(f"run {run_id} {line}")
