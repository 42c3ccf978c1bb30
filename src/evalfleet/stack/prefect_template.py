"""A migrated, empty Prefect database per Prefect version, kept in the user's cache.

A Prefect server given a new SQLite file first runs Prefect's ~150 migrations: 20-25 s on two
cores, mostly waiting on the disk, before the first flow run can start. The template is made
that way once (`prefect server database upgrade`, the same migrations), and every new stack
or temporary server's database afterwards starts as a copy of it: a few milliseconds. The
template is named by the Prefect version, so an upgrade of Prefect makes a new one; a missing
or unreadable cache only means the server migrates its database itself, as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

MIGRATE_TIMEOUT_S = 300


def cache_folder() -> Path:
    """$XDG_CACHE_HOME/evalfleet, else ~/.cache/evalfleet (not made here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalfleet"


def template_path() -> Path:
    return cache_folder() / f"prefect-{version('prefect')}-empty.db"


def seed(database: Path) -> bool:
    """Gives a database that does not exist yet the template's tables. True when it did; False
    when the database exists already, or no template could be made (the server migrates)."""
    if database.exists():
        return False
    template = template_path()
    if not template.exists() and not _make(template):
        return False
    partial = database.with_name(f".{database.name}.{os.getpid()}.seeding")
    try:
        shutil.copyfile(template, partial)
        os.replace(partial, database)
    except OSError:
        partial.unlink(missing_ok=True)
        return False
    return True


def _make(template: Path) -> bool:
    """Runs Prefect's migrations on a file of its own, then moves it into place (two servers
    making it at once each make their own; the last move wins, both whole)."""
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".making-", dir=template.parent))
    except OSError:
        return False
    try:
        made = scratch / "prefect.db"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env["PREFECT_HOME"] = str(scratch / "home")
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = f"sqlite+aiosqlite:///{made}"
        prefect_cli = str(Path(sys.executable).with_name("prefect"))
        command = [prefect_cli, "server", "database", "upgrade", "-y"]
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, timeout=MIGRATE_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        if done.returncode != 0 or not made.exists():
            return False
        os.replace(made, template)
        return True
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
