"""The unknown-model hint names EVALFLEET_MODELS: the file it names when set, else how to make
one (the shipped registry may sit in site-packages, no place to edit)."""

from __future__ import annotations

import pytest

from evalfleet.core.types import ConfigError
from evalfleet.providers.registry import resolve_model


def refusal(model_id: str) -> str:
    with pytest.raises(ConfigError) as info:
        resolve_model(model_id, registry={"models": {}})
    return str(info.value)


def test_without_a_registry_of_ones_own_it_says_how_to_make_one(monkeypatch):
    monkeypatch.delenv("EVALFLEET_MODELS", raising=False)
    assert refusal("anthropic/claude-0") == (
        "unknown model 'anthropic/claude-0': add it to a copy of the shipped model registry "
        "(providers/models.yaml, see docs/models.md) and set EVALFLEET_MODELS=PATH-OF-THE-COPY "
        "(or use anthropic/sim-<accuracy> against the simulator)"
    )


def test_with_evalfleet_models_set_it_names_that_file(monkeypatch, tmp_path):
    own = tmp_path / "models.yaml"
    monkeypatch.setenv("EVALFLEET_MODELS", str(own))
    assert refusal("openai-compatible/qwen") == (
        f"unknown model 'openai-compatible/qwen': add it to the model registry EVALFLEET_MODELS "
        f"names ({own}) or pass --base-url URL (or use openai-compatible/sim-<accuracy> against "
        "the simulator)"
    )
