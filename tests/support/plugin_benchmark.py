"""Benchmark packages of their own, installed for a test as a user installs one.

`plugin-tally` counts letters in words. Its dataset is a JSONL file in a schema the package
defines (`uid`, `prompt_text`, `gold`, `kind`); it has one option (the answer format asked
for), a scorer, a metric set and the simulator's answer key. `plugin-broken` declares an entry
point whose module cannot be imported. Each is a pyproject.toml declaring its entry point in
the `evalfleet.benchmarks` group, built and installed by uv into a folder of their own
(`uv pip install --target`), which a subprocess finds through PYTHONPATH: the checkout's
.venv is never changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TALLY = "plugin-tally"
BROKEN = "plugin-broken"

PYPROJECT = """
[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"

[project.entry-points."evalfleet.benchmarks"]
{benchmark} = "{module}:{obj}"

[build-system]
requires = ["uv_build>=0.8,<0.14"]
build-backend = "uv_build"
"""

TALLY_MODULE = '''
"""Letters counted in words: a benchmark from a package of its own."""

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import Field

from evalfleet.benchmarks.interface import Benchmark, BenchmarkOptions, LoadedData, MetricRow
from evalfleet.core.types import Part, Sample, Score

FORMATS = {"final": "Final Answer: {answer}", "boxed": "\\\\boxed{{{answer}}}"}
PATTERNS = {"final": r"Final Answer:\\s*(\\d+)", "boxed": r"\\\\boxed\\{(\\d+)\\}"}


class TallyOptions(BenchmarkOptions):
    answer_format: Literal["final", "boxed"] = Field(
        "final", description="how the prompt asks for the count"
    )


class Tally(Benchmark):
    name = "plugin-tally"
    description = "letters counted in words (a benchmark from a package of its own)"
    hf_path = "nobody/plugin-tally"
    revision = "v1"
    options_model = TallyOptions
    scorings = ("exact",)

    def load(self, path, options, limit):
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
        asked = FORMATS[options.answer_format].format(answer="<count>")
        samples = [
            Sample(
                id=row["uid"],
                parts=[Part.of_text(f"{row['prompt_text']} End with '{asked}'.")],
                target=str(row["gold"]),
                metadata={"kind": row["kind"]},
            )
            for row in rows[:limit]
        ]
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return LoadedData(samples=samples, revision=f"sha256:{digest}", source=str(path))

    def score(self, sample, response, options):
        found = re.findall(PATTERNS[options.answer_format], response)
        answer = found[-1] if found else None
        correct = answer == sample.target
        return [Score("exact", answer, correct, float(correct))]

    def metrics(self, scored, samples, protocol, epochs):
        values = [item.value for item in scored]
        rows = [MetricRow("accuracy", sum(values) / len(values), n=len(values))]
        for kind in sorted({s.metadata["kind"] for s in samples.values()}):
            mine = [i.value for i in scored if samples[i.sample_id].metadata["kind"] == kind]
            mean = sum(mine) / len(mine)
            rows.append(MetricRow("accuracy", mean, n=len(mine), group=f"kind={kind}"))
        return rows

    def answer_key(self, sample, options):
        prompt = sample.first_text()
        return [
            {
                "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                "target": sample.target,
                "template": FORMATS[options.answer_format].format(answer="{answer}"),
            }
        ]
'''

BROKEN_MODULE = 'raise ImportError("plugin_broken needs tally-data, which is not installed")\n'

ROWS = [
    ("w1", "banana", "a", "vowel"),
    ("w2", "mississippi", "s", "consonant"),
    ("w3", "committee", "t", "consonant"),
    ("w4", "queue", "e", "vowel"),
    ("w5", "bookkeeper", "o", "vowel"),
]


def write_dataset(path: Path) -> Path:
    """The tally dataset, in the schema the package defines: one JSON object per line."""
    lines = [
        json.dumps(
            {
                "uid": uid,
                "prompt_text": f"How many times does the letter '{letter}' occur in '{word}'?",
                "gold": word.count(letter),
                "kind": kind,
            }
        )
        for uid, word, letter, kind in ROWS
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _package(root: Path, name: str, benchmark: str, module: str, obj: str, code: str) -> Path:
    folder = root / name
    (folder / "src" / module).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        PYPROJECT.format(name=name, benchmark=benchmark, module=module, obj=obj)
    )
    (folder / "src" / module / "__init__.py").write_text(code)
    return folder


def uv() -> str:
    """The uv that `make install` used (on PATH, or bootstrapped into .bootstrap/)."""
    found = shutil.which("uv") or str(REPO / ".bootstrap" / "bin" / "uv")
    assert Path(found).exists(), "no uv: run `make install`"
    return found


def install_plugins(root: Path) -> Path:
    """Build both packages under `root` and install them into `root/site`: returns that
    folder (for PYTHONPATH)."""
    sources = [
        _package(root, "plugin-tally", TALLY, "plugin_tally", "Tally", TALLY_MODULE),
        _package(root, "plugin-broken", BROKEN, "plugin_broken", "Broken", BROKEN_MODULE),
    ]
    target = root / "site"
    done = subprocess.run(
        [uv(), "pip", "install", "--offline", "--quiet", "--python", sys.executable]
        + ["--target", str(target), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return target


def with_plugins(env: dict[str, str], site: Path) -> dict[str, str]:
    """`env` in which Python also imports from `site`."""
    paths = [str(site), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}
