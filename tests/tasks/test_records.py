"""A record's decoding and usage are written field by field (not with dataclasses.asdict, whose
deep copy cost more than the record's JSON): every field is there, with its value."""

from __future__ import annotations

import dataclasses

from evalfleet.core.types import Decoding
from evalfleet.providers.types import Usage


def test_decoding_writes_every_field() -> None:
    decoding = Decoding(temperature=0.7, top_p=0.9, max_tokens=512, seed=4, reasoning_effort="low")
    assert decoding.to_dict() == {
        "temperature": 0.7,
        "top_p": 0.9,
        "max_tokens": 512,
        "seed": 4,
        "reasoning_effort": "low",
    }
    assert list(decoding.to_dict()) == [f.name for f in dataclasses.fields(Decoding)]


def test_usage_writes_every_field() -> None:
    usage = Usage(input_tokens=10, output_tokens=7, reasoning_tokens=3, cached_input_tokens=2)
    assert usage.to_dict() == {
        "input_tokens": 10,
        "output_tokens": 7,
        "reasoning_tokens": 3,
        "cached_input_tokens": 2,
    }
    # every count (`reported`, whether the answer carried usage at all, is not one)
    counts = [f.name for f in dataclasses.fields(Usage) if f.name != "reported"]
    assert list(usage.to_dict()) == counts
