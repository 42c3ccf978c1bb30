"""Bad input: one clear line, exit code 2, before any request and without touching the store."""

from __future__ import annotations

import json
import os

import pytest

from evalfleet.cli.main import main
from evalfleet.storage import layout


@pytest.fixture
def store(tmp_path):
    return tmp_path / "runs"


def run_cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["run", *args])
    err = capsys.readouterr().err.strip()
    return code, err


def test_unknown_provider(capsys, store, demo_dataset):
    code, err = run_cli(capsys, "-m", "acme/model-1", "--store", str(store))
    assert code == 2
    assert err == (
        "error: unknown provider 'acme' in model 'acme/model-1': use one of "
        "openai, openai-compatible, anthropic, google"
    )
    assert not store.exists()


def test_unknown_model(capsys, store):
    code, err = run_cli(capsys, "-m", "openai/gpt-nonexistent", "--store", str(store))
    assert code == 2
    assert err == (
        "error: unknown model 'openai/gpt-nonexistent': add it to a copy of the shipped model "
        "registry (providers/models.yaml, see docs/models.md) and set "
        "EVALFLEET_MODELS=PATH-OF-THE-COPY (or use openai/sim-<accuracy> against the simulator)"
    )


@pytest.mark.parametrize("key", [None, "", "   \t"])
def test_missing_api_key(capsys, store, monkeypatch, key):
    """Unset, empty or blank (a stray `export OPENAI_API_KEY=" "`): no key, before any call."""
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    code, err = run_cli(capsys, "-m", "openai/gpt-4o-2024-11-20", "--store", str(store))
    assert code == 2
    assert err == "error: missing API key for openai/gpt-4o-2024-11-20: set OPENAI_API_KEY"


def test_no_wait_without_a_batch_is_refused(capsys, store):
    """--no-wait was ignored without --batch: the run asked every model online and waited."""
    code, err = run_cli(
        capsys, "-m", "openai/sim-0.5", "--simulator-url", "http://127.0.0.1:9", "--no-wait",
        "--store", str(store),
    )  # fmt: skip
    assert (code, err) == (
        2,
        "error: --no-wait returns once batch jobs are submitted, and this run has none: add "
        "--batch (or --batch MODEL), or drop --no-wait",
    )
    assert not store.exists()


def test_simulated_model_needs_simulator_url(capsys, store):
    code, err = run_cli(capsys, "-m", "openai/sim-0.5", "--store", str(store))
    assert code == 2
    assert "start `evalfleet simulate` and pass --simulator-url" in err


def test_unreadable_dataset_path(capsys, store, tmp_path):
    missing = tmp_path / "nope"
    code, err = run_cli(
        capsys,
        "-m",
        "openai/sim-0.5",
        "--simulator-url",
        "http://127.0.0.1:9",
        "--dataset-path",
        str(missing),
        "--store",
        str(store),
    )
    assert code == 2
    assert err.startswith("error: ") and str(missing) in err
    assert "\n" not in err
    assert not store.exists()


def test_invalid_request_values(capsys, store):
    code, err = run_cli(capsys, "-m", "openai/sim-0.5", "--epochs", "0", "--store", str(store))
    assert code == 2
    assert err == (
        "error: --epochs takes a whole number from 1 to 100, not '0' (`evalfleet run --help` "
        "lists the options)"
    )


def test_malformed_limits_exit_2(capsys, store):
    code, err = run_cli(capsys, "-m", "openai/sim-0.5", "--rpm", "openai/sim-0.5:100")
    assert code == 2
    assert err == (
        "error: --rpm takes MODEL=N, e.g. --rpm openai/gpt-4o=500 (got 'openai/sim-0.5:100')"
    )
    code, err = run_cli(capsys, "-m", "openai/sim-0.5", "--tpm", "=5")
    assert (code, err) == (2, "error: --tpm takes MODEL=N, e.g. --tpm openai/gpt-4o=500 (got '=5')")


def test_unknown_benchmark_lists_the_registry(capsys, store):
    code, err = run_cli(capsys, "-m", "openai/sim-0.5", "-b", "mmmu", "--store", str(store))
    assert code == 2
    assert err == (
        "error: invalid request: --benchmark: unknown benchmark 'mmmu': use one of "
        "zerobench, zerobench_subquestions, omnibench, rome, datbench, datbench_blind"
    )


def test_incompatible_run_id_is_refused_and_manifest_kept(capsys, store, demo_dataset):
    from evalfleet.engine.prepare.plan import plan
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.request import EvalRequest

    base = dict(
        models=["openai/sim-0.5"],
        dataset_path=demo_dataset,
        run_id="r1",
        store=str(store),
        simulator_url="http://127.0.0.1:9",
    )
    plan(resolve(EvalRequest(**base)))
    before = (store / layout.manifest_key("r1")).read_bytes()

    code, err = run_cli(
        capsys,
        "-m",
        "openai/sim-0.5",
        "--dataset-path",
        demo_dataset,
        "--run-id",
        "r1",
        "--store",
        str(store),
        "--simulator-url",
        "http://127.0.0.1:9",
        "--epochs",
        "3",
    )
    assert code == 2
    assert err == (
        "error: run id r1 already exists with a different request (zerobench decodings: "
        "6 -> 4 epochs; zerobench_subquestions decodings: 6 -> 4 epochs): resume it with the "
        "same settings, or choose a new --run-id"
    )
    assert (store / layout.manifest_key("r1")).read_bytes() == before
    decodings = json.loads(before)["identity"]["benchmarks"]["zerobench"]["decodings"]
    assert len(decodings) == 6


def test_datbench_flags_apply_to_the_blind_variant_too(tmp_path):
    from evalfleet.cli.main import build_parser
    from evalfleet.cli.run import request_from_args

    subset = tmp_path / "subset.json"
    args = build_parser().parse_args(
        ["run", "-m", "openai/sim-0.5", "-b", "datbench", "-b", "datbench_blind"]
        + ["--datbench-capabilities", "chart,math", "--subset", str(subset)]
    )
    options = request_from_args(args).benchmark_options
    expected = {"capabilities": ["chart", "math"], "subset": str(subset)}
    assert options == {"datbench": expected, "datbench_blind": expected}


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        (["-b", "datbench"], ["datbench"]),
        (["-b", "datbench_blind"], ["datbench_blind"]),
        (["-b", "datbench,zerobench"], ["datbench"]),
    ],
)
def test_datbench_flags_go_to_the_variant_the_run_names(named, expected):
    """The flags are shared; a run of one of the two gets them alone (they were also given to
    the other, and the request refused options of a benchmark it does not run)."""
    from evalfleet.cli.main import build_parser
    from evalfleet.cli.run import request_from_args

    args = build_parser().parse_args(
        ["run", "-m", "openai/sim-0.5", *named, "--datbench-capabilities", "chart,math"]
    )
    options = request_from_args(args).benchmark_options
    assert options == {name: {"capabilities": ["chart", "math"]} for name in expected}


def test_datbench_flags_without_datbench_are_refused(capsys, store):
    code, err = run_cli(
        capsys, "-m", "openai/sim-0.5", "-b", "zerobench", "--datbench-capabilities", "math",
        "--store", str(store),
    )  # fmt: skip
    assert (code, err) == (
        2,
        "error: invalid request: options given for benchmark 'datbench', which this request "
        "does not run: add datbench to the benchmarks or clear its options",
    )


def test_subset_needs_a_benchmark_that_takes_one(capsys, store):
    code, err = run_cli(capsys, "-m", "openai/sim-0.5", "--subset", "s.json")
    assert code == 2
    assert err == (
        "error: --subset applies to benchmarks that take a subset: add --benchmark datbench "
        "(and/or datbench_blind)"
    )


def test_datbench_judge_prompt_without_response_slot_fails_before_any_request(
    capsys, store, tmp_path
):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalfleet.benchmarks.datbench.demo import write_datbench_demo

    data = write_datbench_demo(tmp_path / "db")
    shard = data / "chart" / "test-00000-of-00001.parquet"
    rows = pq.read_table(shard).to_pylist()
    rows[2]["judge_prompt"] = "Is the answer right?\nRespond with exactly two lines:\nanswer: ..."

    pq.write_table(pa.Table.from_pylist(rows), shard)
    code, err = run_cli(
        capsys, "-m", "openai/sim-0.5", "-b", "datbench", "--dataset-path", str(data),
        "--simulator-url", "http://127.0.0.1:9", "--store", str(store),
    )  # fmt: skip
    assert code == 2
    assert err == (
        "error: DatBench judge row 'chart-3': its judge_prompt has no slot for the response: "
        "put {response} where it goes, or pass --datbench-judge-layout append"
    )
    assert not store.exists()


def test_up_refuses_a_bad_reevaluation_request_before_starting_anything(capsys, tmp_path):
    state = tmp_path / "stack"
    bad = tmp_path / "reevaluate.json"
    bad.write_text(json.dumps({"include": {"openai": "gpt-*"}, "epochs": 0}))
    code = main(["up", "--state-dir", str(state), "--reevaluate-request", str(bad)])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --reevaluate-request {bad}: invalid request: include.openai: Input should be "
        "a valid list; epochs: Input should be greater than or equal to 1"
    )
    missing = tmp_path / "nope.yaml"
    code = main(["up", "--state-dir", str(state), "--reevaluate-request", str(missing)])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: cannot read --reevaluate-request {missing} (FileNotFoundError): give a JSON "
        "or YAML file of the reevaluate flow's parameters"
    )
    assert not (state / "stack.json").exists()  # nothing was started


def test_batch_mode_for_a_model_the_run_does_not_ask(capsys, store, demo_dataset):
    code, err = run_cli(
        capsys,
        *("-m", "openai/sim-0.5", "--batch", "openai/sim-0.9", "--store", str(store)),
        *("--simulator-url", "http://127.0.0.1:9", "--dataset-path", demo_dataset),
    )
    assert code == 2
    assert err.endswith(
        "batch mode asked for 'openai/sim-0.9', which is not a model of this request: add it "
        "with --model, or drop it from --batch"
    )
    assert not store.exists()


def test_batch_mode_on_a_server_without_a_batch_api():
    from evalfleet.core.types import ConfigError
    from evalfleet.providers.batch import check_batch_support
    from evalfleet.providers.registry import Endpoint, resolve_model

    vllm = resolve_model(
        "openai-compatible/qwen", endpoint=Endpoint("http://127.0.0.1:9/v1", None, ("text",))
    )
    with pytest.raises(ConfigError) as refused:
        check_batch_support(vllm)
    assert str(refused.value) == (
        "model openai-compatible/qwen: batch mode is not available for openai-compatible "
        "servers (vLLM, SGLang, gateways have no batch API); run it without batch mode"
    )
    check_batch_support(resolve_model("anthropic/sim-0.5", simulator_url="http://127.0.0.1:9"))


@pytest.mark.parametrize("missing", ["--predictions", "--annotations"])
def test_score_rome_names_a_missing_file_in_one_line(capsys, tmp_path, missing):
    present = tmp_path / "present.json"
    present.write_text("[]")
    files = {"--predictions": str(present), "--annotations": str(present)}
    files[missing] = str(tmp_path / "nonexistent.json")
    code = main(["score", "rome", *[x for pair in files.items() for x in pair]])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {missing} {tmp_path / 'nonexistent.json'}: no such file: give the path of an "
        "existing file"
    )


def test_a_benchmark_command_on_a_run_that_does_not_exist(capsys, store):
    store.mkdir()
    code = main(["datbench", "select", "nosuch", "--k", "5", "--store", str(store)])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: no run 'nosuch' in local directory {store}: `evalfleet runs --store {store}` "
        "lists the runs there"
    )


def test_a_benchmark_command_on_a_run_without_results(capsys, store):
    (store / "half").mkdir(parents=True)
    manifest = {"manifest_version": 2, "identity": {}, "request": {}, "datasets": {}}
    (store / "half" / "manifest.json").write_text(json.dumps(manifest))
    code = main(["datbench", "delta", "half", "--store", str(store)])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: run half has no results in local directory {store}: run `evalfleet aggregate "
        "half` (or finish "
        "the run) first"
    )


SIM = ("-m", "openai/sim-0.5")
TWICE_MODEL = "model 'openai/sim-0.5' is named twice: name each model once"
TWICE_BENCHMARK = "benchmark 'zerobench' is named twice: name each benchmark once"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ((*SIM, *SIM, "-b", "zerobench"), TWICE_MODEL),
        ((*SIM, "-b", "zerobench", "-b", "zerobench"), TWICE_BENCHMARK),
    ],
)
def test_a_model_or_benchmark_named_twice_is_refused(capsys, store, demo_dataset, argv, says):
    """Named twice, each of its items was asked, and billed, twice (the tables counted both)."""
    code, err = run_cli(
        capsys, *argv, "--dataset-path", demo_dataset, "--store", str(store),
        "--simulator-url", "http://127.0.0.1:9",
    )  # fmt: skip
    assert (code, err) == (2, f"error: invalid request: {says}")
    assert not store.exists()


def test_a_path_that_cannot_be_written_is_one_line(capsys, tmp_path, demo_dataset):
    """A file the user names, in a folder that does not exist or that is a folder itself: the
    path and what to do, not a traceback."""
    missing = tmp_path / "nope" / "answers.jsonl"
    argv = ["simulate", "--answers-for", demo_dataset, "--benchmark", "zerobench"]
    assert main([*argv, "--answers", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"error: {missing}: no such file or folder: check the path (a file is written only "
        "into a folder that exists)\n"
    )
    assert main([*argv, "--answers", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path}: it is a folder: give a file's path\n"
    assert not missing.parent.exists()


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`evalfleet runs | head -1`: the pipe closed under the command is exit 141, as a shell
    reports it, and no traceback."""
    import subprocess
    import sys

    for n in range(3):
        (tmp_path / "runs" / f"r{n}").mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "evalfleet.cli.main",
        "runs",
        "--store",
        str(tmp_path / "runs"),
    ]
    reader, writer = os.pipe()
    os.close(reader)  # gone before the first line
    done = subprocess.run(command, stdout=writer, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(writer)
    assert (done.returncode, done.stderr) == (141, "")


ALONE = (
    "holds a user name, password or query string, which would be stored with the run and "
    "printed: give the address alone (such as http://127.0.0.1:8000/v1) and the key through "
    "its environment variable"
)


SIM_URL = ("-m", "openai/sim-0.6", "--simulator-url")
BASE_URL = ("-m", "openai-compatible/x", "--base-url")
IN_SIM = "--simulator-url: the simulator URL"
IN_BASE = "endpoints.openai-compatible/x.base_url: the base URL"


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        ((*SIM_URL, "http://u:sk-SECRET@127.0.0.1:9"), IN_SIM),
        ((*SIM_URL, "http://127.0.0.1:9/?key=sk-SECRET"), IN_SIM),
        ((*BASE_URL, "http://me:sk-SECRET@127.0.0.1:9/v1"), IN_BASE),
    ],
)
def test_a_key_written_into_a_url_is_refused_unrepeated(capsys, store, demo_dataset, argv, field):
    """The URL goes into the manifest and the run's lines: a key in it would too."""
    code, err = run_cli(capsys, *argv, "-b", "zerobench", "--dataset-path", demo_dataset,
                        "--store", str(store))  # fmt: skip
    assert (code, err) == (2, f"error: invalid request: {field} {ALONE}")
    assert "SECRET" not in err and not store.exists()


def test_a_cost_cap_over_a_model_without_a_price_is_refused(
    capsys, store, demo_dataset, tmp_path, monkeypatch
):
    """Its answers would count as free: the cap would not hold, without a word."""
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n  openai/noprice:\n    api_model: gpt-x\n")
    monkeypatch.setenv("EVALFLEET_MODELS", str(registry))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    code, err = run_cli(
        capsys, "-m", "openai/noprice", "-b", "zerobench", "--dataset-path", demo_dataset,
        "--max-cost-usd", "1", "--store", str(store),
    )  # fmt: skip
    assert (code, err) == (
        2,
        "error: --max-cost-usd cannot limit openai/noprice: it has no price, so its answers "
        f"would count as free; give its price_per_mtok in {registry}, or leave the cap out",
    )
    assert not store.exists()


def test_a_dataset_path_for_a_benchmark_not_run_is_refused(capsys, store, demo_dataset):
    """Given for omnibench in a zerobench run, it was dropped and zerobench read from the Hub."""
    code, err = run_cli(
        capsys, "-m", "openai/sim-0.5", "-b", "zerobench", "--dataset-path",
        f"omnibench={demo_dataset}", "--simulator-url", "http://127.0.0.1:9", "--store", str(store),
    )  # fmt: skip
    assert (code, err) == (
        2,
        "error: invalid request: a dataset path given for benchmark 'omnibench', which this "
        "request does not run: add omnibench to the benchmarks or drop its path",
    )
    assert not store.exists()


def test_an_empty_dataset_path_of_a_benchmark_not_run_is_dropped(demo_dataset):
    """The UI form's empty field for a benchmark not chosen is no choice."""
    from evalfleet.engine.run.request import EvalRequest

    request = EvalRequest(
        models=["openai/sim-0.5"], benchmarks=["zerobench"],
        dataset_paths={"zerobench": demo_dataset, "omnibench": ""},
    )  # fmt: skip
    assert request.dataset_paths == {"zerobench": demo_dataset}


def test_drift_on_a_folder_without_results_writes_nothing(capsys, tmp_path):
    """A typo in --store: one line, and no leaderboard/drift.csv made in that folder."""
    where = tmp_path / "not-a-store"
    assert main(["drift", "--store", str(where)]) == 2
    assert capsys.readouterr().err == (
        f"error: no run in local directory {where} has results yet: run `evalfleet run` "
        "first, or give the store that holds them (--store)\n"
    )
    assert not where.exists()


def test_a_demo_with_a_bad_store_writes_nothing_first(capsys, tmp_path, monkeypatch):
    """It wrote ./demo-data and started a simulator before the store was refused."""
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--store", "ftp://x"]) == 2
    assert capsys.readouterr().err == (
        "error: unsupported store URL scheme 'ftp' in 'ftp://x': use a directory path, "
        "file:///absolute/path or s3://bucket/prefix\n"
    )
    assert list(tmp_path.iterdir()) == []
