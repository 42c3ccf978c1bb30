"""A results version's samples table read in batches with pyarrow, never whole: what the
paged report (`reports.report_paged`) lists. The table holds one row per (model, benchmark,
sample, epoch, scoring); the rows of one item lie together, as the aggregation writes them
(`evalfleet.engine.scoring.score.sample_rows`), so an item is whole once the next one begins."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field

from evalfleet.reports.report_data import verdict_letter

BATCH_ROWS = 16_384
SCAN_COLUMNS = [
    "model",
    "benchmark",
    "sample_id",
    "epoch",
    "scoring",
    "answer",
    "correct",
    "judged",
    "score_error",
    "error",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
]


@dataclass(frozen=True)
class Shape:
    """How many items a samples table holds, and each benchmark's scoring modes in the order
    the table first names them (the order of an item's verdict letters)."""

    items: int
    scorings: dict[str, list[str]]


@dataclass
class ScannedItem:
    model: str
    benchmark: str
    sample_id: str
    epoch: int
    # scoring -> (letter, extracted answer, score error), as `report_data._verdicts` has it
    found: dict[str, tuple[str, str | None, str | None]] = field(default_factory=dict)
    tokens: tuple[int, int, int] = (0, 0, 0)
    failed: bool = False  # the call failed for good (the row's `error`)


def table_shape(blob: bytes) -> Shape:
    """Read from two columns as dictionaries (a few bytes per row). Raises what pyarrow
    raises on bytes that are not Parquet (ValueError, OSError)."""
    import numpy as np
    import pyarrow.parquet as pq

    names = ["benchmark", "scoring"]
    table = pq.read_table(io.BytesIO(blob), columns=names, read_dictionary=names)
    if table.num_rows == 0:
        return Shape(0, {})
    table = table.unify_dictionaries().combine_chunks()
    bench, scoring = (table.column(n).chunk(0) for n in names)
    width = len(scoring.dictionary)
    pairs = bench.indices.to_numpy().astype(np.int64) * width + scoring.indices.to_numpy()
    found, first, counts = np.unique(pairs, return_index=True, return_counts=True)
    benches, modes = bench.dictionary.to_pylist(), scoring.dictionary.to_pylist()
    scorings: dict[str, list[str]] = {}
    items: dict[str, int] = {}
    for at in np.argsort(first, kind="stable"):
        name, mode = benches[int(found[at]) // width], modes[int(found[at]) % width]
        scorings.setdefault(name, []).append(mode)
        # every item of a benchmark has a row per scoring mode: the most rows any has
        items[name] = max(items.get(name, 0), int(counts[at]))
    return Shape(sum(items.values()), scorings)


def scan_items(blob: bytes) -> Iterator[ScannedItem]:
    """Each item of the table in the table's order, its rows gathered."""
    import pyarrow.parquet as pq

    current: ScannedItem | None = None
    key: tuple | None = None
    for batch in pq.ParquetFile(io.BytesIO(blob)).iter_batches(BATCH_ROWS, columns=SCAN_COLUMNS):
        columns = batch.to_pydict()
        for row in zip(*(columns[name] for name in SCAN_COLUMNS), strict=True):
            model, bench, sample_id, epoch, scoring, answer, correct, judged = row[:8]
            score_error, error, tokens_in, tokens_out, reasoning = row[8:]
            if (model, bench, sample_id, epoch) != key:
                if current is not None:
                    yield current
                key = (model, bench, sample_id, epoch)
                current = ScannedItem(model, bench, sample_id, int(epoch))
                current.tokens = (tokens_in or 0, tokens_out or 0, reasoning or 0)
            assert current is not None  # made above for the first row of every item
            current.failed = current.failed or error is not None
            letter = verdict_letter(error, score_error, correct, judged)
            current.found[scoring] = (letter, answer, score_error)
    if current is not None:
        yield current
