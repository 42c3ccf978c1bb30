"""What a model id may look like, checked once before anything is written.

A model id is `PROVIDER/NAME`. Real providers' names use letters, digits and `- . _ : @ /`
(`gpt-4o-2024-11-20`, `ft:gpt-4o-mini:org:custom:id`, `meta-llama/Llama-3.1-8B-Instruct`,
`anthropic.claude-3-5-sonnet-20240620-v1:0`, `claude-3@20240229`), starting with a letter or
a digit. A name starting `sim-` is the simulator's: `sim-<accuracy>[-<tag>]`, the accuracy a
number (`0.5`, `1`) and the tag letters, digits and `- . _` (`sim-0.5-think`, `sim-0.3-m0`).
Anything else (`|`, `<`, quotes, spaces, newlines, `$`, `&`, non-ASCII letters) is refused
in one line that names the first character that is not allowed. Every writer escapes
anyway (`evalfleet.core.escape`): this check keeps names readable, not pages safe.
"""

from __future__ import annotations

import re

from evalfleet.core.types import ConfigError

NAME_CHARS = "letters, digits and - . _ : @ /"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]*")
SIMULATED = re.compile(r"sim-(\d+(?:\.\d+)?)(?:-([A-Za-z0-9][A-Za-z0-9._-]*))?")
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@/-")
_TAG_ALLOWED = _ALLOWED - {":", "@", "/"}
# For forms (JSON schema `pattern`, JavaScript syntax): the same rule as `check_model_id`.
_NAME_PATTERN = (  # an accuracy from 0 to 1: 0, 0.x, 1, 1.0 (leading zeros as float() reads)
    r"(sim-(0*(0(\.\d+)?|1(\.0+)?))(-[A-Za-z0-9][A-Za-z0-9._-]*)?"
    r"|(?!sim-)[A-Za-z0-9][A-Za-z0-9._:@/-]*)$"
)


def model_id_pattern(providers: tuple[str, ...]) -> str:
    """The form's pattern for model ids of these providers (names are lowercase, digits, -)."""
    return "^(" + "|".join(providers) + ")/" + _NAME_PATTERN


MODEL_ID_PATTERN = model_id_pattern(("openai", "openai-compatible", "anthropic", "google"))


def check_model_id(model_id: str, what: str = "model") -> str:
    """`model_id` if its name follows the rule above; else a one-line ConfigError naming
    the first character that breaks it. The provider part is checked where it is resolved
    (`evalfleet.providers.registry.split_model_id`), which names the known ones."""
    if not isinstance(model_id, str) or not model_id:
        raise ConfigError(f"{what} name is empty: name it provider/model, e.g. openai/gpt-4o")
    _, sep, name = model_id.partition("/")
    if not sep or not name:
        raise ConfigError(
            f"{what} {model_id!r} must be named provider/model, e.g. openai/gpt-4o-2024-11-20"
        )
    if name.startswith("sim-"):
        return _check_simulated(model_id, name, what)
    bad = _first_bad(name, _ALLOWED)
    if bad is not None:
        raise ConfigError(f"{what} {model_id!r} has {_show(bad)}: {_rule()}")
    if not NAME.fullmatch(name):
        raise ConfigError(f"{what} {model_id!r} starts its name with {_show(name[0])}: {_rule()}")
    return model_id


def _check_simulated(model_id: str, name: str, what: str) -> str:
    rule = (
        "a simulated model is sim-<accuracy>[-<tag>], the accuracy a number from 0 to 1 and "
        "the tag letters, digits and - . _ (e.g. openai/sim-0.5-think)"
    )
    found = SIMULATED.fullmatch(name)
    if found and float(found.group(1)) > 1:  # the share of answers it gets right
        raise ConfigError(f"{what} {model_id!r} has accuracy {found.group(1)}: {rule}")
    if found:
        return model_id
    bad = _first_bad(name, _TAG_ALLOWED)
    if bad is not None:
        raise ConfigError(f"{what} {model_id!r} has {_show(bad)}: {rule}")
    raise ConfigError(f"{what} {model_id!r} is not a simulated model name: {rule}")


def _first_bad(text: str, allowed: frozenset[str]) -> str | None:
    return next((c for c in text if c not in allowed), None)


def _show(char: str) -> str:
    """A character as the message shows it: quoted, a control character escaped (`'\\n'`)."""
    return "a space" if char == " " else f"the character {char!r}"


def _rule() -> str:
    return (
        f"after provider/ a model name has only {NAME_CHARS}, and starts with a letter or a "
        "digit (simulated: provider/sim-<accuracy>[-<tag>])"
    )
