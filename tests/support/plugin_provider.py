"""A package of its own that adds a benchmark AND a provider, installed as a user installs one.

`plugin-both` declares, in its pyproject.toml, the benchmark `plugin-count` (the tally
benchmark of `plugin_benchmark`, under its own name) in the group `evalfleet.benchmarks` and
the provider `myprov` in `evalfleet.providers`: it speaks the OpenAI chat wire through
evalfleet's own chat client, so it runs against the simulator without a key. `plugin-clash`
declares a provider named `openai`, which evalfleet's own already is. Both are built and
installed by uv into a folder of their own, found through PYTHONPATH (`plugin_benchmark`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.plugin_benchmark import TALLY, TALLY_MODULE, uv

COUNT = "plugin-count"
PROVIDER = "myprov"

PYPROJECT = """
[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
{entry_points}
[build-system]
requires = ["uv_build>=0.8,<0.14"]
build-backend = "uv_build"
"""

BOTH_ENTRY_POINTS = f"""
[project.entry-points."evalfleet.benchmarks"]
{COUNT} = "plugin_both:Tally"

[project.entry-points."evalfleet.providers"]
{PROVIDER} = "plugin_both:PROVIDER"
"""

PROVIDER_CODE = f'''

from evalfleet.providers.plugins import CHAT, Provider

PROVIDER = Provider(
    name="{PROVIDER}",
    clients={{"chat": CHAT}},  # the OpenAI chat wire, spoken by evalfleet's own client
    modalities={{"chat": frozenset({{"text"}})}},
    api_key_env="MYPROV_API_KEY",
    base_url="https://api.myprov.example/v1",
)
'''

CLASH_ENTRY_POINTS = """
[project.entry-points."evalfleet.providers"]
openai = "plugin_clash:PROVIDER"
"""


def _package(root: Path, name: str, entry_points: str, code: str) -> Path:
    module = name.replace("-", "_")
    folder = root / name
    (folder / "src" / module).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(PYPROJECT.format(name=name, entry_points=entry_points))
    (folder / "src" / module / "__init__.py").write_text(code)
    return folder


def install_both(root: Path) -> Path:
    """Build `plugin-both` and `plugin-clash` under `root`, install them into `root/site`
    (nothing in the checkout's .venv changes) and return that folder, for PYTHONPATH."""
    both = TALLY_MODULE.replace(f'name = "{TALLY}"', f'name = "{COUNT}"') + PROVIDER_CODE
    sources = [
        _package(root, "plugin-both", BOTH_ENTRY_POINTS, both),
        _package(root, "plugin-clash", CLASH_ENTRY_POINTS, "PROVIDER = None\n"),
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
