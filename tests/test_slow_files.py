"""The order of the long files (tests/conftest.py `SLOW_FILES`) names files that exist: a file
renamed or moved would otherwise drop silently to the end of the run."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SLOW_FILES


def test_every_slow_file_is_named_once_and_exists():
    names = [p.name for p in Path(__file__).parent.rglob("test_*.py")]
    assert [f for f in SLOW_FILES if f not in names] == []
    assert len(set(SLOW_FILES)) == len(SLOW_FILES)
