"""What the Prefect UI at the address `evalfleet up` prints shows of the run forms: every
field description is rendered as Markdown there, so each must read the same rendered (no
`<accuracy>` taken for an HTML tag, no `*/sim-*` for emphasis); the model list is a
drop-down of the registry's models, or any provider/model typed in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from markdown_it import MarkdownIt

from evalfleet.providers.registry import load_registry

MARKDOWN = MarkdownIt("commonmark").enable("strikethrough")  # what the UI's renderer follows


def shown(text: str) -> str:
    """The words a Markdown renderer shows of `text` (code spans without their backticks)."""
    words = []
    for block in MARKDOWN.parse(text):
        for token in block.children or []:
            if token.type in ("text", "code_inline"):
                words.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                words.append(" ")
    return " ".join("".join(words).split())


def descriptions(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield path, value
            else:
                yield from descriptions(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from descriptions(value, f"{path}/{index}")


@pytest.fixture(scope="module")
def forms() -> dict[str, dict]:
    from evalfleet.deployments.serve import build_deployments

    return {d.name: d._parameter_openapi_schema.model_dump() for d in build_deployments()}


def test_the_renderer_check_sees_lost_words():
    assert shown("or provider/sim-<accuracy> against") == "or provider/sim- against"
    assert shown("for */sim-* models") == "for /sim- models"
    assert shown("where `evalfleet simulate` listens, '*': any run") == (
        "where evalfleet simulate listens, '*': any run"
    )


def test_every_description_of_every_form_shows_all_its_words(forms):
    lost = [
        (name, path, text)
        for name, form in forms.items()
        for path, text in descriptions(form)
        if shown(text) != " ".join(text.replace("`", "").split())
    ]
    assert lost == []
    models = forms["evaluate"]["definitions"]["EvalRequest"]["properties"]["models"]
    assert "a simulated one such as openai/sim-0.7 (its accuracy after sim-)" in shown(
        models["description"]
    )
    judge = forms["judge"]["properties"]["judge"]["description"]
    assert shown(judge).endswith("a simulated one such as anthropic/sim-0.9 against the simulator")


def test_models_are_a_drop_down_of_the_registry_or_any_typed_in(forms):
    """Two tabs on the list (an item that is a choice of two is drawn as a JSON editor)."""
    from prefect.utilities.schema_tools import validate

    form = forms["evaluate"]
    models = form["definitions"]["EvalRequest"]["properties"]["models"]
    registered, typed = models["anyOf"]
    assert (registered["title"], registered["type"], typed["title"], typed["type"]) == (
        "registered",
        "array",
        "provider/model",
        "array",
    )
    assert registered["items"]["enum"] == [
        *sorted(load_registry()["models"]),
        "openai/sim-0.3",
        "openai/sim-0.7",
        "anthropic/sim-0.6",
        "google/sim-0.5",
    ]
    assert "anthropic/claude-sonnet-4-6" in registered["items"]["enum"]
    assert typed["items"]["type"] == "string" and "enum" not in typed["items"]

    def errors(given: list[str]) -> list[str]:
        return [e.json_path for e in validate({"request": {"models": given}}, form)]

    assert errors(["openai/sim-0.3", "anthropic/claude-sonnet-4-6"]) == []
    assert errors(["openai-compatible/my-model", "openai/sim-0.42"]) == []
    assert errors(["no-provider"]) == ["$.request.models"]
    assert errors([]) == ["$.request.models"]
