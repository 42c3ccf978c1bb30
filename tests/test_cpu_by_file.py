"""The table of CPU-seconds by file that ends a run (tests/support/cpu_by_file.py)."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

from tests.support.cpu_by_file import add, cpu_now, table


def test_tests_add_up_by_file_and_the_costliest_come_first():
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    add(by_file, "tests/a.py::test_one", (1.0, 2.5))
    add(by_file, "tests/a.py::test_two[x]", (0.5, 0.0))
    add(by_file, "tests/b.py::test_three", (0.25, 10.0))
    add(by_file, "tests/c.py::test_four", (0.125, 0.0))
    assert table(by_file, shown=2) == [
        "    10.2 s  (pytest 0.2, its processes 10.0)  tests/b.py",
        "     4.0 s  (pytest 1.5, its processes 2.5)  tests/a.py",
        "    14.4 s  (pytest 1.9, its processes 12.5)  in all",
    ]


def test_a_child_that_ended_is_counted_once_waited_for():
    own_before, children_before = cpu_now()
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    own_after, children_after = cpu_now()
    # the kernel counts in ticks of 0.01 s, rounded down: a CI run read 0.30 as 0.2999...
    assert children_after - children_before >= 0.25
    assert own_after >= own_before
