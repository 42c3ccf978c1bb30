"""The temporary Prefect server's history (`$EVALFLEET_HOME/prefect-runs.db`), kept bounded.

A command that starts its own Prefect server keeps the newest N flow runs there
(`--keep-flow-runs N`, else $EVALFLEET_KEEP_FLOW_RUNS, else 10). The server trims the file as
it starts, before Prefect opens it, leaving room for the run it was started for: older flow
runs that ended go with their subflows, task runs, states, logs and artifacts, and the
events from before the oldest run kept. A run still marked running is kept for a week (its
command may still be at work). SQLite reuses the pages freed, so the file stops growing at
about N runs' worth; it is compacted when over half of it is free (a lower N, an old file).

This writes Prefect's tables with SQL, so it knows their names (checked by
tests/stack/test_prefect_history.py against the Prefect this project pins); it skips a file
whose tables it does not find. Standard library only.

A file SQLite cannot read (truncated, overwritten) would stop every command's server: it is
found before the server starts (`damage`, a quick check of a few milliseconds) and moved aside
(`set_aside`), and a new history begins; the old file is kept for whoever wants it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evalfleet.core.types import ConfigError

ENV = "EVALFLEET_KEEP_FLOW_RUNS"
DEFAULT = 10
STALE_AFTER = timedelta(days=7)  # a run still marked running after this lost its command
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "CRASHED")
TABLES = {"flow_run", "task_run", "log", "artifact", "artifact_collection", "events"}
TABLES |= {"event_resources", "task_run_state", "task_run_state_cache"}
_STAMP = "%Y-%m-%d %H:%M:%S.%f"  # how Prefect writes its timestamps in SQLite (UTC)


def parse_kept(raw: str, source: str = "--keep-flow-runs") -> int:
    """A number of flow runs to keep: a whole number of at least 1."""
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"{source} {raw!r}: give how many flow runs the temporary Prefect server keeps, a "
            "whole number of at least 1"
        )
    return value


def kept_from_env() -> int:
    from evalfleet.core import settings

    return int(settings.KEEP_FLOW_RUNS.get())


def damage(database: Path) -> str | None:
    """Why SQLite cannot serve `database` (its words, one line), or None: the file is whole,
    or not there yet."""
    if not database.exists():
        return None
    try:
        con = _read_only(database)
        with contextlib.closing(con):
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            found = con.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.OperationalError:
        return None  # locked, busy: not damage; the server waits for it as it does
    except sqlite3.DatabaseError as exc:  # not a database, malformed
        return " ".join(str(exc).split()) or type(exc).__name__
    if not found or found[0] != "ok":
        return f"its quick check says: {found[0] if found else 'nothing'}"
    return None


def has_tables(database: Path) -> bool:
    """Whether `database` holds Prefect's tables (an empty file does not: it is migrated)."""
    try:
        con = _read_only(database)
        with contextlib.closing(con):
            names = {row[0] for row in con.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        return False
    return not TABLES - names


def _read_only(database: Path) -> sqlite3.Connection:
    """A connection that changes nothing: one that writes would checkpoint, or drop, the
    write-ahead log of a file being looked at."""
    return sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True, timeout=30)


def set_aside(database: Path) -> Path:
    """Move `database` and its SQLite companions (-wal, -shm) to a free name beside it:
    `NAME.damaged-YYYYmmdd-HHMMSS`. Returns the new path of the database."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    target = database.with_name(f"{database.name}.damaged-{stamp}")
    number = 1
    while target.exists():
        number += 1
        target = database.with_name(f"{database.name}.damaged-{stamp}-{number}")
    for suffix in ("-wal", "-shm"):
        companion = database.with_name(database.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            companion.rename(target.with_name(target.name + suffix))
    database.rename(target)
    return target


@dataclass(frozen=True)
class Trimmed:
    flow_runs: int = 0  # top-level flow runs deleted (their subflows went with them)
    events: int = 0
    compacted: bool = False


def trim(database: Path, keep: int) -> Trimmed:
    """Keep the newest `keep` top-level flow runs of `database` (0: none) and what belongs to
    them; delete the rest. A file that does not exist yet, or holds no Prefect tables, is
    left alone."""
    if not database.exists():
        return Trimmed()
    con = sqlite3.connect(database, timeout=30, isolation_level=None)  # waits for the lock
    with contextlib.closing(con):
        con.execute("PRAGMA foreign_keys = ON")  # task runs and states go with their run
        names = {row[0] for row in con.execute("SELECT name FROM sqlite_master")}
        if TABLES - names:
            return Trimmed()
        con.execute("BEGIN IMMEDIATE")
        try:
            runs = _delete_flow_runs(con, keep)
            events = _delete_events(con, keep)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        compacted = _compact_if_mostly_free(con)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return Trimmed(runs, events, compacted)


def _delete_flow_runs(con: sqlite3.Connection, keep: int) -> int:
    stale = (datetime.now(UTC) - STALE_AFTER).strftime(_STAMP)
    terminal = ", ".join(f"'{state}'" for state in TERMINAL)
    con.execute("CREATE TEMP TABLE IF NOT EXISTS doomed (id TEXT PRIMARY KEY, top INTEGER)")
    con.execute("DELETE FROM temp.doomed")
    con.execute(
        f"""
        WITH RECURSIVE
          kept(id) AS (
            SELECT id FROM flow_run WHERE parent_task_run_id IS NULL
            ORDER BY created DESC LIMIT :keep),
          tree(id, top) AS (
            SELECT id, 1 FROM flow_run
            WHERE parent_task_run_id IS NULL AND id NOT IN (SELECT id FROM kept)
              AND (state_type IN ({terminal}) OR created < :stale)
            UNION
            SELECT sub.id, 0 FROM flow_run AS sub
            JOIN task_run ON sub.parent_task_run_id = task_run.id
            JOIN tree ON task_run.flow_run_id = tree.id)
        INSERT INTO temp.doomed SELECT id, top FROM tree
        """,
        {"keep": keep, "stale": stale},
    )
    doomed = "SELECT id FROM temp.doomed"
    con.execute(f"DELETE FROM log WHERE flow_run_id IN ({doomed})")
    con.execute(f"DELETE FROM artifact WHERE flow_run_id IN ({doomed})")
    con.execute("DELETE FROM artifact_collection WHERE latest_id NOT IN (SELECT id FROM artifact)")
    con.execute(f"DELETE FROM flow_run WHERE id IN ({doomed})")  # cascades to task runs, states
    con.execute(
        "DELETE FROM task_run_state_cache "
        "WHERE task_run_state_id NOT IN (SELECT id FROM task_run_state)"
    )
    return con.execute("SELECT count(*) FROM temp.doomed WHERE top = 1").fetchone()[0]


def _delete_events(con: sqlite3.Connection, keep: int) -> int:
    """The events from before the oldest run kept (a run's first event is its first state,
    at its expected start): those of the runs deleted, and the server's own."""
    row = con.execute(
        """
        SELECT min(min(created, expected_start_time)) FROM (
          SELECT created, coalesce(expected_start_time, created) AS expected_start_time
          FROM flow_run WHERE parent_task_run_id IS NULL ORDER BY created DESC LIMIT :keep)
        """,
        {"keep": keep},
    ).fetchone()
    cutoff = row[0] if keep and row[0] else datetime.now(UTC).strftime(_STAMP)
    con.execute("DELETE FROM event_resources WHERE occurred < ?", (cutoff,))
    return con.execute("DELETE FROM events WHERE occurred < ?", (cutoff,)).rowcount


def _compact_if_mostly_free(con: sqlite3.Connection) -> bool:
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    free = con.execute("PRAGMA freelist_count").fetchone()[0]
    if free * 2 <= pages:
        return False
    try:
        con.execute("VACUUM")
    except sqlite3.OperationalError:  # another server has it open: the next start will
        return False
    return True
