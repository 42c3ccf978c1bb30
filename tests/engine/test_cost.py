"""Cost before and during a run: the token rules per provider, the cost breakdown of a record,
the usage table's cost columns, and `evalfleet run --estimate` end to end (nothing sent,
nothing written). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from evalfleet.cli.main import main
from evalfleet.core.types import Decoding, Part
from evalfleet.providers import token_rules as rules
from evalfleet.providers.pricing import (
    expected_item_cost_usd,
    expected_output_tokens,
    max_item_cost_usd,
)
from evalfleet.providers.registry import ModelConfig, resolve_model
from evalfleet.providers.types import ProviderResponse, Usage

SIM = "http://127.0.0.1:9"  # never contacted: an estimate sends nothing


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def wav(seconds: float, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(seconds * rate))
    return out.getvalue()


def config(provider: str, api_model: str, **kwargs) -> ModelConfig:
    return ModelConfig(
        id=f"{provider}/{api_model}",
        provider=provider,
        api_model=api_model,
        base_url=None,
        api_key_env="X",
        **kwargs,
    )


GPT4O = config("openai", "gpt-4o-2024-11-20")
CLAUDE = config("anthropic", "claude-sonnet-4-6")
OPUS47 = config("anthropic", "claude-opus-4-7")
GEMINI = config("google", "gemini-2.5-pro")


# --- token rules ------------------------------------------------------------------------


def test_text_is_four_ascii_characters_per_token_and_one_per_other_character():
    assert rules.text_tokens(GPT4O, "") == 0
    assert rules.text_tokens(GPT4O, "abcdefgh") == 2  # 8 / 4
    assert rules.text_tokens(GPT4O, "abcdefghi") == 3  # ceil(9 / 4)
    assert rules.text_tokens(GPT4O, "日本語") == 3  # one each
    assert rules.text_tokens(GPT4O, "ab日本") == 3  # ceil(2 / 4) + 2
    # Opus 4.7's tokenizer: x1.35, rounded up: 100 chars -> 25 -> ceil(33.75) = 34
    assert rules.text_tokens(OPUS47, "x" * 100) == 34
    assert rules.text_tokens(CLAUDE, "x" * 100) == 25


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        # fits 2048; shortest side 1024 -> 768: 768 x 768, 2 x 2 tiles: 85 + 170 * 4
        ((1024, 1024), 765),
        # fit in 2048: 1024 x 2048; shortest to 768: 768 x 1536; 2 x 3 tiles: 85 + 170 * 6
        ((2048, 4096), 1105),
        # shortest side under 768: not scaled up; one tile
        ((500, 500), 255),
        ((128, 64), 255),
        # 513 x 500: 2 x 1 tiles
        ((513, 500), 425),
        # shortest 1000 -> 768: 1536 x 768: 3 x 2 tiles: 85 + 170 * 6
        ((2000, 1000), 1105),
    ],
)
def test_openai_tile_rule(size, tokens):
    assert rules.openai_tile_tokens(*size) == tokens
    assert rules.image_tokens(GPT4O, *size) == tokens


def test_openai_image_read_from_the_bytes():
    parts = [Part(kind="image", data=png(1024, 1024), media_type="image/png")]
    assert rules.estimate_prompt_tokens(GPT4O, parts) == 765


def test_openai_model_specific_image_rules():
    # gpt-4o-mini: 2833 + 5667 per tile; 1024 x 1024 is 4 tiles
    assert rules.image_tokens(config("openai", "gpt-4o-mini-2024-07-18"), 1024, 1024) == 25501
    # o3: 75 + 150 per tile
    assert rules.image_tokens(config("openai", "o3-2025-04-16"), 1024, 1024) == 675
    # gpt-5-mini, patches: 32 x 32 = 1024 patches x 1.62 = 1658.88 -> 1659
    assert rules.image_tokens(config("openai", "gpt-5-mini-2025-08-07"), 1024, 1024) == 1659
    # the guide's example: 1800 x 2400 needs 57 x 75 = 4275 patches > 1536; shrink
    # sqrt(1024 * 1536 / 4320000) = 0.6034; 33.94 x 45.25 patches -> x 33 / 33.94: 1056 x 1408
    # px = 33 x 44 = 1452 patches
    assert rules.openai_patch_tokens(1800, 2400, 1.0) == 1452


@pytest.mark.parametrize(
    ("model", "size", "tokens"),
    [
        # 1000 * 1000 / 750 = 1333.3
        (CLAUDE, (1000, 1000), 1333),
        # 1092 x 1092 is the docs' largest 1:1 size: 1589.9 -> 1590
        (CLAUDE, (1092, 1092), 1590),
        # scale min(1568 / 2000, sqrt(1600 * 750 / 2000000) = 0.7746): 1549 x 774 -> 1598.6
        (CLAUDE, (2000, 1000), 1599),
        # Opus 4.7 (2576 px, 4784 tokens): no scaling: 2000000 / 750 = 2666.7
        (OPUS47, (2000, 1000), 2667),
        # 300 * 200 / 750
        (CLAUDE, (300, 200), 80),
    ],
)
def test_anthropic_area_rule(model, size, tokens):
    assert rules.image_tokens(model, *size) == tokens


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        ((300, 200), 258),  # both sides <= 384
        ((384, 384), 258),
        ((385, 100), 258),  # one 768 tile
        ((1000, 1000), 1032),  # 2 x 2 tiles of 258
        ((2000, 1000), 1548),  # 3 x 2 tiles
    ],
)
def test_gemini_tile_rule(size, tokens):
    assert rules.image_tokens(GEMINI, *size) == tokens


def test_gemini_3_images_and_compatible_servers():
    assert rules.image_tokens(config("google", "gemini-3-pro-preview"), 4000, 3000) == 1120
    # one token per 750 px², no downscaling: 1000 * 1000 / 750 = 1333.3 -> 1334
    served = config("openai-compatible", "Qwen2-VL-7B")
    assert rules.image_tokens(served, 1000, 1000) == 1334


def test_audio_seconds_from_wav_mp3_and_bytes():
    assert rules.audio_seconds(wav(2.0)) == 2.0
    # an MPEG-1 Layer III frame header at 128 kbit/s (index 9), 32,000 bytes: 2 s
    mp3 = b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes([0xFF, 0xFB, 0x90, 0x00]) + b"\0" * 31986
    assert len(mp3) == 32000
    assert rules.audio_seconds(mp3, "audio/mpeg") == 2.0
    # no header to read: 48,000 bytes at 16,000 bytes/s
    assert rules.audio_seconds(b"\x01" * 48000, "audio/ogg") == 3.0


def test_audio_tokens_per_provider():
    audio = [Part(kind="audio", data=wav(2.5), media_type="audio/wav")]
    assert rules.estimate_prompt_tokens(GEMINI, audio) == 80  # 2.5 s x 32
    assert rules.estimate_prompt_tokens(GPT4O, audio) == 25  # 2.5 s x 10
    text = Part.of_text("abcdefghijkl")  # 12 chars: 3 tokens
    image = Part(kind="image", data=png(300, 200), media_type="image/png")  # 258 on Gemini
    assert rules.estimate_prompt_tokens(GEMINI, [text, image, *audio]) == 3 + 258 + 80


# --- prices -----------------------------------------------------------------------------


PRICED = config(
    "openai", "gpt-x", price_in_per_mtok=2.0, price_out_per_mtok=8.0, price_cached_in_per_mtok=0.5
)


def test_cost_breakdown_and_cost_usd_agree():
    usage = Usage(input_tokens=10_000, cached_input_tokens=4_000, output_tokens=3_000)
    usage.reasoning_tokens = 1_000
    spent = PRICED.cost_breakdown(usage)
    # 6,000 uncached x $2 + 4,000 cached x $0.5 + 2,000 output x $8 + 1,000 reasoning x $8
    assert spent == {
        "input": 0.012,
        "cached_input": 0.002,
        "output": 0.016,
        "reasoning": 0.008,
        "total": 0.038,
    }
    assert PRICED.cost_usd(10_000, 3_000, 4_000) == spent["total"]
    # no cached price: cached input at the input price
    plain = config("openai", "gpt-y", price_in_per_mtok=2.0, price_out_per_mtok=8.0)
    assert plain.cost_breakdown(usage)["cached_input"] == 0.008
    assert plain.cost_usd(10_000, 3_000, 4_000) == 0.044


def test_registry_reads_cached_price_and_expected_output_tokens():
    registry = {
        "models": {
            "openai/gpt-z": {
                "price_per_mtok": {"input": 1.0, "output": 4.0, "cached_input": 0.1},
                "expected_output_tokens": 700,
            },
            "openai/gpt-w": {"price_per_mtok": {"input": 1.0, "output": 4.0}},
        }
    }
    z = resolve_model("openai/gpt-z", registry=registry)
    assert (z.price_cached_in_per_mtok, z.expected_output_tokens) == (0.1, 700)
    assert "expected_output_tokens" not in z.extra
    w = resolve_model("openai/gpt-w", registry=registry)
    assert (w.price_cached_in_per_mtok, w.expected_output_tokens) == (None, None)
    # the shipped registry: Anthropic cache reads at 0.1x input
    assert resolve_model("anthropic/claude-opus-4-7").price_cached_in_per_mtok == 0.5


def test_expected_output_tokens_and_item_cost():
    decoding = Decoding(max_tokens=16000)
    assert expected_output_tokens(PRICED, decoding) == (1000, "assumed")
    assert expected_output_tokens(PRICED, Decoding(max_tokens=300)) == (300, "assumed")
    assert expected_output_tokens(PRICED, decoding, measured=212.5) == (213, "measured")
    listed = config("openai", "gpt-x", expected_output_tokens=4000)
    assert expected_output_tokens(listed, decoding) == (4000, "registry")
    assert expected_output_tokens(listed, decoding, measured=99.0) == (99, "measured")
    # a benchmark's typical answer, when nothing is measured or listed; capped by max_tokens
    assert expected_output_tokens(PRICED, decoding, typical=32) == (32, "typical")
    assert expected_output_tokens(PRICED, Decoding(max_tokens=20), typical=32) == (20, "typical")
    assert expected_output_tokens(listed, decoding, typical=32) == (4000, "registry")
    parts = [Part.of_text("x" * 400), Part(kind="image", data=png(1024, 1024))]
    # 100 text + 765 image tokens at $2, 500 output at $8: (865 * 2 + 500 * 8) / 1e6
    assert expected_item_cost_usd(PRICED, parts, decoding, 500) == 0.00573
    # the output limit caps the expected output: 300 at $8
    assert expected_item_cost_usd(PRICED, parts, Decoding(max_tokens=300), 500) == 0.00413
    # at most: all 16,000 output tokens
    assert max_item_cost_usd(PRICED, parts, decoding) == 0.12973


def test_record_stores_the_breakdown_beside_cost_usd():
    from evalfleet.storage.layout import ItemKey
    from evalfleet.tasks.records import build_record
    from evalfleet.tasks.work import WorkItem

    item = WorkItem("r", ItemKey.answer("openai/gpt-x", "zerobench", "1", 0), Decoding(), "ab" * 32)
    usage = Usage(input_tokens=10_000, output_tokens=3_000, reasoning_tokens=1_000)
    usage.cached_input_tokens = 4_000
    response = ProviderResponse(text="{1}", finish_reason="stop", usage=usage)
    common = dict(attempts=1, attempt_errors=[], started=0.0, finished=1.0, latency_s=1.0)
    record = build_record(item, PRICED, response=response, error=None, **common).to_dict()
    assert record["cost"] == PRICED.cost_breakdown(usage)
    assert record["cost_usd"] == record["cost"]["total"] == 0.038
    failed = build_record(item, PRICED, response=None, error=None, **common).to_dict()
    assert failed["cost_usd"] == 0.0
    zero = dict.fromkeys(("input", "cached_input", "output", "reasoning", "total"), 0.0)
    assert failed["cost"] == zero


def test_usage_table_has_cost_apart_by_kind_and_stage():
    from evalfleet.core.record import Record
    from evalfleet.engine.scoring.spend import UsageSums
    from evalfleet.engine.scoring.tables import USAGE_IN_SUMMARY

    def record(fields: dict) -> Record:
        key = {"model": "m", "benchmark": "b", "sample_id": "1", "epoch": 0}
        return Record.from_bytes(json.dumps({**key, **fields}).encode())

    answer = {
        "usage": {
            "input_tokens": 100,
            "output_tokens": 50,
            "reasoning_tokens": 20,
            "cached_input_tokens": 40,
        },
        "cost_usd": 0.5,
        "cost": {"input": 0.1, "cached_input": 0.02, "output": 0.23, "reasoning": 0.15},
    }
    judgement = {
        "usage": {"input_tokens": 10, "output_tokens": 5, "reasoning_tokens": 2},
        "cost_usd": 0.25,
        "cost": {"input": 0.1, "cached_input": 0.0, "output": 0.1, "reasoning": 0.05},
    }
    old = {"usage": {"input_tokens": 1, "output_tokens": 1}, "cost_usd": 0.125}  # no `cost`
    first, second = UsageSums(), UsageSums()  # two shards' sums, merged
    first.add_answer("m", "b", record(answer))
    second.add_answer("m", "b", record(old))
    second.add_judgement("m", "b", "j", record(judgement))
    first.merge(second)
    table = first.usage_table([("m", "b")])
    (judge,) = first.judge_table().to_dict("records")
    assert judge == {
        "model": "m",
        "benchmark": "b",
        "judge": "j",
        "judgements": 1,
        "errors": 0,
        "input_tokens": 10,
        "output_tokens": 5,
        "reasoning_tokens": 2,
        "cost_usd": 0.25,
    }
    (spent,) = table.to_dict("records")
    assert {k: v for k, v in spent.items() if v} == {
        "model": "m",
        "benchmark": "b",
        "total_cost_usd": 0.875,
        "answers": 2,
        "input_tokens": 101,
        "output_tokens": 51,
        "reasoning_tokens": 20,
        "cost_usd": 0.625,
        "judgements": 1,
        "judge_input_tokens": 10,
        "judge_output_tokens": 5,
        "judge_cost_usd": 0.25,
        "cached_input_tokens": 40,
        "input_cost_usd": 0.1,
        "cached_input_cost_usd": 0.02,
        "output_cost_usd": 0.23,
        "reasoning_cost_usd": 0.15,
        "judge_reasoning_tokens": 2,
        "judge_reasoning_cost_usd": 0.05,
        "billed_attempts": 2,  # records before the ledger: one billed attempt each
        "judge_billed_attempts": 1,
    }
    for column in ("cost_usd", "judge_cost_usd", "cached_input_cost_usd", "reasoning_cost_usd"):
        assert column in USAGE_IN_SUMMARY


# --- evalfleet run --estimate -----------------------------------------------------------

Q1 = "How many red squares are in the image?"  # 38 chars
Q2 = "Which image is larger, the first or the second?"  # 47 chars
# Each prompt is the question plus ZeroBench's 96-character instruction:
# Q1: 134 chars -> 34 tokens; Q2: 143 chars -> 36 tokens (4 per token, rounded up).
# ZeroBench's judge prompt with an empty answer: 460 chars (Q1) -> 115, 469 (Q2) -> 118;
# with the answer "the answer is 7": 475 chars -> 119.
# Images: Q1 one 1024 x 1024; Q2 one 300 x 200 and one 2000 x 1000.
#   openai (tiles):   Q1 765;  Q2 255 + 1105 = 1360
#   anthropic (area): Q1 1398 (1048576 / 750 = 1398.1); Q2 80 + 1599 = 1679
#   google (tiles):   Q1 1032; Q2 258 + 1548 = 1806
# So the prompts: openai 799 / 1396, anthropic 1432 / 1715, google 1066 / 1842.
MODELS = ("openai/sim-0.5", "anthropic/sim-0.5", "google/sim-0.5")
JUDGE = "openai/sim-0.9"


@pytest.fixture(scope="module")
def tiny_zerobench(tmp_path_factory) -> str:
    """Two ZeroBench main questions in the upstream schema, saved with save_to_disk."""
    from datasets import Dataset, DatasetDict

    from evalfleet.benchmarks.zerobench.dataset import upstream_features

    def row(qid, text, answer, images):
        return {
            "question_id": qid,
            "question_text": text,
            "question_images_decoded": [{"bytes": b, "path": None} for b in images],
            "question_images": [f"{qid}_{i}.png" for i in range(len(images))],
            "question_answer": answer,
            "image_attribution": "test",
        }

    features = upstream_features()
    rows = [
        row("1", Q1, "7", [png(1024, 1024)]),
        row("2", Q2, "second", [png(300, 200), png(2000, 1000)]),
    ]
    path = tmp_path_factory.mktemp("tiny") / "zerobench"
    DatasetDict({"zerobench": Dataset.from_list(rows, features=features)}).save_to_disk(str(path))
    return str(path)


def run_args(dataset: str, store: Path, run_id: str, *extra: str) -> list[str]:
    models = [arg for model in MODELS for arg in ("-m", model)]
    return [
        "run",
        *models,
        "-b",
        "zerobench",
        "--epochs",
        "1",  # zerobench-paper: the greedy epoch and one sampled: 2 epochs
        "--judge-model",
        JUDGE,
        "--dataset-path",
        dataset,
        "--simulator-url",
        SIM,
        "--store",
        str(store),
        "--run-id",
        run_id,
        *extra,
    ]


def snapshot(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def printed_tables(out: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """(section, model, benchmark) -> column -> cell, merging the chunks each table is split
    into to fit 120 columns."""
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    section, header = "", None
    for line in out.splitlines():
        if line in ("answers", "judgements"):
            section, header = line, None
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif not cells[0].startswith(":-"):
                row = dict(zip(header, cells, strict=True))
                key = (section, row.pop("model"), row.pop("benchmark"))
                rows.setdefault(key, {}).update(row)
        else:
            header = None
    return rows


def cells(items, stored, to_request, tokens_in, tokens_out, per_item, source, cost, low, high):
    return {
        "items": str(items),
        "stored": str(stored),
        "to_request": str(to_request),
        "input_tokens": str(tokens_in),
        "output_tokens": str(tokens_out),
        "output_per_item": str(per_item),
        "output_source": source,
        "reasons": "no",
        "batch": "no",
        "cost_usd": cost,
        "low_cost_usd": low,
        "high_cost_usd": high,
    }


def test_estimate_of_a_new_run_prints_exact_numbers_and_writes_nothing(
    capsys, tiny_zerobench, tmp_path
):
    store = tmp_path / "runs"
    code = main(run_args(tiny_zerobench, store, "est1", "--estimate"))
    out = capsys.readouterr().out
    assert code == 0
    assert not store.exists()  # not even the store's directory
    rows = printed_tables(out)
    # Simulated models cost $1 / $4 per million input / output tokens; nothing is stored, so
    # every answer is expected to be ZeroBench's typical answer, 32 output tokens (max_tokens
    # 16000), and every judgement the judge's typical reply, 2 (its max_tokens 1024). 2
    # questions x 2 epochs per model.
    assert rows == {
        # 2 x (799 + 1396) = 4390 in, 128 out: (4390 + 512) / 1e6 = 0.004902, low the same;
        # high 4 x 16000 out: (4390 + 256000) / 1e6 = 0.26039
        ("answers", "openai/sim-0.5", "zerobench"): cells(
            4, 0, 4, 4390, 128, 32, "typical", "0.0049", "0.0049", "0.2604"
        ),
        # 2 x (1432 + 1715) = 6294: 0.006806; 0.262294
        ("answers", "anthropic/sim-0.5", "zerobench"): cells(
            4, 0, 4, 6294, 128, 32, "typical", "0.0068", "0.0068", "0.2623"
        ),
        # 2 x (1066 + 1842) = 5816: 0.006328; 0.261816
        ("answers", "google/sim-0.5", "zerobench"): cells(
            4, 0, 4, 5816, 128, 32, "typical", "0.0063", "0.0063", "0.2618"
        ),
        # every answer may break the format: 12 judgements, each the grader prompt (115 or
        # 118) plus the answer's expected 32 tokens: 3 x 2 x (147 + 150) = 1782 in, 24 out:
        # (1782 + 96) / 1e6 = 0.001878; high 12 x 1024: (1782 + 49152) / 1e6 = 0.050934; low
        # 0: ZeroBench's judge reads only answers whose format broke, none of them is sure
        ("judgements", JUDGE, "zerobench"): cells(
            12, 0, 12, 1782, 24, 2, "typical", "0.0019", "0.0000", "0.0509"
        ),
    }
    assert (
        "total: 24 requests, 18282 input tokens, 408 output tokens: expected $0.019914, "
        "low $0.018036 (every answer as short as the benchmark's typical answer), "
        "high $0.835434 (every request using its whole output budget)"
    ) in out
    assert "already stored: 0 items, not requested again and not counted" in out


def record(item, response, output, reasoning, error=None) -> bytes:
    key = item.key
    return json.dumps(
        {
            "record_version": 2,
            "stage": key.stage,
            "model": key.model,
            "benchmark": key.benchmark,
            "sample_id": key.sample_id,
            "epoch": key.epoch,
            "request_hash": item.request_hash,
            "response": response,
            "usage": None if error else {"output_tokens": output, "reasoning_tokens": reasoning},
            "cost_usd": 0.0,
            "error": error,
        }
    ).encode()


def write_stored_work(store_url: str, dataset: str, run_id: str) -> None:
    """Some of the run's records, and an earlier run's results in the same store:

    - openai/sim-0.5 answered Q1 in both epochs, unformatted ("the answer is 7"), 200 output
      tokens of which 50 reasoning; the judge already graded epoch 0 (40 output tokens);
    - anthropic/sim-0.5 answered Q1 epoch 0 in braces (no judgement wanted), 120 tokens;
    - google/sim-0.5's Q2 epoch 1 failed for good (asked again unless --no-retry-errors);
    - run "old" (aggregated) holds google/sim-0.5's answers: 4, 1 of them failed, 900 output
      tokens with 300 reasoning; and 2 judgements by openai/sim-0.9 of 60 output tokens.
    """
    from evalfleet.cli.main import build_parser
    from evalfleet.cli.run import request_from_args
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.items import answer_items, judge_item
    from evalfleet.storage import layout, open_store

    args = build_parser().parse_args(run_args(dataset, Path(store_url), run_id))
    prepared = resolve(request_from_args(args))
    store = open_store(store_url)
    items = {(i.key.model, i.key.sample_id, i.key.epoch): i for i in answer_items(prepared)}
    unformatted = "the answer is 7"
    for epoch in (0, 1):
        item = items[("openai/sim-0.5", "1", epoch)]
        store.put(item.store_key, record(item, unformatted, 200, 50))
    first = items[("openai/sim-0.5", "1", 0)]
    judge = prepared.request.judge_model
    judgement, _ = judge_item(prepared, judge, first.key, first.store_key, unformatted)
    store.put(judgement.store_key, record(judgement, "{7}", 40, 0))
    item = items[("anthropic/sim-0.5", "1", 0)]
    store.put(item.store_key, record(item, "so {7}", 120, 0))
    item = items[("google/sim-0.5", "2", 1)]
    store.put(item.failure_key(1), record(item, None, 0, 0, error={"type": "server_error"}))

    manifest = {
        "manifest_version": 2,
        "run_id": "old",
        "request": {"judge_model": JUDGE},
        "identity": {"models": ["google/sim-0.5"], "judge_model": JUDGE, "benchmarks": {}},
        "datasets": {},
    }
    store.put(layout.manifest_key("old"), json.dumps(manifest).encode())
    store.put(layout.latest_results_key("old"), json.dumps({"version": "v-000000000001"}).encode())
    usage = pd.DataFrame(
        [
            {
                "model": "google/sim-0.5",
                "benchmark": "zerobench",
                "answers": 4,
                "errors": 1,
                "output_tokens": 900,
                "reasoning_tokens": 300,
                "judgements": 2,
                "judge_errors": 0,
                "judge_output_tokens": 60,
            }
        ]
    )
    buffer = io.BytesIO()
    usage.to_parquet(buffer, index=False)
    store.put(layout.results_key("old", "v-000000000001", "usage.parquet"), buffer.getvalue())


def test_estimate_of_a_resumed_run_measures_stored_records_and_skips_them(
    capsys, tiny_zerobench, tmp_path
):
    store = tmp_path / "runs"
    write_stored_work(str(store), tiny_zerobench, "est2")
    before = snapshot(store)
    code = main(run_args(tiny_zerobench, store, "est2", "--estimate"))
    out = capsys.readouterr().out
    assert code == 0
    assert snapshot(store) == before
    rows = printed_tables(out)
    assert rows == {
        # Q1 stored twice; Q2 twice to request at the measured mean of 200:
        # 2 x 1396 = 2792 in, 400 out: (2792 + 1600) / 1e6; at most (2792 + 128000) / 1e6
        # low: each at most ZeroBench's typical 32: (2792 + 2 x 32 x 4) / 1e6 = 0.003048
        ("answers", "openai/sim-0.5", "zerobench"): cells(
            4, 2, 2, 2792, 400, 200, "measured", "0.0044", "0.0030", "0.1308"
        ),
        # Q1 epoch 0 stored; Q1 epoch 1 and Q2 twice at 120: 1432 + 2 x 1715 = 4862 in,
        # 360 out: 0.006302; at most (4862 + 192000) / 1e6 = 0.196862
        # low (4862 + 3 x 32 x 4) / 1e6 = 0.005246
        ("answers", "anthropic/sim-0.5", "zerobench"): cells(
            4, 1, 3, 4862, 360, 120, "measured", "0.0063", "0.0052", "0.1969"
        ),
        # the failed answer is asked again; "old" gives 900 / 3 = 300 per answer:
        # 5816 in, 1200 out: (5816 + 4800) / 1e6 = 0.010616; at most 0.261816
        # low (5816 + 4 x 32 x 4) / 1e6 = 0.006328
        ("answers", "google/sim-0.5", "zerobench"): cells(
            4, 0, 4, 5816, 1200, 300, "measured", "0.0106", "0.0063", "0.2618"
        ),
        # judge output measured: (40 + 60) / 3 = 33.3 -> 33 per judgement.
        # Stored: openai's Q1 epoch 0 judgement. To request: openai's Q1 epoch 1, graded as
        # stored (119); then one per answer to request, the empty grader prompt plus the
        # answer's visible length (measured output minus reasoning): openai 2 x (118 + 150),
        # anthropic (115 + 120) + 2 x (118 + 120), google 2 x (115 + 200) + 2 x (118 + 200)
        # = 119 + 536 + 711 + 1266 = 2632 in, 10 x 33 = 330 out: (2632 + 1320) / 1e6
        # = 0.003952; high 10 x 1024: (2632 + 40960) / 1e6 = 0.043592; low: only the one
        # sure to be asked, of the stored answer, at the judge's typical reply of 2 tokens:
        # (119 + 2 x 4) / 1e6 = 0.000127
        ("judgements", JUDGE, "zerobench"): cells(
            11, 1, 10, 2632, 330, 33, "measured", "0.0040", "0.0001", "0.0436"
        ),
    }
    assert (
        "total: 19 requests, 16102 input tokens, 2290 output tokens: expected $0.025262, "
        "low $0.014749 (every answer as short as the benchmark's typical answer), "
        "high $0.633062 (every request using its whole output budget)"
    ) in out
    assert "already stored: 4 items, not requested again and not counted" in out


def test_estimate_keeps_terminal_errors_with_no_retry_errors(tiny_zerobench, tmp_path):
    from evalfleet.cli.main import build_parser
    from evalfleet.cli.run import request_from_args
    from evalfleet.engine.prepare.estimate import estimate_run
    from evalfleet.engine.prepare.resolve import resolve

    store = tmp_path / "runs"
    write_stored_work(str(store), tiny_zerobench, "est3")
    args = build_parser().parse_args(run_args(tiny_zerobench, store, "est3"))
    rows = estimate_run(resolve(request_from_args(args)), retry_errors=False)
    google = next(r for r in rows if r["model"] == "google/sim-0.5")
    # the failed Q2 epoch 1 is kept: Q1 twice and Q2 once: 2 x 1066 + 1842 = 3974 in, 900 out
    assert google == {
        "model": "google/sim-0.5",
        "benchmark": "zerobench",
        "stage": "answer",
        "items": 4,
        "stored": 1,
        "to_request": 3,
        "input_tokens": 3974,
        "output_tokens": 900,
        "output_per_item": 300,
        "output_source": "measured",
        "reasons": "no",
        "batch": "no",
        "cost_usd": 0.007574,  # (3974 + 3600) / 1e6
        "low_cost_usd": 0.004358,  # (3974 + 3 x 32 x 4) / 1e6
        "high_cost_usd": 0.195974,  # (3974 + 3 x 16000 x 4) / 1e6
    }
    judge = next(r for r in rows if r["stage"] == "judge")
    # google's placeholders: 2 x (115 + 200) + (118 + 200) = 948 instead of 1266
    assert (judge["to_request"], judge["input_tokens"]) == (9, 2632 - 1266 + 948)


def estimate_rows(dataset: str, store: Path, run_id: str, *extra: str) -> list[dict]:
    from evalfleet.cli.main import build_parser
    from evalfleet.cli.run import request_from_args
    from evalfleet.engine.prepare.estimate import estimate_run
    from evalfleet.engine.prepare.resolve import resolve

    args = build_parser().parse_args(run_args(dataset, store, run_id, *extra))
    return estimate_run(resolve(request_from_args(args)))


def test_estimate_in_batch_mode_is_at_the_batch_price(tiny_zerobench, tmp_path):
    online = estimate_rows(tiny_zerobench, tmp_path / "runs", "est4")
    batch = estimate_rows(tiny_zerobench, tmp_path / "runs", "est4", "--batch")
    figures = ("cost_usd", "low_cost_usd", "high_cost_usd")
    assert [r["batch"] for r in online] == ["no"] * 4
    assert [r["batch"] for r in batch] == ["yes"] * 4
    # every price of a simulated model's batch call is half the online one (0.5, the default)
    for on, off in zip(online, batch, strict=True):
        assert {k: v for k, v in off.items() if k not in (*figures, "batch")} == {
            k: v for k, v in on.items() if k not in (*figures, "batch")
        }
        assert [off[f] for f in figures] == [pytest.approx(on[f] / 2, abs=1e-6) for f in figures]
    # openai's answers: (4390 + 512) / 2 / 1e6 and (4390 + 256000) / 2 / 1e6
    openai = batch[0]
    assert (openai["model"], openai["cost_usd"], openai["high_cost_usd"]) == (
        "openai/sim-0.5",
        0.002451,
        0.130195,
    )


def test_estimate_marks_reasoning_models(capsys, tiny_zerobench, tmp_path):
    args = run_args(tiny_zerobench, tmp_path / "runs", "est5", "-m", "openai/sim-0.5-think")
    assert main([*args, "--estimate"]) == 0
    out = capsys.readouterr().out
    rows = printed_tables(out)
    assert {key[1]: row["reasons"] for key, row in rows.items()} == {
        "openai/sim-0.5": "no",
        "anthropic/sim-0.5": "no",
        "google/sim-0.5": "no",
        "openai/sim-0.5-think": "yes",  # Responses with reasoning_effort medium
        JUDGE: "no",
    }
    assert (
        "reasons = yes: the model reasons before it answers; its reasoning tokens are not in "
        "the low figure, and its cost lies nearer the high one"
    ) in out
