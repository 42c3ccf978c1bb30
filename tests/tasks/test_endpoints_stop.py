"""When a run stops asking a model, and what it says: an endpoint that failed every call is
down (check it and its key); a model whose calls were told to wait past what a call may wait
is rate limited (it is up, wait), whatever it answered before."""

from __future__ import annotations

from evalfleet.tasks.endpoints import DOWN_AFTER, Endpoints, stop_line

WAIT = "the provider asked to wait 1 h (Retry-After), until 2026-11-28 18:00 UTC: Error code: 429"


def test_a_call_failed_on_rate_limits_stops_its_model_at_once_even_after_answers():
    endpoints = Endpoints()
    assert endpoints.land("m", "ok", None, "") is False
    assert endpoints.land("m", "failed", "rate_limited", WAIT) is True
    assert endpoints.land("m", "failed", "rate_limited", "later") is False  # stopped once
    assert endpoints.down() == {"m": f"rate_limited: {WAIT}"}


def test_an_endpoint_is_down_only_after_its_first_calls_all_failed():
    endpoints = Endpoints()
    stops = [endpoints.land("m", "failed", "connection", "refused") for _ in range(DOWN_AFTER)]
    assert stops == [False] * (DOWN_AFTER - 1) + [True]
    assert endpoints.down() == {"m": "connection: refused"}
    answered = Endpoints()
    answered.land("m", "ok", None, "")
    assert not any(answered.land("m", "failed", "server_error", "") for _ in range(DOWN_AFTER))


def test_what_the_run_says_of_each():
    where = "http://127.0.0.1:9/v1"
    assert stop_line("openai/x", f"{where} (rate_limited: {WAIT})") == (
        f"openai/x at {where} kept answering 429, rate limited ({WAIT}), past what a call may "
        "wait (--max-rate-limited-seconds): it was not asked again in this run; wait until its "
        "limit resets"
    )
    assert stop_line("openai/x", f"{where} (connection: connection refused)") == (
        f"every call to openai/x at {where} (connection: connection refused) failed: it was "
        "not asked again; check that the endpoint is up and its key is right"
    )
