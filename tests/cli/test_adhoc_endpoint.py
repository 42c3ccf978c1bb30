"""Ad-hoc OpenAI-compatible endpoints: `evalfleet run -m openai-compatible/NAME --base-url URL`
evaluates a server (vLLM, SGLang, a gateway) with no registry entry. What the server's
GET /v1/models says (vLLM's `max_model_len`, a gateway's `input_modalities`) sets the output
budget and the modalities; flags fill in where it says nothing; every mistake is one line
before any request. Also: the simulator's Gemini-shaped model listing at /v1/models.

Everything goes over HTTP to a real simulator process, through the real CLI and SDKs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from google import genai
from google.genai import types as genai_types

from evalfleet.cli.main import build_parser, main
from evalfleet.cli.run import request_from_args
from evalfleet.core.types import ConfigError
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.simulator.answering import prompt_sha256
from evalfleet.simulator.process import SimulatorHandle, start_simulator
from evalfleet.storage import layout
from tests.support.helpers import result_table, zerobench_samples

REPO = Path(__file__).resolve().parents[2]
EVALFLEET = Path(sys.executable).parent / "evalfleet"
SECRET = "sk-adhoc-endpoint-DO-NOT-LEAK-4b7e19d2"
SIMULATOR = {
    "models": ["sim-0.3", "sim-0.5", "sim-0.7"],
    "latency": {"ms": 5},
    "rules": [
        # a vLLM that states its context length, a gateway that states the input kinds
        {"match": "sim-0.7", "max_model_len": 2048, "input_modalities": ["text", "image"]},
        {"match": "sim-0.3", "input_modalities": ["text"]},
        # sim-0.5: the server says nothing beyond its id
    ],
}
GENERATION_ROUTES = {"openai.chat", "openai.responses", "anthropic.messages", "gemini.generate"}
IMAGE_REFUSED = (
    "error: model {model} cannot take the image parts that zerobench sends: drop the model "
    "or the benchmark"
)


@pytest.fixture(scope="module")
def sim(answer_key, tmp_path_factory) -> Iterator[SimulatorHandle]:
    log = tmp_path_factory.mktemp("adhoc-sim") / "sim.jsonl"
    with start_simulator(answer_key, SIMULATOR, log) as handle:
        yield handle


@pytest.fixture
def services(ray_address, prefect_api_url) -> dict[str, str]:
    """The environment of a CLI run that reuses the session's Ray and Prefect server, with no
    key for openai-compatible servers unless a test sets one."""
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    env.pop("OPENAI_COMPATIBLE_API_KEY", None)
    return env


def evalfleet_run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EVALFLEET), "run", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def zerobench_args(demo_dataset: str, store: Path, *, limit: int = 3) -> list[str]:
    return ["-b", "zerobench", "--dataset-path", demo_dataset, "--limit", str(limit)] + [
        "--protocol",
        "greedy",
        "--epochs",
        "1",
        "--store",
        str(store),
    ]


def log_since(sim: SimulatorHandle, start: int) -> list[dict]:
    return sim.read_log()[start:]


# --- 1. a run end to end --------------------------------------------------------------------


@pytest.mark.slow
def test_cli_run_caps_output_at_half_the_served_context_and_keeps_the_key_out(
    sim, services, demo_dataset, tmp_path
):
    model = "openai-compatible/sim-0.7"
    runs = tmp_path / "runs"
    base_url = sim.url + "/v1"
    before = len(sim.read_log())
    args = ["-m", model, "--base-url", base_url, "--api-key-env", "ADHOC_ENDPOINT_KEY"]
    args += zerobench_args(demo_dataset, runs) + ["--run-id", "adhoc", "--workers", "1"]
    done = evalfleet_run(args, {**services, "ADHOC_ENDPOINT_KEY": SECRET})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output

    # The result table names the model; every scoring row is its.
    assert "run adhoc — results in" in done.stdout
    assert f"| {model}" in done.stdout
    summary = result_table(runs, "adhoc", "summary_zerobench.parquet")
    assert set(summary.model) == {model}

    # One listing (preflight), then one chat call per sample, each with an output budget of
    # max(256, 2048 // 2) = 1024 tokens instead of the requested 16000.
    lines = log_since(sim, before)
    assert [x["route"] for x in lines] == ["openai.models"] + ["openai.chat"] * 3
    chats = lines[1:]
    assert [x["max_tokens"] for x in chats] == [1024, 1024, 1024]
    assert {(x["model"], x["status"], x["seed"], x["auth"]) for x in chats} == {
        ("sim-0.7", 200, 42, True)
    }
    prompts = {
        prompt_sha256(s.parts[0].text) for s in zerobench_samples("zerobench", demo_dataset)[:3]
    }
    assert {x["prompt_sha256"] for x in chats} == prompts

    # The records and the manifest: the endpoint as given, the key by name only.
    records = [json.loads(p.read_text()) for p in (runs / "adhoc" / "completions").rglob("*.json")]
    assert len(records) == 3
    assert {(r["model"], r["provider"], r["api_model"], r["error"]) for r in records} == {
        (model, "openai-compatible", "sim-0.7", None)
    }
    manifest = json.loads((runs / layout.manifest_key("adhoc")).read_text())
    assert manifest["models"] == {
        model: {
            "provider": "openai-compatible",
            "api_model": "sim-0.7",
            "base_url": base_url,
            "simulated": False,
        }
    }
    assert manifest["request"]["endpoints"] == {
        model: {"base_url": base_url, "api_key_env": "ADHOC_ENDPOINT_KEY", "modalities": None}
    }

    # The key's value is nowhere: not in any file of the store, not in the command's output.
    files = [p for p in runs.rglob("*") if p.is_file()]
    assert len(files) > 5
    assert [p for p in files if SECRET.encode() in p.read_bytes()] == []
    assert SECRET not in output
    assert SECRET not in sim.log_path.read_text()


# --- 2. one-line errors before any request --------------------------------------------------


def expect_refused(sim: SimulatorHandle, store: Path, run, expected: str) -> list[dict]:
    """`run()` -> (exit code, stdout, stderr) must be exit 2 with exactly `expected` on stderr,
    with nothing in the store and no generation request; returns what the simulator saw."""
    before = len(sim.read_log())
    code, out, err = run()
    assert (code, err.strip()) == (2, expected), out + err
    assert "\n" not in err.strip()
    assert out == ""
    assert not store.exists()
    seen = log_since(sim, before)
    assert [x for x in seen if x["route"] in GENERATION_ROUTES] == []
    return seen


def in_process(capsys, args: list[str]):
    """`evalfleet run` in this process (the checks fail before Ray or Prefect are needed;
    `in_process_env` names the session's so that none is started)."""

    def run() -> tuple[int, str, str]:
        code = main(["run", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def in_process_env(ray_address, prefect_api_url, monkeypatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api_url)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)


@pytest.mark.slow
def test_text_only_model_per_server_is_refused_on_an_image_benchmark(
    sim, in_process_env, capsys, demo_dataset, tmp_path
):
    model = "openai-compatible/sim-0.3"
    store = tmp_path / "runs"
    args = ["-m", model, "--base-url", sim.url + "/v1", *zerobench_args(demo_dataset, store)]
    seen = expect_refused(sim, store, in_process(capsys, args), IMAGE_REFUSED.format(model=model))
    assert [(x["route"], x["status"], x["model"]) for x in seen] == [("openai.models", 200, None)]


@pytest.mark.slow
def test_model_the_server_does_not_list_is_refused(
    sim, in_process_env, capsys, demo_dataset, tmp_path
):
    store = tmp_path / "runs"
    base_url = sim.url + "/v1/"  # the trailing slash is dropped
    args = ["-m", "openai-compatible/sim-0.9", "--base-url", base_url]
    expected = (
        f"error: {sim.url}/v1 serves sim-0.3, sim-0.5, sim-0.7, not sim-0.9: check the model "
        "name after openai-compatible/"
    )
    run = in_process(capsys, args + zerobench_args(demo_dataset, store))
    seen = expect_refused(sim, store, run, expected)
    assert [(x["route"], x["status"]) for x in seen] == [("openai.models", 200)]


@pytest.mark.slow
def test_unreachable_base_url_is_refused(sim, in_process_env, capsys, demo_dataset, tmp_path):
    store = tmp_path / "runs"
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    args = ["-m", "openai-compatible/sim-0.7", "--base-url", base_url]
    expected = (
        f"error: cannot list the models at {base_url}/models (APIConnectionError): check "
        "--base-url and that the server is up"
    )
    run = in_process(capsys, args + zerobench_args(demo_dataset, store))
    assert expect_refused(sim, store, run, expected) == []


@pytest.mark.slow
def test_api_key_env_naming_an_unset_variable_is_refused(
    sim, in_process_env, monkeypatch, capsys, demo_dataset, tmp_path
):
    monkeypatch.delenv("ADHOC_UNSET_KEY", raising=False)
    store = tmp_path / "runs"
    args = ["-m", "openai-compatible/sim-0.7", "--base-url", sim.url + "/v1"]
    args += ["--api-key-env", "ADHOC_UNSET_KEY", *zerobench_args(demo_dataset, store)]
    expected = "error: missing API key for openai-compatible/sim-0.7: set ADHOC_UNSET_KEY"
    # the key is read before the server is asked anything
    assert expect_refused(sim, store, in_process(capsys, args), expected) == []


# --- 3. --modalities where the server says nothing ------------------------------------------


@pytest.mark.slow
def test_modalities_flag_applies_when_the_server_says_nothing(
    sim, in_process_env, capsys, demo_dataset, tmp_path
):
    model = "openai-compatible/sim-0.5"
    store = tmp_path / "runs"
    # MODEL=VALUE forms; text only refuses ZeroBench's images before any request
    args = ["-m", model, "--base-url", f"{model}={sim.url}/v1", "--modalities", f"{model}=text"]
    run = in_process(capsys, args + zerobench_args(demo_dataset, store))
    seen = expect_refused(sim, store, run, IMAGE_REFUSED.format(model=model))
    assert [(x["route"], x["status"]) for x in seen] == [("openai.models", 200)]


def prepared_config(sim: SimulatorHandle, demo_dataset: str, store: Path, *flags: str):
    """What the preflight makes of one ad-hoc model given these flags (in this process)."""
    argv = ["run", *flags, "--base-url", sim.url + "/v1", *zerobench_args(demo_dataset, store)]
    request = request_from_args(build_parser().parse_args(argv))
    prepared = resolve(request)
    assert not store.exists()  # a preflight writes nothing
    (config,) = prepared.configs.values()
    return config


def test_modalities_come_from_the_flag_then_the_server_then_the_default(
    sim, demo_dataset, tmp_path
):
    store = tmp_path / "runs"
    before = len(sim.read_log())
    # the server says nothing: the flag is used, no output cap
    config = prepared_config(
        sim, demo_dataset, store, "-m", "openai-compatible/sim-0.5", "--modalities", "image,text"
    )
    assert config.modalities == frozenset({"text", "image"})
    assert config.extra["modalities_from"] == "request"
    assert (config.max_output_tokens, config.context_window) == (None, None)
    assert config.output_limit(16000) == 16000
    # the server says nothing and no flag: text and image
    config = prepared_config(sim, demo_dataset, store, "-m", "openai-compatible/sim-0.5")
    assert config.modalities == frozenset({"text", "image"})
    assert config.extra["modalities_from"] == "default"
    # the server says text only: used without a flag (refused on images), the flag wins
    with pytest.raises(ConfigError) as refused:
        prepared_config(sim, demo_dataset, store, "-m", "openai-compatible/sim-0.3")
    assert str(refused.value) == IMAGE_REFUSED.format(
        model="openai-compatible/sim-0.3"
    ).removeprefix("error: ")
    config = prepared_config(
        sim, demo_dataset, store, "-m", "openai-compatible/sim-0.3", "--modalities", "text,image"
    )
    assert config.modalities == frozenset({"text", "image"})
    assert config.extra["modalities_from"] == "request"
    # the server states a context length: half of it caps the output
    config = prepared_config(sim, demo_dataset, store, "-m", "openai-compatible/sim-0.7")
    assert (config.context_window, config.max_output_tokens) == (2048, 1024)
    assert config.modalities == frozenset({"text", "image"})
    assert config.extra["modalities_from"] == "server"
    assert (config.output_limit(16000), config.output_limit(500)) == (1024, 500)
    assert [x["route"] for x in log_since(sim, before)] == ["openai.models"] * 5


# --- 4. the model listings --------------------------------------------------------------------


def test_gemini_listing_at_v1_models_and_the_openai_one_unchanged(sim):
    before = len(sim.read_log())
    gemini = genai.Client(
        api_key="gemini-test-key",
        http_options=genai_types.HttpOptions(base_url=sim.url, api_version="v1", timeout=5000),
    )
    models = list(gemini.models.list())
    assert [m.name for m in models] == ["models/sim-0.3", "models/sim-0.5", "models/sim-0.7"]
    assert [(m.display_name, m.version, m.thinking) for m in models] == [
        ("sim-0.3", "001", False),
        ("sim-0.5", "001", False),
        ("sim-0.7", "001", False),
    ]
    assert {m.description for m in models} == {"evalfleet simulator model"}
    assert {(m.input_token_limit, m.output_token_limit) for m in models} == {(1048576, 65536)}
    assert {tuple(m.supported_actions) for m in models} == {("generateContent",)}
    one = gemini.models.get(model="sim-0.7")
    assert (one.name, one.display_name) == ("models/sim-0.7", "sim-0.7")

    # Without the header: the OpenAI listing, with what each rule says and nothing more.
    client = openai.OpenAI(api_key="sk-test", base_url=sim.url + "/v1", max_retries=0)
    base = {"object": "model", "created": 1767225600, "owned_by": "evalfleet-sim"}
    listed = {m.id: m.to_dict() for m in client.models.list()}
    assert listed == {
        "sim-0.3": {"id": "sim-0.3", **base, "input_modalities": ["text"]},
        "sim-0.5": {"id": "sim-0.5", **base},
        "sim-0.7": {
            "id": "sim-0.7",
            **base,
            "max_model_len": 2048,
            "input_modalities": ["text", "image"],
        },
    }
    assert client.models.retrieve("sim-0.7").to_dict() == listed["sim-0.7"]
    # the /openai/ prefix stays OpenAI even with Gemini's header
    request = urllib.request.Request(
        sim.url + "/openai/v1/models",
        headers={"x-goog-api-key": "gemini-test-key", "Authorization": "Bearer sk-test"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.loads(response.read()) == {"object": "list", "data": list(listed.values())}
    # and the /anthropic/ prefix Anthropic
    request = urllib.request.Request(
        sim.url + "/anthropic/v1/models",
        headers={"x-goog-api-key": "gemini-test-key", "x-api-key": "sk-ant-test"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        anthropic_listing = json.loads(response.read())
    assert [(m["type"], m["id"]) for m in anthropic_listing["data"]] == [
        ("model", "sim-0.3"),
        ("model", "sim-0.5"),
        ("model", "sim-0.7"),
    ]
    assert (anthropic_listing["first_id"], anthropic_listing["last_id"]) == ("sim-0.3", "sim-0.7")

    routes = [(x["route"], x["status"], x["model"]) for x in log_since(sim, before)]
    assert routes == [
        ("gemini.models", 200, None),
        ("gemini.models", 200, "sim-0.7"),
        ("openai.models", 200, None),
        ("openai.models", 200, "sim-0.7"),
        ("openai.models", 200, None),
        ("anthropic.models", 200, None),
    ]
