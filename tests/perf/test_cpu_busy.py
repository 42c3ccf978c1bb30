"""The busy-cores figure `make test` prints beside pytest's time."""

from __future__ import annotations

import re

from tests.support.cpu_busy import counters, main


def test_the_counters_grow_and_busy_never_exceeds_total():
    busy0, total0 = counters()
    sum(range(10**6))
    busy1, total1 = counters()
    assert 0 <= busy0 <= total0 and 0 <= busy1 <= total1
    assert total1 >= total0 and busy1 >= busy0


def test_start_then_end_prints_one_share_and_removes_its_file(tmp_path, capsys):
    where = tmp_path / "cpu"
    assert main(["cpu_busy", "start", str(where)]) == 0
    assert re.fullmatch(r"\d+ \d+", where.read_text())
    sum(range(10**6))
    assert main(["cpu_busy", "end", str(where)]) == 0
    line = capsys.readouterr().out.strip()
    shape = r"cores busy: \d+% of \d+ over the run \(\d+\.\d\d cores on average\)"
    assert re.fullmatch(shape, line)
    assert not where.exists()


def test_a_wrong_call_prints_nothing_and_never_fails(tmp_path, capsys):
    assert main(["cpu_busy", "middle", str(tmp_path / "x")]) == 0
    assert main(["cpu_busy"]) == 0
    assert capsys.readouterr().out == ""
