"""A server that lost its chosen port to another program is started again on a new one; the
sign is its own log, read from where this start began (an old failure does not count)."""

from __future__ import annotations

from evalfleet.stack.prefect_server import _port_taken

UVICORN = "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 4301): "


def test_only_what_this_start_logged_counts(tmp_path):
    log = tmp_path / "prefect.log"
    log.write_text(UVICORN + "address already in use\n")
    offset = log.stat().st_size
    assert _port_taken(log, 0) is True
    assert _port_taken(log, offset) is False
    with log.open("a") as more:
        more.write("sqlite3.OperationalError: database is locked\n")
    assert _port_taken(log, offset) is False
    with log.open("a") as more:
        more.write(UVICORN + "Address already in use\n")
    assert _port_taken(log, offset) is True
    assert _port_taken(tmp_path / "no.log", 0) is False
