"""Record keys taken apart: `parse_record_keys` over a listing gives, key for key, what
`parse_record_key` gives, each directory parsed once."""

from __future__ import annotations

from evalfleet.storage import layout
from evalfleet.storage.layout import ItemKey, StoredName

RUN = "r1"
HASH = "0123456789abcdef"


def test_parse_record_keys_takes_apart_records_and_leaves_out_the_rest():
    keys = [
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/7/0.{HASH}.json",
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/7/1.{HASH}.failed-1700000000123.json",
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/7/.tmp-1234",  # a temp file
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/7/2.{HASH.upper()}.json",  # not hex
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/7/x.{HASH}.json",  # no epoch
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/7/3.{HASH}.json.bak",
        f"{RUN}/completions/openai%2Fgpt-4o/zerobench/a%2Fb/12.abc.json",
        f"{RUN}/completions/m/zerobench/0.{HASH}.json",  # a directory short
        f"{RUN}/judgements/openai%2Fjudge/m/zerobench/7/4.{HASH}.json",
        f"{RUN}/judgements/openai%2Fjudge/m/zerobench/7/4.{HASH}.failed-9.json",
        f"{RUN}/judgements/m/zerobench/7/4.{HASH}.json",  # no judge directory
        f"r10/completions/m/zerobench/7/0.{HASH}.json",  # another run
        f"{RUN}/manifest.json",
        "loose.json",
    ]
    answer = ItemKey.answer("openai/gpt-4o", "zerobench", "7", 0)
    judged = ItemKey.answer("m", "zerobench", "7", 4).judged_by("openai/judge")
    assert layout.parse_record_keys(RUN, keys) == [
        StoredName(answer, HASH, False, keys[0]),
        StoredName(answer._replace(epoch=1), HASH, True, keys[1]),
        StoredName(ItemKey.answer("openai/gpt-4o", "zerobench", "a/b", 12), "abc", False, keys[6]),
        StoredName(judged, HASH, False, keys[8]),
        StoredName(judged, HASH, True, keys[9]),
    ]
    assert [layout.parse_record_key(RUN, key) for key in keys] == [
        StoredName(answer, HASH, False, keys[0]),
        StoredName(answer._replace(epoch=1), HASH, True, keys[1]),
        *[None] * 4,
        StoredName(ItemKey.answer("openai/gpt-4o", "zerobench", "a/b", 12), "abc", False, keys[6]),
        None,
        StoredName(judged, HASH, False, keys[8]),
        StoredName(judged, HASH, True, keys[9]),
        *[None] * 4,
    ]


def test_parse_record_keys_of_directories_that_come_back_again():
    """Keys need not come grouped by directory: each is parsed in its own directory."""
    a, b = "m/zerobench/1", "m/zerobench/2"
    keys = [f"{RUN}/completions/{d}/{e}.{HASH}.json" for d, e in ((a, 0), (b, 0), (a, 1))]
    assert [n.item.sample_id for n in layout.parse_record_keys(RUN, keys)] == ["1", "2", "1"]
    assert [n.item.epoch for n in layout.parse_record_keys(RUN, keys)] == [0, 0, 1]


def test_a_record_key_round_trips():
    item = ItemKey.answer("vllm/Qwen 2.5?", "zerobench", "../s", 3).judged_by("a/j")
    ok = layout.record_key(RUN, item, HASH + "ffff")
    failed = layout.failure_key(RUN, item, HASH, 42)
    assert layout.parse_record_keys(RUN, [ok, failed]) == [
        StoredName(item, HASH, False, ok),
        StoredName(item, HASH, True, failed),
    ]
