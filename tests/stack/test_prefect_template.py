"""A new Prefect database starts as a copy of the cached migrated one; nothing existing is
touched. (The template's own making, Prefect's migrations, runs in every stack test.)"""

from __future__ import annotations

import sqlite3

from evalfleet.stack import prefect_template


def test_a_new_database_is_a_copy_of_the_template(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    template = prefect_template.template_path()
    assert template.parent == tmp_path / "cache" / "evalfleet"
    assert template.name.startswith("prefect-") and template.name.endswith("-empty.db")
    template.parent.mkdir(parents=True)
    with sqlite3.connect(template) as con:
        con.execute("create table alembic_version (version_num text)")
        con.execute("insert into alembic_version values ('abc123')")
    database = tmp_path / "stack" / "prefect.db"
    database.parent.mkdir()

    assert prefect_template.seed(database) is True
    assert database.read_bytes() == template.read_bytes()
    assert [p.name for p in database.parent.iterdir()] == ["prefect.db"]  # no partial left


def test_an_existing_database_is_left_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    database = tmp_path / "prefect.db"
    database.write_bytes(b"past flow runs")
    assert prefect_template.seed(database) is False
    assert database.read_bytes() == b"past flow runs"


def test_no_template_to_be_made_leaves_the_migration_to_the_server(tmp_path, monkeypatch):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder belongs")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    database = tmp_path / "prefect.db"
    assert prefect_template.seed(database) is False
    assert not database.exists()
