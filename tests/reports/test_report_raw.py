"""The raw view's pieces on built data: media in a rebuilt body become notes, an attempt of
the ledger reads back whole, a record before the ledger has no attempts to show."""

from __future__ import annotations

import base64

from evalfleet.core.record import Attempt, Cost, Usage
from evalfleet.reports.report_raw import attempt_dict, stand_ins, without_media


def test_media_parts_become_markers_and_their_encodings_notes():
    layout = [("text", "How many?", None, 9), ("image", None, "image/png", 12345)]
    parts, notes = stand_ins(layout, "unused")
    assert [p.kind for p in parts] == ["text", "image"] and parts[0].text == "How many?"
    encoded = base64.b64encode(parts[1].data).decode()
    body = {
        "messages": [{"content": [{"url": f"data:image/png;base64,{encoded}"}, {"data": encoded}]}],
        "seed": 42,
    }
    note = "<image image/png, 12,345 bytes: part 2 of the prompt, shown above>"
    assert without_media(body, notes) == {
        "messages": [{"content": [{"url": note}, {"data": note}]}],
        "seed": 42,
    }


def test_unknown_media_is_left_out_too():
    long = "QUJD" * 100
    assert without_media({"a": long, "b": "data:audio/wav;base64,AAAA", "c": "a b"}, {}) == {
        "a": "<media: 400 characters>",
        "b": "<media: 26 characters>",
        "c": "a b",
    }


def test_without_a_layout_the_body_is_the_prompt_text():
    parts, notes = stand_ins(None, "the prompt")
    assert [(p.kind, p.text) for p in parts] == [("text", "the prompt")] and notes == {}


def test_an_attempt_reads_back_whole():
    attempt = Attempt(
        2,
        "answer",
        at="2026-01-01T00:00:01.000+00:00",
        latency_s=1.5,
        status=200,
        request_id="req_1",
        finish_reason="stop",
        usage=Usage(10, 20, 5, 2),
        cost=Cost(total=0.25),
        estimated=True,
    )
    assert attempt_dict(attempt) == {
        "number": 2,
        "outcome": "answer",
        "at": "2026-01-01T00:00:01.000+00:00",
        "latency_s": 1.5,
        "status": 200,
        "request_id": "req_1",
        "error": None,
        "finish_reason": "stop",
        "usage": {
            "input_tokens": 10,
            "output_tokens": 20,
            "reasoning_tokens": 5,
            "cached_input_tokens": 2,
        },
        "cost_usd": 0.25,
        "estimated": True,
    }
    refused = attempt_dict(Attempt(1, "server_error", status=503, message="overloaded"))
    assert (refused["usage"], refused["cost_usd"], refused["error"]) == (None, None, "overloaded")
