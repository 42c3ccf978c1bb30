"""Model and judge names are checked once, against one documented rule
(`providers.names`), before anything is written: a bad one is refused in one line naming the
character, exit 2, nothing stored."""

from __future__ import annotations

import re

import pytest

from evalfleet.cli.main import main
from evalfleet.core.types import ConfigError
from evalfleet.providers.names import MODEL_ID_PATTERN, check_model_id
from evalfleet.providers.registry import resolve_model

GOOD = [
    "openai/gpt-4o-2024-11-20",
    "openai/ft:gpt-4o-mini-2024-07-18:acme:custom:9a8b7c",
    "openai-compatible/meta-llama/Llama-3.1-8B-Instruct",
    "openai-compatible/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "google/gemini-2.5-pro@001",
    "openai/o4_mini",
    "openai/sim-0.5",
    "openai/sim-1",
    "anthropic/sim-0.6-think",
    "openai/sim-0.5-m0-bare",
]
SIMULATED_RULE = (
    "a simulated model is sim-<accuracy>[-<tag>], the accuracy a number from 0 to 1 and the "
    "tag letters, digits and - . _ (e.g. openai/sim-0.5-think)"
)
NAME_RULE = (
    "after provider/ a model name has only letters, digits and - . _ : @ /, and starts with a "
    "letter or a digit (simulated: provider/sim-<accuracy>[-<tag>])"
)
BAD = {
    "openai/sim-0.9<img src=x onerror=alert(1)>": f"has the character '<': {SIMULATED_RULE}",
    "openai/sim-0.9|x": f"has the character '|': {SIMULATED_RULE}",
    "openai/sim-0.9x": f"is not a simulated model name: {SIMULATED_RULE}",
    "openai/sim-abc": f"is not a simulated model name: {SIMULATED_RULE}",
    "openai/sim-1.5": f"has accuracy 1.5: {SIMULATED_RULE}",
    "openai/sim-2-think": f"has accuracy 2: {SIMULATED_RULE}",
    "openai/sim-0.5-th:ink": f"has the character ':': {SIMULATED_RULE}",
    "openai/gpt 4o": f"has a space: {NAME_RULE}",
    "openai/gpt-4o$(id)": f"has the character '$': {NAME_RULE}",
    "openai/a&b": f"has the character '&': {NAME_RULE}",
    'openai/a"b': f"has the character '\"': {NAME_RULE}",
    "openai/a'b": f'has the character "\'": {NAME_RULE}',
    "openai/a\nb": f"has the character '\\n': {NAME_RULE}",
    "openai/modèle": f"has the character 'è': {NAME_RULE}",
    "openai/.hidden": f"starts its name with the character '.': {NAME_RULE}",
    "openai/-x": f"starts its name with the character '-': {NAME_RULE}",
}


@pytest.mark.parametrize("model_id", GOOD)
def test_real_and_simulated_ids_pass_the_check_and_the_forms_pattern(model_id):
    assert check_model_id(model_id) == model_id
    assert re.fullmatch(MODEL_ID_PATTERN, model_id)


@pytest.mark.parametrize("model_id", sorted(BAD))
def test_anything_else_is_refused_naming_the_character(model_id):
    with pytest.raises(ConfigError) as refused:
        check_model_id(model_id, "judge")
    assert str(refused.value) == f"judge {model_id!r} {BAD[model_id]}"
    assert re.fullmatch(MODEL_ID_PATTERN, model_id) is None  # the UI form refuses it too
    with pytest.raises(ConfigError):
        resolve_model(model_id, registry={}, simulator_url="http://127.0.0.1:9")


def test_a_simulated_name_still_gives_its_api_and_thinking():
    config = resolve_model("anthropic/sim-0.6-think", simulator_url="http://127.0.0.1:9")
    assert (config.api_model, config.api, config.thinking) == (
        "sim-0.6-think",
        "messages",
        "enabled",
    )


@pytest.mark.parametrize(
    ("flag", "what", "name", "shown"),
    [
        ("-m", "--model: model", "openai/sim-0.9|x", "the character '|'"),
        ("--judge-model", "--judge-model: judge", "openai/sim-0.9<script>", "the character '<'"),
        ("--extra-judge", "--extra-judge: judge", "openai/gpt 4", "a space"),
    ],
)
def test_run_refuses_a_bad_name_before_anything_is_written(
    flag, what, name, shown, capsys, tmp_path
):
    store = tmp_path / "runs"
    args = ["run", "-m", "openai/sim-0.5", "--judge-model", "openai/sim-0.9"]
    if flag == "-m":
        args = ["run"]
    elif flag == "--judge-model":
        args = ["run", "-m", "openai/sim-0.5"]
    code = main([*args, flag, name, "--simulator-url", "http://127.0.0.1:9", "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(
        f"error: invalid request: {what} {name!r} has {shown}: "
    )
    assert not store.exists()
