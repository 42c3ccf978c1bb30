"""The index of a paged report: what the list filters, sorts and draws for every item, in
compact columns (NumPy while it is written, typed arrays in the page), so that a million items
weigh tens of bytes each rather than a JavaScript array each.

One value per item in each column: model, benchmark, sample (an index into `samples`), epoch,
a verdict letter per scoring mode (character codes, `-` where the benchmark has fewer modes),
the answer the list shows (an index into `answers`, the distinct ones), tokens in / out /
reasoning, latency, cost and the judges' cost (each a code into the column's distinct values
in order, `name.values`, NaN first for none) and `at`: where the item's texts sit in the
detail files. The columns are written in the list's order (benchmark, sample id, epoch,
model: the single-file report's), whatever order the samples table had.

The file is `index.js`, one statement: `self.REPORT_INDEX = "<base64>"`, the gzip of a
little-endian uint32 (the header's length), the header (JSON: names, samples, answers, and
each column's type, offset and length) and the columns, each at a multiple of 8 bytes."""

from __future__ import annotations

import base64
import gzip
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

INTEGERS = ("model", "bench", "sample", "epoch", "answer", "tin", "tout", "treason")
FLOATS = ("latency", "cost", "judge_cost")


class IndexColumns:
    def __init__(self, capacity: int, width: int) -> None:
        import numpy as np

        self.size = 0
        self.width = max(1, width)
        self._ints = {name: np.zeros(capacity, np.int64) for name in INTEGERS}
        self._floats = {name: np.full(capacity, np.nan) for name in FLOATS}
        self._letters = np.full((capacity, self.width), ord("-"), np.uint8)
        self._answers: dict[str, int] = {"null": 0}

    def add(
        self,
        where: tuple[int, int, int, int],
        letters: str,
        answer: str | list[str | None] | None,
        tokens: tuple[int, int, int],
        spent: tuple[float | None, float | None, float | None],
    ) -> None:
        """One item: (model, benchmark, sample, epoch), its letters, the answer the list
        shows, its tokens, and (latency, cost, judges' cost)."""
        if self.size == len(self._letters):
            self._grow()
        at = self.size
        code = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        values = (*where, self._answers.setdefault(code, len(self._answers)), *tokens)
        for name, value in zip(INTEGERS, values, strict=True):
            self._ints[name][at] = value
        for name, amount in zip(FLOATS, spent, strict=True):
            if amount is not None:
                self._floats[name][at] = amount
        self._letters[at, : len(letters)] = list(letters.encode("ascii"))
        self.size += 1

    def script(self, header: dict[str, Any], sample_order: np.ndarray) -> bytes:
        """`index.js`: the columns in the list's order. `sample_order`: each sample's rank in
        that order (benchmark, then sample id)."""
        import numpy as np

        n = self.size
        ints = {k: v[:n] for k, v in self._ints.items()}
        order = np.lexsort((ints["model"], ints["epoch"], sample_order[ints["sample"]]))
        columns: dict[str, np.ndarray] = {k: _narrow(v[order]) for k, v in ints.items()}
        for name, values in self._floats.items():
            columns.update(_coded(name, values[:n][order]))
        columns["letters"] = self._letters[:n][order].reshape(-1)
        columns["at"] = _narrow(order)
        answers = [json.loads(code) for code in self._answers]
        layout: dict[str, list[Any]] = {}
        offset = 0
        for name, column in columns.items():
            layout[name] = [column.dtype.str[1:], offset, len(column)]
            offset += -(-column.nbytes // 8) * 8
        head = {**header, "items": n, "width": self.width, "answers": answers, "columns": layout}
        encoded = json.dumps(head, ensure_ascii=False, separators=(",", ":")).encode()
        start = -(-(4 + len(encoded)) // 8) * 8
        blob = bytearray(start + offset)
        blob[:4] = len(encoded).to_bytes(4, "little")
        blob[4 : 4 + len(encoded)] = encoded
        for name, column in columns.items():
            at = start + layout[name][1]
            blob[at : at + column.nbytes] = column.tobytes()
        packed = base64.b64encode(gzip.compress(bytes(blob), 6)).decode()
        return f'self.REPORT_INDEX = "{packed}";\n'.encode()

    def _grow(self) -> None:
        import numpy as np

        more = max(1024, len(self._letters))
        for name, column in self._ints.items():
            self._ints[name] = np.concatenate([column, np.zeros(more, np.int64)])
        for name, column in self._floats.items():
            self._floats[name] = np.concatenate([column, np.full(more, np.nan)])
        filler = np.full((more, self.width), ord("-"), np.uint8)
        self._letters = np.concatenate([self._letters, filler])


def _coded(name: str, column: np.ndarray) -> dict[str, np.ndarray]:
    """A float column as its distinct values in order (`name.values`, NaN first) and a code
    per item: where values repeat (a cost is a price times a few hundred token counts) a
    fraction of the bytes to read and inflate, and in every case a code sorts as its value, so
    the page sorts a million items by counting, not comparing."""
    import numpy as np

    missing = np.isnan(column)
    values, codes = np.unique(column[~missing], return_inverse=True)
    coded = np.zeros(len(column), np.int64)
    coded[~missing] = codes + 1
    return {name: _narrow(coded), f"{name}.values": np.concatenate([[np.nan], values])}


def _narrow(column: np.ndarray) -> np.ndarray:
    """The smallest unsigned type that holds every value (the page reads u1, u2 or u4)."""
    import numpy as np

    top = int(column.max()) if len(column) else 0
    kind = "<u1" if top < 2**8 else "<u2" if top < 2**16 else "<u4"
    return column.astype(np.dtype(kind))
