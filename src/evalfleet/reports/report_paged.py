"""The report of a run of more than `Paging.above` items (20,000): `report.html` and, beside
it, a folder `report_items/` the page reads its items from:

- `index.js`: every item's filterable and sortable fields in compact columns
  (`reports.report_index`), read as the page opens, so the filters, the sort and the search
  over ids, targets and answers cover every item;
- `details-NNNNNN.js`: the long texts of `Paging.items` items each (response, reasoning,
  answers, score errors, judges' words, the call), read as an item is shown;
- `prompts-NNNNNN.js`: the prompts and choices of `Paging.samples` samples each;
- `media-NNNNNN.js`: the images and audio of `Paging.media` samples each;
- `mathjax.js`: MathJax (`reports.mathjax`), written once when the texts hold math.

Each file is one call, `reportChunk(name, "<base64 of gzipped JSON>")`: a script, which a
page opened from disk may load where it may not fetch a file. The writer reads the samples
table in batches (`evalfleet.reports.report_scan`) and each chunk's records as it goes
(`evalfleet.reports.report_records`): it never holds the run, only the index's columns."""

from __future__ import annotations

import base64
import gzip
import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from evalfleet.engine.store.about import ResultsAbout
from evalfleet.engine.store.results import read_optional_table, read_version_table
from evalfleet.engine.store.stored import StoredRun, plan_run
from evalfleet.reports.mathjax import bundle, has_math, strings
from evalfleet.reports.report_data import (
    NOT_SCORED,
    coverage_row,
    detail_of,
    judges_cost,
    number,
    prompt_of,
    report_meta,
    scoring_kinds,
    shown_answers,
)
from evalfleet.reports.report_fields import sample_row
from evalfleet.reports.report_index import IndexColumns
from evalfleet.reports.report_media import Layout, paged_media
from evalfleet.reports.report_raw import RequestBuilder, raw_of
from evalfleet.reports.report_records import RecordReader
from evalfleet.reports.report_scan import ScannedItem, Shape, scan_items
from evalfleet.reports.report_why import explanations, judges_by_scoring
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.layout import ItemKey

FOLDER = "report_items"
MATHJAX = "mathjax.js"


@dataclass(frozen=True)
class Paging:
    above: int = 20_000  # a run of more items than this is paged; up to it, one page
    items: int = 2_000  # items per details file
    samples: int = 2_000  # samples per prompts file
    media: int = 100  # samples per media file


def chunk_script(name: str, value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    packed = gzip.compress(text.encode(), 6)
    return f'reportChunk("{name}", "{base64.b64encode(packed).decode()}");\n'.encode()


class PagedWriter:
    """Writes the folder beside the page; `write` returns the page's `meta`."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        about: ResultsAbout,
        shape: Shape,
        paging: Paging,
        media_mb: float,
    ) -> None:
        self.store, self.about, self.paging, self.media_mb = store, about, paging, media_mb
        self.run: StoredRun = plan_run(store, run_id)
        self.prefix = layout.results_key(run_id, about.version, FOLDER + "/")
        self.models = list(self.run.request.models)
        self.benchmarks = list(self.run.data)
        self.scorings = {name: shape.scorings.get(name, []) for name in self.benchmarks}
        self.kinds = {n: scoring_kinds(self.run, n, self.scorings[n]) for n in self.benchmarks}
        self.judge_of = {n: judges_by_scoring(self.run, n) for n in self.benchmarks}
        self.builder = RequestBuilder(self.run)
        self.layouts: dict[int, Layout] = {}
        self.sample_keys: dict[tuple[str, str], int] = {}
        self.sample_rows: list[list[Any]] = []
        for name, data in self.run.data.items():
            for sample in data.samples:
                self.sample_keys[(name, sample.id)] = len(self.sample_rows)
                self.sample_rows.append(sample_row(self.benchmarks.index(name), data, sample))
        width = max((len(names) for names in self.scorings.values()), default=1)
        self.index = IndexColumns(shape.items, width)
        self.reader = RecordReader(self.run)
        self.states: dict[tuple[str, str], Counter[str]] = {}
        self.epochs = max((len(d.decodings) for d in self.run.data.values()), default=1)
        self.seen = bytearray(len(self.sample_rows) * self.epochs * len(self.models))
        self.files = 0
        self.media_files: list[int] = []
        self.math = False  # a formula seen in the texts written so far

    def write(self, blob: bytes) -> dict[str, Any]:
        run, version = self.run, self.about.version
        # the media first: its pass over the dataset gives each sample's parts as sent, which
        # the raw view's request bodies are built from
        note = paged_media(
            run, self.sample_keys, self.media_mb, self._media, self.paging.media, self.layouts
        )
        pending: list[ScannedItem] = []
        for item in scan_items(blob):
            if self._listed(item):
                pending.append(item)
            if len(pending) == self.paging.items:
                self._details(pending)
                pending = []
        if pending:
            self._details(pending)
        self._prompts()
        metrics = read_version_table(self.store, run.run_id, version, "metrics.parquet")
        agreement = read_optional_table(self.store, run.run_id, version, "judge_agreement.parquet")
        coverage = [
            coverage_row(run, model, name, self.states.get((model, name), {}))
            for name in self.benchmarks
            for model in self.models
        ]
        meta = report_meta(
            run, self.about, metrics, agreement, self.scorings, coverage, self.index.size
        )
        for name in self.benchmarks:
            meta["benchmarks"][name]["kinds"] = self.kinds[name]
        meta["media_note"] = note
        meta["paged"] = {"folder": FOLDER, "files": self.files}
        if self.math:
            self.store.put(self.prefix + MATHJAX, bundle().encode())
            meta["paged"]["mathjax"] = MATHJAX
        self._index()
        return meta

    def _listed(self, item: ScannedItem) -> bool:
        """An item of the run's models and plan is listed once; one listed twice, its rows
        apart, would be two rows of the list: refused."""
        sample = self.sample_keys.get((item.benchmark, item.sample_id))
        if item.model not in self.models or sample is None or not 0 <= item.epoch < self.epochs:
            return False
        at = (sample * self.epochs + item.epoch) * len(self.models) + self.models.index(item.model)
        if self.seen[at]:
            raise ValueError(
                f"the samples table lists {item.model} {item.benchmark} {item.sample_id} "
                f"epoch {item.epoch} twice, its rows apart: aggregate the run again"
            )
        self.seen[at] = 1
        return True

    def _details(self, items: list[ScannedItem]) -> None:
        keys = [ItemKey.answer(i.model, i.benchmark, i.sample_id, i.epoch) for i in items]
        answers = self.reader.answers(keys)
        judged = self.reader.judgements(list(zip(keys, answers, strict=True)))
        details = []
        for item, found, judges in zip(items, answers, judged, strict=True):
            names = self.scorings[item.benchmark]
            state = self.states.setdefault((item.model, item.benchmark), Counter())
            state["failed" if item.failed else "done"] += 1
            record = found[1] if found else None
            if record is None:
                detail = _gone(item, names)
            else:
                why = explanations(
                    self.run.data[item.benchmark],
                    item.sample_id,
                    record.response,
                    names,
                    self.kinds[item.benchmark],
                    self.judge_of[item.benchmark],
                    "".join(item.found.get(s, NOT_SCORED)[0] for s in names),
                    {judge: by.response for judge, by in judges},
                )
                detail = detail_of(record, item.found, names, judges, why)
                at = self.sample_keys[(item.benchmark, item.sample_id)]
                prompt = self.run.data[item.benchmark].prompts.get(item.sample_id, "")
                body = self.builder.body(item.model, self.layouts.get(at), prompt, record)
                detail["raw"] = raw_of(record, *body)
            tokens = record.tokens if record else None
            self.index.add(
                (
                    self.models.index(item.model),
                    self.benchmarks.index(item.benchmark),
                    self.sample_keys[(item.benchmark, item.sample_id)],
                    item.epoch,
                ),
                "".join(item.found.get(s, NOT_SCORED)[0] for s in names),
                shown_answers(detail["answers"], self.kinds[item.benchmark]),
                (tokens.input_tokens, tokens.output_tokens, tokens.reasoning_tokens)
                if tokens
                else item.tokens,
                (
                    _millisecond(number(record.latency_s)) if record else None,
                    number(record.cost_usd) if record else None,
                    judges_cost(detail["judges"]),
                ),
            )
            details.append(detail)
        self.math = self.math or has_math(strings(details))
        self._put(f"details-{self.files:06d}", details)
        self.files += 1

    def _prompts(self) -> None:
        step = self.paging.samples
        for first in range(0, len(self.sample_rows), step):
            rows = self.sample_rows[first : first + step]
            prompts = [prompt_of(self.run.data[self.benchmarks[b]], sid) for b, sid, *_ in rows]
            self.math = self.math or has_math(strings(prompts))
            self._put(f"prompts-{first // step:06d}", prompts)

    def _media(self, number: int, parts: dict[int, list[dict[str, str]]]) -> None:
        self.media_files.append(number)
        self._put(f"media-{number:06d}", {str(k): v for k, v in parts.items()})

    def _index(self) -> None:
        import numpy as np

        ranked = sorted(range(len(self.sample_rows)), key=lambda s: self.sample_rows[s][:2])
        order = np.empty(len(self.sample_rows), np.int64)
        order[ranked] = np.arange(len(ranked))
        header = {
            "models": self.models,
            "benchmarks": self.benchmarks,
            "scorings": self.scorings,
            "samples": self.sample_rows,
            "folder": FOLDER,
            "chunk": self.paging.items,
            "sample_chunk": self.paging.samples,
            "media_chunk": self.paging.media,
            "media_files": self.media_files,
        }
        self.store.put(self.prefix + "index.js", self.index.script(header, order))

    def _put(self, name: str, value: Any) -> None:
        self.store.put(self.prefix + name + ".js", chunk_script(name, value))


def _millisecond(seconds: float | None) -> float | None:
    """A latency cut to the millisecond: the list shows tenths of a second, sorts as finely as
    anyone reads it, and a million latencies take a few thousand values, not a million (10 MB
    less of index to read as the page opens). Cut down, not rounded, so the tenth shown is
    the one the latency itself shows."""
    return None if seconds is None or math.isnan(seconds) else math.floor(seconds * 1000) / 1000


def _gone(item: ScannedItem, scorings: list[str]) -> dict[str, Any]:
    """The detail of an item whose record is no longer in the store (deleted since the
    results were written): its verdicts, no texts."""
    return {
        "response": None,
        "reasoning": None,
        "answers": [item.found.get(s, NOT_SCORED)[1] for s in scorings],
        "score_errors": [item.found.get(s, NOT_SCORED)[2] for s in scorings],
        "why": [None] * len(scorings),
        "judges": [],
        "attempts": None,
        "finish_reason": None,
        "model_reported": None,
        "error": {"type": "record missing", "status": None, "message": "not in the store now"},
        "batch": False,
    }
