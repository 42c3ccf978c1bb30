"""The temporary Prefect server's local state: a history SQLite cannot read is found before the
server starts, moved aside with its companions and said in one line; and the server's port is
held by the command from its choice to the end, so nothing else can take it in between (about
1 run in 60 failed so under load). `tests/hostile/test_damaged_places.py` runs a command on a
damaged history end to end."""

from __future__ import annotations

import contextlib
import io
import socket
import sqlite3
from pathlib import Path

import pytest

from evalfleet.stack import prefect_history
from evalfleet.stack.prefect_app import listen
from evalfleet.stack.services import ServiceError, _history_checked, _prepared_for, reserve_port


def _history(path: Path, tables: tuple[str, ...] = tuple(prefect_history.TABLES)) -> Path:
    con = sqlite3.connect(path)
    for name in tables:
        con.execute(f"CREATE TABLE {name} (id TEXT PRIMARY KEY, note TEXT)")
    con.executemany("INSERT INTO flow_run VALUES (?, ?)", [(str(i), "x" * 500) for i in range(400)])
    con.commit()
    con.close()
    return path


def test_a_whole_history_or_none_is_not_damage(tmp_path):
    assert prefect_history.damage(tmp_path / "none.db") is None
    assert prefect_history.damage(_history(tmp_path / "whole.db")) is None
    assert prefect_history.has_tables(tmp_path / "whole.db")


@pytest.mark.parametrize(
    ("how", "problem"),
    [("truncated", "database disk image is malformed"), ("garbage", "file is not a database")],
)
def test_a_truncated_or_overwritten_history_is_named(tmp_path, how, problem):
    database = _history(tmp_path / "prefect-runs.db")
    whole = database.read_bytes()
    damaged = whole[: len(whole) // 2] if how == "truncated" else b"\x07" * len(whole)
    database.write_bytes(damaged)
    assert prefect_history.damage(database) == problem
    assert not prefect_history.has_tables(database)


def test_an_emptied_history_is_migrated_again_not_taken_as_prepared(tmp_path):
    database = tmp_path / "prefect-runs.db"
    database.write_bytes(b"")
    (tmp_path / "prefect-runs.db.prepared").write_text("3.8.8")
    assert prefect_history.damage(database) is None  # SQLite reads it: an empty database
    assert _prepared_for(database) is None  # so the server migrates it


def test_a_damaged_history_is_moved_aside_with_its_companions_in_one_line(tmp_path):
    database = tmp_path / "prefect-runs.db"
    database.write_bytes(b"\x07" * 8192)
    (tmp_path / "prefect-runs.db-wal").write_bytes(b"wal")
    (tmp_path / "prefect-runs.db-shm").write_bytes(b"shm")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        _history_checked(database)
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert len(kept) == 3 and not database.exists()
    moved = kept[0]
    assert moved.startswith("prefect-runs.db.damaged-")
    assert kept[1:] == [f"{moved}-shm", f"{moved}-wal"]
    assert (tmp_path / moved).read_bytes() == b"\x07" * 8192  # kept as it was
    assert err.getvalue() == (
        f"the temporary Prefect server's history {database} was damaged (file is not a "
        f"database): moved to {moved}; a new history begins (the store holds every result)\n"
    )


def test_a_damaged_history_that_cannot_be_moved_is_one_line(tmp_path):
    folder = tmp_path / "state"
    folder.mkdir()
    database = folder / "prefect-runs.db"
    database.write_bytes(b"\x07" * 8192)
    from tests.support.hostile_places import make_read_only, release

    make_read_only(folder)
    try:
        with pytest.raises(ServiceError) as refused:
            _history_checked(database)
    finally:
        release(tmp_path)
    assert str(refused.value).startswith(
        f"the temporary Prefect server's history {database} is damaged (file is not a "
        "database) and could not be moved aside ("
    )
    assert str(refused.value).endswith("): move or delete it and run again")


def test_the_servers_port_is_held_from_its_choice_and_the_server_listens_beside_it():
    held = reserve_port()
    port = held.getsockname()[1]
    try:
        with socket.socket() as outsider, pytest.raises(OSError):
            outsider.bind(("127.0.0.1", port))  # what took it between choice and bind before
        server = listen(port)
        with server, socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            accepted, _ = server.accept()
            client.sendall(b"ping")
            assert accepted.recv(4) == b"ping"
            accepted.close()
        with socket.socket() as outsider, pytest.raises(OSError):
            outsider.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            outsider.bind(("127.0.0.1", port))  # still held for a restart on the same port
    finally:
        held.close()
    with socket.socket() as anyone:
        anyone.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        anyone.bind(("127.0.0.1", port))  # released at the end
