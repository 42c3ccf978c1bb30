"""How bad input is told: one line, no traceback, exit code 2."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from typing import NoReturn

from pydantic import ValidationError

_NUMBER = re.compile(r"argument (?:\S+/)?(\S+): invalid (int|float) value: (.*)")
_KINDS = {"int": "a whole number", "float": "a number"}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a malformed command line is one line, not the usage of every option:
    what is wrong, named by its flag, and where the options are listed. Subcommands' parsers
    are of the same class (argparse makes them so)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {_plain(message)} (`{self.prog} --help` lists the options)\n")


def _plain(message: str) -> str:
    """argparse's message in the flag's words: `--limit takes a whole number, not '1.5'`."""
    number = _NUMBER.fullmatch(message)
    if number:
        flag, kind, value = number.groups()
        return f"{flag} takes {_KINDS[kind]}, not {value}"
    if message.startswith("argument "):
        flags, _, rest = message[len("argument ") :].partition(": ")
        flag = flags.split("/")[-1]
        return f"{flag} {rest}" if rest.startswith("takes ") else f"{flag}: {rest}"
    return message


def one_line(exc: BaseException, flags: Mapping[str, str] | None = None) -> str:
    """The error in one line; `flags` names a request field by the flag that set it."""
    if isinstance(exc, ValidationError):
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            if flags and err["loc"] and err["loc"][0] in flags:
                rest = [str(part) for part in err["loc"][1:] if not isinstance(part, int)]
                where = ".".join([flags[str(err["loc"][0])], *rest])  # -m's 2nd: the value says
            message = str(err.get("ctx", {}).get("error") or err["msg"])
            if err["type"] == "too_short" and err.get("ctx", {}).get("min_length") == 1:
                message = "names none: give at least one"
            problems.append(f"{where}: {message}" if where else message)
        return "invalid request: " + "; ".join(problems)
    return " ".join(str(exc).split())
