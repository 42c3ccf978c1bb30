"""docs/performance.md opens with one table that has a row for every benchmark of `perf/`, each
with the same seven columns: a new script without its row, or a row that lost a cell, fails."""

from __future__ import annotations

from tests.perf.promises import REPO, benchmarks

PAGE = REPO / "docs" / "performance.md"
COLUMNS = ["benchmark", "command", "figures (latest)", "target", "date", "commit", "host"]


def opening_table() -> list[list[str]]:
    """The rows of the first table, read before the page's first section."""
    head = PAGE.read_text().split("\n## ", 1)[0]
    lines = [line for line in head.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]


def test_the_page_opens_with_one_table_of_seven_columns():
    rows = opening_table()
    assert rows[0] == COLUMNS
    assert {cell.strip("-") for cell in rows[1]} == {""}
    assert [len(row) for row in rows if len(row) != len(COLUMNS)] == []


def test_every_benchmark_has_a_row_naming_its_command():
    commands = [row[1] for row in opening_table()[2:]]
    assert [n for n in benchmarks() if not any(f"perf/{n}.py" in c for c in commands)] == []
