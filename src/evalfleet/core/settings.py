"""Every `EVALFLEET_*` setting, defined once: its name, what it takes (its bounds), its default
and one line of doc. Code reads a setting through it (`HEARTBEAT_S.get()`), and `check_all()`
refuses a bad value in one line (`EVALFLEET_X=abc is not ...; set it to ... or unset it`) when
the command line, a flow or the deployments start, before anything runs or is paid for.

An empty value counts as unset. docs/reference/environment.md shows the tables `markdown()`
makes (tests/core/test_settings.py holds them together). Standard library only: the
`evalfleet` executable reads settings before it decides where a command runs.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalfleet.core.types import ConfigError


class SettingError(ConfigError):
    """A setting (or a flag read the same way) with a value it does not take; one line."""


@dataclass(frozen=True)
class Kind:
    """How a value is read: `expect` says what it takes ("a whole number from 1 to 10"),
    `read` turns the text into the value or raises ValueError (a reason, or ""), and `check`
    (only when settings are checked, not on every read) looks at the machine."""

    expect: str
    read: Callable[[str], Any]
    check: Callable[[Any], None] | None = None


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(float(number))


def _text(value: Any) -> str:
    """A default as a user would type it (10, not 10.0)."""
    plain = isinstance(value, (int, float)) and not isinstance(value, bool)
    return _shown(value) if plain else str(value)


def number(
    kind: type, low: float | None, high: float | None, unit: str = "", above: bool = False
) -> Kind:
    """A finite int or float in [low, high] (`above`: low itself excluded); `unit` names what
    it counts ("seconds")."""
    noun = ("a whole number" if kind is int else "a number") + (f" of {unit}" if unit else "")
    if low is not None and high is not None and not above:
        expect = f"{noun} from {_shown(low)} to {_shown(high)}"
    else:
        parts = [] if low is None else [f"{'above' if above else 'at least'} {_shown(low)}"]
        parts += [] if high is None else [f"at most {_shown(high)}"]
        expect = f"{noun} {', '.join(parts)}".strip()

    def read(text: str) -> Any:
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            raise ValueError("") from None
        too_low = low is not None and (value <= low if above else value < low)
        if not math.isfinite(value) or too_low or (high is not None and value > high):
            raise ValueError("")
        return value

    return Kind(expect, read)


def flag_type(kind: Kind) -> Callable[[str], Any]:
    """An argparse `type` that reads a flag as a setting is read: a value it does not take is
    refused as `--flag takes <what it takes>, not 'VALUE'` (argparse names the flag)."""
    import argparse

    def parse(text: str) -> Any:
        try:
            return kind.read(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"takes {kind.expect}, not {text!r}") from None

    return parse


TRUE, FALSE = ("1", "true", "yes"), ("0", "false", "no")


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered not in TRUE + FALSE:
        raise ValueError("")
    return lowered in TRUE


BOOLEAN = Kind(f"one of {', '.join(TRUE + FALSE)} (any case)", _boolean)


def choice(*options: str) -> Kind:
    def read(text: str) -> str:
        if text.upper() not in options:
            raise ValueError("")
        return text.upper()

    return Kind(f"one of {', '.join(options)}", read)


def pattern(regex: str, expect: str) -> Kind:
    compiled = re.compile(regex)

    def read(text: str) -> str:
        if not compiled.fullmatch(text):
            raise ValueError("")
        return text

    return Kind(expect, read)


def check_http_url(text: str) -> str:
    """`text` if it is an http(s) URL with a host (and a valid port), else ValueError."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a port out of range
    except ValueError:
        raise ValueError("") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or re.search(r"\s", text):
        raise ValueError("")
    return text


HTTP_URL = Kind("an http:// or https:// URL with a host", check_http_url)


def _path(text: str) -> Path:
    return Path(text).expanduser()


def _writable_folder(path: Path) -> None:
    """A folder evalfleet can write, or make: its nearest existing parent takes a new folder
    (tried with one made and removed at once)."""
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{path} is a file")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"{path} cannot be written")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{parent} is a file")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".evalfleet-probe-", dir=parent))
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None


def _existing(kind: str) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        if not (path.is_dir() if kind == "folder" else path.is_file()):
            raise ValueError(f"no such {kind}" if not path.exists() else f"not a {kind}")
        if not os.access(path, os.R_OK):
            raise ValueError("it cannot be read")

    return check


FOLDER = Kind("a folder evalfleet can write or make", _path, _writable_folder)
EXISTING_FOLDER = Kind("an existing folder", _path, _existing("folder"))
EXISTING_FILE = Kind("a file that can be read", _path, _existing("file"))
_CRON_FIELD = r"[0-9A-Za-z*/,?#-]+"
CRON = pattern(
    rf"@(yearly|annually|monthly|weekly|daily|midnight|hourly)|{_CRON_FIELD}( +{_CRON_FIELD}){{4}}",
    "a cron schedule of five fields",
)


@dataclass(frozen=True)
class Setting:
    name: str
    kind: Kind
    default: Any  # what get() gives when unset (None: nothing)
    doc: str
    section: str  # the docs' table: "where", "how" or "tests"
    example: str = ""  # a value it takes, for the error line (default: the default)
    shown_default: str = ""  # the docs' default where it is not a value ("the checkout's ...")
    secret: bool = False  # its value is not repeated in messages

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        text = (os.environ if environ is None else environ).get(self.name, "").strip()
        return text or None

    def get(self, environ: Mapping[str, str] | None = None) -> Any:
        """The value, its default when unset; SettingError (one line) when it is not valid."""
        text = self.raw(environ)
        if text is None:
            return self.default
        try:
            return self.kind.read(text)
        except ValueError as exc:
            raise self.error(text, str(exc)) from None

    def check(self, environ: Mapping[str, str] | None = None) -> None:
        """Read it, then look at the machine (a folder that must be writable, ...)."""
        value = self.get(environ)
        text = self.raw(environ)
        if text is None or self.kind.check is None:
            return
        try:
            self.kind.check(value)
        except ValueError as exc:
            raise self.error(text, str(exc)) from None

    def error(self, text: str, why: str = "") -> SettingError:
        example = self.example or _text(self.default)
        given = f"{self.name}={'(not shown)' if self.secret else _quoted(text)}"
        return SettingError(
            f"{given} is not {self.kind.expect}{f' ({why})' if why else ''}; set it to one, "
            f"such as {example}, or unset it"
        )


def _quoted(text: str) -> str:
    shown = text if len(text) <= 200 else text[:197] + "..."  # a path is shown whole
    return shown if re.fullmatch(r"[\w./:@+~,*=-]*", shown) else repr(shown)


SECONDS = "seconds"
STORE = Setting(
    "EVALFLEET_STORE",
    pattern(r"\S(.*\S)?", "a directory or s3://bucket/prefix"),
    None,
    "the store of every command, flow and deployment when `--store` (or the `store` parameter) "
    "is not given: a directory or `s3://bucket/prefix`. `evalfleet up --store` sets it for the "
    "deployments it serves",
    "where",
    example="./runs",
    shown_default="`./runs`",
)
HOME = Setting(
    "EVALFLEET_HOME",
    FOLDER,
    "~/.evalfleet",
    "what outlives one command: the temporary Prefect server's database (`prefect-runs.db`), "
    "the logs of failed commands (`logs/`), the stack's state folder (`stack/`)",
    "where",
    example="~/.evalfleet",
    shown_default="`~/.evalfleet`",
)
STACK = Setting(
    "EVALFLEET_STACK",
    FOLDER,
    None,
    "the stack's state folder, for `up` and `down` without `--state-dir`, and where `run` and "
    "the other commands look for a running stack ([the state folder](../stack.md#the-state-"
    "folder))",
    "where",
    example="~/.evalfleet/stack",
    shown_default="`$EVALFLEET_HOME/stack`",
)
MODELS = Setting(
    "EVALFLEET_MODELS",
    EXISTING_FILE,
    None,
    "a model registry of your own, instead of the shipped one ([models](../models.md#the-model-"
    "registry))",
    "where",
    example="./models.yaml",
    shown_default="the shipped `providers/models.yaml`",
)
SIMULATOR_URL = Setting(
    "EVALFLEET_SIMULATOR_URL",
    HTTP_URL,
    None,
    "the simulator for `provider/sim-*` models when `--simulator-url` is not given (also "
    "`evalfleet score rome`'s simulated judge)",
    "where",
    example="http://127.0.0.1:8765",
)
CODE_DIR = Setting(
    "EVALFLEET_CODE_DIR",
    EXISTING_FOLDER,
    None,
    "where the flows' code is on the machines of a work pool: `deployments/prefect.yaml` pulls "
    "from it; the image sets `/app`, `evalfleet up --pool` the checkout",
    "where",
    example="/app",
)
CODE_VERSION = Setting(
    "EVALFLEET_CODE_VERSION",
    pattern(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}", "1-64 letters, digits, '.', '_', '+' or '-'"),
    None,
    "the code version a run records in its manifest and a results version in `version.json`, "
    "where there is no checkout (the image's build argument)",
    "where",
    example="v1.2.0",
    shown_default="the checkout's `git rev-parse --short=12 HEAD`",
)
FSYNC = Setting(
    "EVALFLEET_FSYNC",
    BOOLEAN,
    False,
    "on: each record and its directory entry are fsynced before the record counts (local "
    "store; set it where the workers run)",
    "how",
    example="1",
    shown_default="off",
)
HEARTBEAT_S = Setting(
    "EVALFLEET_HEARTBEAT_S",
    number(float, 1, 600, SECONDS),
    10.0,
    "seconds between a run's heartbeats in its manifest; a run three beats late elsewhere is "
    "`crashed`",
    "how",
    example="10",
)
CRASH_AFTER_S = Setting(
    "EVALFLEET_CRASH_AFTER_S",
    # above the 30 s of Prefect's own flow-run heartbeat (engine.store.heartbeat.FLOW_RUN_BEAT_S)
    number(int, 35, 86_400, SECONDS),
    90,
    "seconds without a Prefect flow-run heartbeat before the crash automation marks the flow "
    "run Crashed (flow runs beat every 30 s)",
    "how",
)
KEEP_FLOW_RUNS = Setting(
    "EVALFLEET_KEEP_FLOW_RUNS",
    number(int, 1, 1_000_000),
    10,
    "the flow runs the temporary Prefect server's database keeps (`--keep-flow-runs` wins)",
    "how",
)
NO_LAUNCHER = Setting(
    "EVALFLEET_NO_LAUNCHER",
    BOOLEAN,
    False,
    "on: run every command in your shell's process, not forked from the stack's warm launcher",
    "how",
    example="1",
    shown_default="off",
)
WORKER_PLACEMENT = Setting(
    "EVALFLEET_WORKER_PLACEMENT",
    choice("SPREAD", "DEFAULT"),
    "SPREAD",
    "the Ray scheduling strategy of the worker actors (SPREAD: over the nodes, so a node lost "
    "stops only part of a run)",
    "how",
)
SIMULATOR_API_KEY = Setting(
    "EVALFLEET_SIMULATOR_API_KEY",
    pattern(r"\S{1,200}", "1-200 characters without spaces"),
    "simulator-key",
    "the key sent to the simulator for `provider/sim-*` models",
    "how",
    secret=True,
)
BATCH_POLL_EVERY_S = Setting(
    "EVALFLEET_BATCH_POLL_EVERY_S",
    number(float, 1, 86_400, SECONDS),
    300.0,
    "the interval of the served `poll-batches` deployment",
    "how",
    example="300",
)
REEVALUATE_CRON = Setting(
    "EVALFLEET_REEVALUATE_CRON",
    CRON,
    "0 3 * * *",
    "the served `reevaluate` deployment's schedule (`evalfleet up --reevaluate-cron` sets it)",
    "how",
    example="'0 3 * * *'",
)
REEVALUATE_EVERY_S = Setting(
    "EVALFLEET_REEVALUATE_EVERY_S",
    number(float, 1, 31_536_000, SECONDS),
    None,
    "an interval instead of the cron (`--reevaluate-every`)",
    "how",
    example="86400",
)
REEVALUATE_REQUEST = Setting(
    "EVALFLEET_REEVALUATE_REQUEST",
    EXISTING_FILE,
    None,
    "a JSON or YAML file of the reevaluation's parameters (`--reevaluate-request`)",
    "how",
    example="./reevaluate.yaml",
)
RUNNER_POLL_S = Setting(
    "EVALFLEET_RUNNER_POLL_S",
    number(int, 1, 3_600, SECONDS),  # Prefect takes whole seconds here
    2,
    "how often the stack's serve process polls for flow runs to start",
    "how",
)
WORKER_POLL_S = Setting(
    "EVALFLEET_WORKER_POLL_S",
    number(float, 1, 3_600, SECONDS),
    2.0,
    "how often the stack's pool workers poll (`up --pool`)",
    "how",
    example="2",
)
SCHEDULER_LOOP_S = Setting(
    "EVALFLEET_SCHEDULER_LOOP_S",
    number(float, 1, 86_400, SECONDS),
    60.0,
    "the loop of the stack's Prefect scheduler service",
    "how",
    example="60",
)
TEST_PAUSE_AFTER_SUBMIT_S = Setting(
    "EVALFLEET_TEST_PAUSE_AFTER_SUBMIT_S",
    number(float, 0, 3_600, SECONDS),
    0.0,
    "a pause after a batch job is submitted, to kill a run there",
    "tests",
    example="60",
    shown_default="0",
)
KEEP_WORK = Setting(
    "EVALFLEET_KEEP_WORK",
    BOOLEAN,
    False,
    "on: the `perf/` scripts keep their work folders",
    "tests",
    example="1",
    shown_default="off",
)

ALL: tuple[Setting, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Setting))


def check_all(environ: Mapping[str, str] | None = None) -> None:
    """Every setting read and checked; the first bad one raises SettingError (one line)."""
    for setting in ALL:
        setting.check(environ)


def markdown(section: str) -> str:
    """The docs' table of a section's settings."""
    rows = ["| variable | default | takes | what |", "| --- | --- | --- | --- |"]
    for s in ALL:
        if s.section == section:
            default = s.shown_default or ("—" if s.default is None else f"`{_text(s.default)}`")
            rows.append(f"| `{s.name}` | {default} | {s.kind.expect} | {s.doc} |")
    return "\n".join(rows)
