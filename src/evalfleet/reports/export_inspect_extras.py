"""What an inspect sample holds besides the tables' rows (`export_inspect`): the prompt as the
model's client built it, as inspect's chat messages (the user's text and images in the parts'
order as sent, then the assistant's response), each verdict's explanation in words
(`reports.report_why`, as the report's item shows it), the sample fields its benchmark
declares (the report's list filters on them) and the answer's attempt count.

Images are the report's tiles (`report_media`, a JPEG of 128 pixels a side as a data URI, a
few kB): the log stays small and inspect view shows them in the input and the messages. Audio
is a note naming its type and size (no bytes). A dataset that cannot be read again gives the
prompt's text alone, said in the message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalfleet.core.record import Record
from evalfleet.reports.export_rows import ExportRun
from evalfleet.reports.report_data import judged_records, scoring_kinds, verdict_letter
from evalfleet.reports.report_fields import declared_fields
from evalfleet.reports.report_media import Layout, embedded_media
from evalfleet.reports.report_why import explanations, judges_by_scoring
from evalfleet.storage.layout import ItemKey

UNREAD = "(the dataset could not be read again: the prompt's text alone, its media not shown)"


@dataclass
class ItemExtras:
    """One item's additions: its chat messages, each scoring's words, its metadata."""

    messages: list[Any]  # inspect_ai ChatMessage, the user's first
    why: dict[str, str | None]  # scoring -> explanation
    metadata: dict[str, Any]


class Extras:
    """The additions for every item of an export, the samples' media read once."""

    def __init__(self, export: ExportRun) -> None:
        self.export = export
        run = export.run
        self.where: dict[tuple[str, str], int] = {}  # (benchmark, sample) -> its number
        for name, data in run.data.items():
            for sample in data.samples:
                self.where[(name, sample.id)] = len(self.where)
        self.layouts: dict[int, Layout] = {}
        # a budget of nothing: every image as its tile only, no audio bytes
        self.media, _ = embedded_media(run, self.where, 0.0, self.layouts)
        self.kinds = {
            name: dict(zip(modes, scoring_kinds(run, name, modes), strict=True))
            for name, modes in self._scorings().items()
        }
        self.judge_of = {name: judges_by_scoring(run, name) for name in run.data}

    def _scorings(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for item in self.export.items:
            modes = found.setdefault(item.benchmark, [])
            modes.extend(s["scoring"] for s in item.scores if s["scoring"] not in modes)
        return found

    def of(self, item: Any) -> ItemExtras:
        """The additions of one `ExportItem`."""
        run = self.export.run
        key = self.export.answer_keys.get((item.model, item.benchmark, item.sample_id, item.epoch))
        record: Record | None = None
        if key is not None:
            record = run.answer_state.records.get(run.answer_state.record_key[key])
        data = run.data.get(item.benchmark)
        sample = data.by_id.get(item.sample_id) if data is not None else None
        metadata: dict[str, Any] = {}
        if data is not None and sample is not None:
            for name in declared_fields(data):
                metadata[name] = sample.metadata.get(name)
        metadata["attempts"] = record.attempts if record is not None else None
        return ItemExtras(self._messages(item), self._why(item, key, record), metadata)

    def _messages(self, item: Any) -> list[Any]:
        from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ContentText

        user = ChatMessageUser(
            content=self.user_content(item.benchmark, item.sample_id, item.input)
        )
        said = item.response if item.response is not None else f"(no response: {item.error})"
        return [user, ChatMessageAssistant(content=[ContentText(text=said)], model=item.model)]

    def user_content(self, benchmark: str, sample_id: str, prompt: str) -> list[Any]:
        """The user's message: the sample's parts as sent, images as their tiles."""
        from inspect_ai.model import ContentImage, ContentText

        at = self.where.get((benchmark, sample_id))
        layout = self.layouts.get(at) if at is not None else None
        if layout is None:
            return [ContentText(text=prompt), ContentText(text=UNREAD)]
        tiles = iter(self.media.get(at, []) if at is not None else [])
        content: list[Any] = []
        for kind, text, media_type, size in layout:
            if kind == "text":
                content.append(ContentText(text=text or ""))
                continue
            tile = next(tiles, {}).get("thumb", "") if kind in ("image", "audio") else ""
            if kind == "image" and tile:
                content.append(ContentImage(image=tile))
            else:
                content.append(ContentText(text=f"<{kind} {media_type}, {size:,} bytes>"))
        return content

    def _why(self, item: Any, key: ItemKey | None, record: Record | None) -> dict[str, str | None]:
        data = self.export.run.data.get(item.benchmark)
        names = [s["scoring"] for s in item.scores]
        if data is None or item.sample_id not in data.by_id:
            return dict.fromkeys(names)
        letters = "".join(
            verdict_letter(item.error, s["score_error"], s["correct"], s["judged"])
            for s in item.scores
        )
        judged = judged_records(self.export.run, key) if key is not None else []
        words = explanations(
            data,
            item.sample_id,
            record.response if record is not None else item.response,
            names,
            [self.kinds[item.benchmark][n] for n in names],
            self.judge_of.get(item.benchmark, {}),
            letters,
            {judge: by.response for judge, by in judged},
        )
        return dict(zip(names, words, strict=True))
