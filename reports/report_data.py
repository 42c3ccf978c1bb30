"""What a run report shows, gathered from the store: the run's identity, coverage and headline
table, and every answered item with its prompt, target, response, verdicts, judges' words and
costs. The page (`reports.report_page`) embeds it in compact pieces it decodes as needed.

- `index`: one short row per item (model, benchmark, sample, epoch, a verdict letter per
  scoring mode), enough to filter 20,000 items in milliseconds;
- `details`: the long texts of each item (response, reasoning, extracted answers, judges'
  replies, tokens, latency, cost, error) in chunks of `CHUNK` items, gzipped;
- `prompts`: each sample's prompt text, target and choices, in chunks, gzipped;
- `media`: each sample's images (a thumbnail, and the full image while the page stays within
  its media budget) and audio, once per sample, from the run's dataset when it can still be
  read (a run keeps no media of its own).

Verdict letters: `R` right, `W` wrong, `S` a score error (an unparsable verdict), `E` the call
failed for good; lowercase when a judge gave the verdict.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.record import Record
from engine.run.items import BenchmarkData
from engine.store.results import read_optional_table, read_version_table, results_about
from engine.store.stored import StoredRun, load_run
from reports import MEDIA_BUDGET_MB
from storage.base import Store
from storage.layout import ItemKey

if TYPE_CHECKING:  # loaded where a table is read: the command line starts without it
    import pandas as pd

log = logging.getLogger("evalfleet")
CHUNK = 500
THUMB_SIDE = 192


@dataclass
class ReportData:
    meta: dict[str, Any]
    index: dict[str, Any]
    details: list[bytes] = field(default_factory=list)  # gzipped JSON chunks
    prompts: list[bytes] = field(default_factory=list)
    media: dict[int, list[dict[str, str]]] = field(default_factory=dict)  # sample -> parts


def gather(
    store: Store, run_id: str, version: str | None = None, *, media_mb: float = MEDIA_BUDGET_MB
) -> ReportData:
    """Everything the report of `run_id` (its latest results, or `version`) shows."""
    run = load_run(store, run_id)
    about = results_about(store, run_id, version)
    version = about["version"]
    samples = read_version_table(store, run_id, version, "samples.parquet")
    metrics = read_version_table(store, run_id, version, "metrics.parquet")
    agreement = read_optional_table(store, run_id, version, "judge_agreement.parquet")

    models = list(run.request.models)
    benchmarks = list(run.data)
    scorings = {
        name: list(dict.fromkeys(samples[samples.benchmark == name].scoring)) for name in benchmarks
    }
    sample_keys: dict[tuple[str, str], int] = {}
    sample_rows: list[list[Any]] = []
    for name, data in run.data.items():
        for sample in data.samples:
            sample_keys[(name, sample.id)] = len(sample_rows)
            sample_rows.append([benchmarks.index(name), sample.id, sample.target])

    verdicts = _verdicts(samples)
    rows, details = [], []
    for key, record_key in sorted(
        run.answer_state.record_key.items(),
        key=lambda kv: (
            benchmarks.index(kv[0].benchmark),
            kv[0].sample_id,
            kv[0].epoch,
            kv[0].model,
        ),
    ):
        record = run.answer_state.records.get(record_key)
        if record is None or key.model not in models:
            continue
        found = verdicts.get((key.model, key.benchmark, key.sample_id, key.epoch), {})
        letters = "".join(found.get(s, ("-", None, None))[0] for s in scorings[key.benchmark])
        rows.append(
            [
                models.index(key.model),
                benchmarks.index(key.benchmark),
                sample_keys[(key.benchmark, key.sample_id)],
                key.epoch,
                letters,
            ]
        )
        details.append(_detail(run, key, record, found, scorings[key.benchmark]))

    meta = _meta(run, about, metrics, agreement, samples, scorings)
    data = ReportData(
        meta=meta,
        index={
            "models": models,
            "benchmarks": benchmarks,
            "scorings": scorings,
            "samples": sample_rows,
            "items": rows,
            "chunk": CHUNK,
        },  # fmt: skip
        details=[_gzip(details[i : i + CHUNK]) for i in range(0, len(details), CHUNK)],
    )
    prompts = [_prompt(run.data[benchmarks[b]], sid) for b, sid, _ in sample_rows]
    data.prompts = [_gzip(prompts[i : i + CHUNK]) for i in range(0, len(prompts), CHUNK)]
    data.media, meta["media_note"] = _media(run, sample_keys, media_mb)
    return data


def _verdicts(samples: pd.DataFrame) -> dict[tuple, dict[str, tuple[str, str | None, str | None]]]:
    """(model, benchmark, sample, epoch) -> scoring -> (letter, extracted answer, score error)."""
    out: dict[tuple, dict[str, tuple[str, str | None, str | None]]] = {}
    for row in samples.itertuples(index=False):
        if row.error is not None:
            letter = "E"
        elif row.score_error is not None:
            letter = "S"
        else:
            letter = "R" if row.correct else "W"
        if row.judged and letter != "E":
            letter = letter.lower()
        key = (row.model, row.benchmark, row.sample_id, int(row.epoch))
        out.setdefault(key, {})[row.scoring] = (letter, row.answer, row.score_error)
    return out


def _detail(
    run: StoredRun,
    key: ItemKey,
    record: Record,
    found: dict[str, tuple[str, str | None, str | None]],
    scorings: list[str],
) -> dict[str, Any]:
    tokens, error = record.tokens, record.error
    judges = []
    for judge in run.judges:
        record_key = run.judge_state.record_key.get(key.judged_by(judge))
        judged = run.judge_state.records.get(record_key) if record_key else None
        if judged is not None:
            failed = judged.error.type if judged.error else None
            judges.append({"judge": judge, "reply": judged.response, "error": failed})
    return {
        "response": record.response,
        "reasoning": record.reasoning,
        "answers": [found.get(s, ("-", None, None))[1] for s in scorings],
        "score_errors": [found.get(s, ("-", None, None))[2] for s in scorings],
        "judges": judges,
        "tokens": [tokens.input_tokens, tokens.output_tokens, tokens.reasoning_tokens],
        "latency_s": record.latency_s,
        "cost_usd": record.cost_usd,
        "attempts": record.attempts,
        "finish_reason": record.finish_reason,
        "model_reported": record.model_reported,
        "error": (
            {"type": error.type, "status": error.status, "message": error.message}
            if error
            else None
        ),
        "batch": bool(record.batch),
    }


def _prompt(data: BenchmarkData, sample_id: str) -> dict[str, Any]:
    sample = data.by_id[sample_id]
    return {"prompt": data.prompts.get(sample_id, ""), "choices": sample.choices}


def _meta(
    run: StoredRun,
    about: dict[str, Any],
    metrics: pd.DataFrame,
    agreement: pd.DataFrame | None,
    samples: pd.DataFrame,
    scorings: dict[str, list[str]],
) -> dict[str, Any]:
    manifest = run.manifest
    from engine.scoring.score import judge_scoring

    benchmarks = {}
    for name, data in run.data.items():
        judge = data.benchmark.judge
        judged = {
            model: [judge_scoring(s, model, position == 0) for s in judge.scorings]
            for position, model in enumerate(run.judges)
        } if judge else {}  # fmt: skip
        benchmarks[name] = {
            "judge_scorings": judged,
            "protocol": data.protocol,
            "epochs": len(data.decodings),
            "options": data.options.model_dump(mode="json"),
            "samples": len(data.samples),
            "revision": data.revision,
            "source": data.source,
            "headline": data.benchmark.headline,
            "scorings": scorings[name],
        }
    coverage = []
    counts = run.answer_state.counts()
    for name, data in run.data.items():
        expected = len(data.samples) * len(data.decodings)
        for model in run.request.models:
            states = counts.get(("answer", "", model, name), {})
            coverage.append(
                {
                    "model": model,
                    "benchmark": name,
                    "done": states.get("done", 0),
                    "failed": states.get("failed", 0),
                    "expected": expected,
                }  # fmt: skip
            )
    headline = []
    whole = metrics[metrics.group.fillna("") == ""]
    for row in whole.itertuples(index=False):
        if row.metric != run.data[row.benchmark].benchmark.headline:
            continue
        value = _number(row.value)
        # the interval aggregation computed with the one function for its kind
        low = _number(getattr(row, "ci95_low", None))
        high = _number(getattr(row, "ci95_high", None))
        headline.append(
            {
                "model": row.model,
                "benchmark": row.benchmark,
                "scoring": row.scoring,
                "metric": row.metric,
                "value": value,
                "low": low,
                "high": high,
                "n": int(row.n),
            }  # fmt: skip
        )
    return {
        "run_id": run.run_id,
        "version": about["version"],
        "written_at": about.get("written_at"),
        "code_version": about.get("code_version"),
        "scorer_sha256": about.get("scorer_sha256"),
        "created_at": manifest.get("created_at"),
        "run_code_version": manifest.get("code_version"),
        "models": run.request.models,
        "judges": run.judges,
        "max_image_side": run.request.max_image_side,
        "benchmarks": benchmarks,
        "coverage": coverage,
        "headline": headline,
        "agreement": [] if agreement is None else _records(agreement),
        "items": int(len(samples[["model", "benchmark", "sample_id", "epoch"]].drop_duplicates())),
    }


def _media(
    run: StoredRun, sample_keys: dict[tuple[str, str], int], budget_mb: float
) -> tuple[dict[int, list[dict[str, str]]], str]:
    """Each sample's media from the run's dataset, when it can still be read at the revision
    the run asked; a line saying why not otherwise."""
    from engine.prepare.reading import downscaled

    media: dict[int, list[dict[str, str]]] = {}
    budget = budget_mb * 2**20
    notes = []
    over = 0  # media left as thumbnails (or out) for the budget
    for name, data in run.data.items():
        path = run.request.dataset_path_for(name)
        try:
            loaded = data.benchmark.load(path, data.options, run.request.limit)
        except Exception as exc:  # a Hub dataset offline, a moved copy: the texts still show
            notes.append(
                f"{name}: media not shown, the dataset could not be read ({_one_line(exc)})"
            )
            continue
        if loaded.revision != data.revision:
            notes.append(f"{name}: media not shown, the dataset changed since the run ({path})")
            continue
        for sample in loaded.samples:
            where = sample_keys.get((name, sample.id))
            if where is None:
                continue
            if run.request.max_image_side is not None:
                sample = downscaled(sample, run.request.max_image_side)
            parts = []
            for part in sample.parts:
                if part.data is None or part.kind not in ("image", "audio"):
                    continue
                entry: dict[str, str] = {"kind": part.kind}
                if part.kind == "image":
                    entry["thumb"] = _thumbnail(part.data)
                if len(part.data) * 4 / 3 <= budget:
                    entry["full"] = _data_uri(part.media_type, part.data)
                    budget -= len(entry["full"])
                else:
                    over += 1
                parts.append(entry)
            if parts:
                media[where] = parts
    if over:
        notes.append(
            f"{over} media beyond the {budget_mb:g} MB budget are shown as thumbnails only, "
            "audio not at all (--media-mb)"
        )
    return media, "; ".join(notes)


def _thumbnail(data: bytes) -> str:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.thumbnail((THUMB_SIDE, THUMB_SIDE))
            out = io.BytesIO()
            image.convert("RGB").save(out, "JPEG", quality=70)
    except Exception:  # an image PIL cannot read: no thumbnail, the full one may still show
        return ""
    return _data_uri("image/jpeg", out.getvalue())


def _data_uri(media_type: str | None, data: bytes) -> str:
    return (
        f"data:{media_type or 'application/octet-stream'};base64,{base64.b64encode(data).decode()}"
    )


def _gzip(rows: list[Any]) -> bytes:
    return gzip.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {k: _plain(v) for k, v in row.items()} for row in frame.astype(object).to_dict("records")
    ]


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _number(value: Any) -> float | None:
    value = _plain(value)
    return None if value is None else float(value)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
