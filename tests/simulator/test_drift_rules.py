"""A simulator rule can change what the provider reports of a model (its
`system_fingerprint` and returned model id) beside its accuracy: an alias that drifts."""

from __future__ import annotations

import pytest

from evalfleet.simulator.config import ConfigError, config_from_dict, resolve_profile
from evalfleet.simulator.protocol import reported

CONFIG = {
    "rules": [
        {"match": "drift*", "accuracy": 0.3, "system_fingerprint": "fp_v2"},
        {"match": "drift-b", "reported_model": "drift-b-2026-11-28"},
    ]
}


def test_rules_set_the_fingerprint_and_the_reported_model():
    config = config_from_dict(CONFIG)
    a, b, other = (resolve_profile(config, m) for m in ("drift-a", "drift-b", "steady"))
    assert (a.accuracy, a.system_fingerprint, a.reported_model) == (0.3, "fp_v2", None)
    assert (b.system_fingerprint, b.reported_model) == ("fp_v2", "drift-b-2026-11-28")
    assert (other.system_fingerprint, other.reported_model) == (None, None)

    chat = {"model": "drift-b", "system_fingerprint": "fp_evalfleet_sim", "choices": []}
    assert reported(dict(chat), b) == {
        "model": "drift-b-2026-11-28",
        "system_fingerprint": "fp_v2",
        "choices": [],
    }
    assert reported(dict(chat), other) == chat  # nothing set: the route's own
    gemini = {"modelVersion": "drift-b", "candidates": []}
    assert reported(dict(gemini), b) == {"modelVersion": "drift-b-2026-11-28", "candidates": []}
    anthropic = {"model": "drift-a", "content": []}
    assert reported(dict(anthropic), a) == anthropic  # no fingerprint field to set


def test_an_empty_fingerprint_is_refused_in_one_line():
    line = r"^invalid config: rules\.0\.system_fingerprint: String should have at least 1"
    with pytest.raises(ConfigError, match=line):
        config_from_dict({"rules": [{"match": "x", "system_fingerprint": ""}]})
