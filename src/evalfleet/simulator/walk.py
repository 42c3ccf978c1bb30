"""The walk every protocol's request body takes: its turns, each turn's content, each part.

Every wire format is a list of turns (messages, input items, contents), each with a content
that is a plain string or a list of parts; the walk counts the text, images and audio it meets
and keeps the first prompt text of the last user turn. A protocol gives its ``Dialect``: how it
names a place in the body, how it words a bad one, and how it reads one part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from evalfleet.simulator.protocol import BadRequest, ParsedRequest

# What one part is: text that may be the prompt, other text (a system block, a thought, an
# earlier answer), an image or document, audio, or something the simulator passes over.
PartKind = Literal["prompt", "text", "image", "audio", "skip"]
PartReader = Callable[[Any, str], tuple[PartKind, str | None]]


def bad_at(where: str, what: str) -> BadRequest:
    """A bad request naming the place it is about (OpenAI's and Anthropic's wording)."""
    return BadRequest(f"{where}: {what}", where)


def in_brackets(where: str, index: int) -> str:
    return f"{where}[{index}]"


def after_dot(where: str, index: int) -> str:
    return f"{where}.{index}"


@dataclass(frozen=True)
class Dialect:
    """How one wire format lays out a conversation; the walk over it is ``read_turns``."""

    read_part: PartReader  # (kind, text) of the part at a place, or BadRequest
    not_parts: str  # what a content that is no list of parts is told
    item: Callable[[str, int], str] = in_brackets  # the place of an element of a list
    bad: Callable[[str, str], BadRequest] = bad_at  # a bad request about a place
    strings: bool = True  # a content may be a plain string
    none_is_empty: bool = False  # a missing content is no content


def read_content(req: ParsedRequest, content: Any, where: str, dialect: Dialect) -> str | None:
    """Count one content's text, images and audio into ``req``; its first prompt text."""
    if content is None and dialect.none_is_empty:
        return None
    if dialect.strings and isinstance(content, str):
        req.text_chars += len(content)
        return content
    if not isinstance(content, list):
        raise dialect.bad(where, dialect.not_parts)
    first_text = None
    for j, part in enumerate(content):
        kind, text = dialect.read_part(part, dialect.item(where, j))
        if kind == "image":
            req.images += 1
        elif kind == "audio":
            req.audios += 1
        elif text is not None:
            req.text_chars += len(text)
            if kind == "prompt" and first_text is None:
                first_text = text
    return first_text


def read_turns(
    req: ParsedRequest,
    turns: list[Any],
    where: str,
    dialect: Dialect,
    content_key: str = "content",
    default_role: str | None = None,
) -> None:
    """Walk every turn; the prompt is the first prompt text of the last user turn."""
    for i, turn in enumerate(turns):
        place = dialect.item(where, i)
        if not isinstance(turn, dict):
            raise dialect.bad(place, "expected an object")
        first_text = read_content(req, turn.get(content_key), f"{place}.{content_key}", dialect)
        if turn.get("role", default_role) == "user":
            req.prompt_text = first_text
