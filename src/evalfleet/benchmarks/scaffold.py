"""`evalfleet new benchmark NAME`: a benchmark package of its own, ready to install.

The folder holds a pyproject declaring the entry point in the `evalfleet.benchmarks` group,
the benchmark module (local JSONL data, no Hub fields), a tiny dataset whose `answer` column
is the answer key, and a test. Nothing existing is ever overwritten."""

from __future__ import annotations

import importlib.util
import keyword
import sys
from pathlib import Path

from evalfleet.benchmarks.registry import BUILTIN
from evalfleet.core.types import ConfigError

PYPROJECT = """[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["evalfleet"]

[project.entry-points."evalfleet.benchmarks"]
{name} = "{name}.benchmark:BENCHMARK"

[build-system]
requires = ["uv_build>=0.8,<0.14"]
build-backend = "uv_build"
"""

MODULE = '''"""{name}: a benchmark package of its own (scaffolded by `evalfleet new benchmark`)."""

import hashlib
import json
import re
from pathlib import Path

from evalfleet.benchmarks.interface import Benchmark, LoadedData, MetricRow
from evalfleet.core.types import Part, Sample, Score

DATA = Path(__file__).with_name("data.jsonl")
TEMPLATE = "Final Answer: {{answer}}"


class {cls}(Benchmark):
    name = "{name}"
    description = "{name}: questions from a local JSONL file (id, question, answer)"
    scorings = ("exact",)
    typical_answer_tokens = 20

    def load(self, path, options, limit):
        source = Path(path) if path else DATA
        rows = [json.loads(line) for line in source.read_text().splitlines() if line]
        samples = [
            Sample(
                id=str(row["id"]),
                parts=[Part.of_text(f"{{row['question']}} End with 'Final Answer: <answer>'.")],
                target=str(row["answer"]),
            )
            for row in rows[:limit]
        ]
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        return LoadedData(samples=samples, revision=f"sha256:{{digest}}", source=str(source))

    def score(self, sample, response, options):
        found = re.findall(r"Final Answer:\\s*(\\S+)", response)
        answer = found[-1] if found else None
        correct = answer == sample.target
        return [Score("exact", answer, correct, float(correct))]

    def metrics(self, scored, samples, protocol, epochs):
        values = [item.value for item in scored]
        return [MetricRow("accuracy", sum(values) / len(values) if values else None, n=len(values))]

    def answer_key(self, sample, options):
        prompt = sample.first_text()
        return [
            {{
                "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                "target": sample.target,
                "template": TEMPLATE,
            }}
        ]


BENCHMARK = {cls}()
'''

DATA = """{"id": "q1", "question": "What is 2 + 3?", "answer": "5"}
{"id": "q2", "question": "What is 7 - 4?", "answer": "3"}
{"id": "q3", "question": "What is 6 * 2?", "answer": "12"}
"""

TEST = """from {name}.benchmark import BENCHMARK


def test_loads_and_scores() -> None:
    data = BENCHMARK.load(None, BENCHMARK.options(), None)
    assert [s.target for s in data.samples] == ["5", "3", "12"]
    assert BENCHMARK.score(data.samples[0], "Final Answer: 5", BENCHMARK.options())[0].correct
"""


MAX_NAME = 64


def check_package_name(name: str) -> str:
    """A name that makes an importable package of its own: ASCII letters, digits and '_' (a
    distribution's name too), not a Python keyword, and not a module this environment already
    has (the package would hide it, or `make plugin` would install over it: `evalfleet`, `os`,
    `datasets`)."""
    shown = f"'{name[:30]}...'" if len(name) > 30 else f"'{name}'"
    if not (name.isascii() and name.isidentifier()) or len(name) > MAX_NAME:
        raise ConfigError(
            f"benchmark name {shown} is not a Python name of at most {MAX_NAME} ASCII letters, "
            "digits and '_' (not starting with a digit): choose one such as my_bench"
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in ("None", "True"):
        raise ConfigError(f"benchmark name {shown} is a Python keyword: choose another")
    if name in sys.stdlib_module_names or importlib.util.find_spec(name) is not None:
        raise ConfigError(
            f"benchmark name {shown} is a module this Python already has: choose another "
            "(the new package would hide it)"
        )
    return name


def write_scaffold(name: str, parent: Path) -> Path:
    """Write the package folder `parent/NAME` and return it; ConfigError (one line) when the
    name is not an identifier, is a shipped benchmark's, or the folder exists."""
    check_package_name(name)
    if name in {b.name for b in BUILTIN}:
        raise ConfigError(f"benchmark name '{name}' is a shipped benchmark's: choose another")
    folder = parent / name
    if folder.exists():
        raise ConfigError(f"{folder} already exists: choose another name or --dir")
    cls = "".join(part.capitalize() for part in name.split("_")) or "Bench"
    package = folder / "src" / name
    package.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(PYPROJECT.format(name=name))
    (package / "__init__.py").write_text("")
    (package / "benchmark.py").write_text(MODULE.format(name=name, cls=cls))
    (package / "data.jsonl").write_text(DATA)
    (folder / "tests").mkdir()
    (folder / "tests" / "test_benchmark.py").write_text(TEST.format(name=name))
    return folder
