"""A model's runs over time (`evalfleet history MODEL`): per benchmark, item set and scoring
mode, every run in time order with its headline and 95 % interval, the model versions the
provider reported in its answers, and the judge with the versions it reported.

The points are the leaderboard's rows (`reports.board_rows`), one per run; only runs on the
same item set are one line (a different dataset revision is a different item set).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evalfleet.core.record import Record
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.reports.board_rows import StoreRows, read_runs, units_key
from evalfleet.storage import layout
from evalfleet.storage.base import Store


@dataclass(frozen=True)
class Point:
    """One run of one model on one benchmark, item set and scoring mode."""

    model: str
    benchmark: str
    scoring: str
    item_set: str
    items: str  # the item set in words
    run_id: str
    when: str  # when the run was created (else when its results were written)
    value: float | None
    low: float | None
    high: float | None
    versions: tuple[str, ...]  # what the provider reported of the model, sorted
    judge: str  # the primary judge model, "" without one
    judge_versions: tuple[str, ...]

    @property
    def line(self) -> tuple[str, str, str, str]:
        """The points joined by one line: a model on one benchmark, item set and scoring."""
        return (self.model, self.benchmark, self.scoring, self.item_set)


def reported_versions(store: Store, prefix: str, benchmark: str) -> tuple[str, ...]:
    """The versions (`Record.reported_version`) in the records under `prefix` of one
    benchmark: every record is read, so one answer from a new version is seen."""
    keys = [k for k in store.list(prefix) if f"/{benchmark}/" in k and k.endswith(".json")]
    seen: set[str] = set()
    for blob in store.get_many(keys).values():
        record = Record.read(blob)
        if record is not None and not record.failed and record.reported_version:
            seen.add(record.reported_version)
    return tuple(sorted(seen))


def points(
    store: Store,
    models: Iterable[str] | None = None,
    found: StoreRows | None = None,
    *,
    versions: bool = True,
) -> list[Point]:
    """Every run's points (of `models` only, if given), in time order. `found`: the store's
    rows when read already. Without `versions` nothing more is read (the leaderboard's
    plots): no record, no manifest; a point's time is when its run began (the rows keep it)."""
    wanted = set(models) if models is not None else None
    found = found if found is not None else read_runs(store)
    if not versions:
        return sorted(
            (_bare(row, found) for row in found.rows if wanted is None or row["model"] in wanted),
            key=lambda p: (p.when, p.run_id),
        )
    out: list[Point] = []
    created: dict[str, str] = {}
    seen: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for row in found.rows:
        model, run_id, benchmark = row["model"], row["run_id"], row["benchmark"]
        if wanted is not None and model not in wanted:
            continue
        if run_id not in created:
            manifest = read_manifest(store, run_id)
            created[run_id] = row["run_created_at"]  # the manifest's, as the rows keep it
            judge = manifest.identity.judge_model if manifest else None
            created[run_id + "\0judge"] = judge or ""
        judge = created[run_id + "\0judge"]
        mine = (run_id, model, benchmark)
        if mine not in seen:
            answers = f"{run_id}/completions/{layout.segment(model)}/"
            seen[mine] = reported_versions(store, answers, benchmark)
        judged: tuple[str, ...] = ()
        if judge:
            judgements = f"{run_id}/judgements/{layout.segment(judge)}/{layout.segment(model)}/"
            judged = reported_versions(store, judgements, benchmark)
        units = found.units.get(units_key(run_id, model, benchmark, row["scoring"]))
        interval = units.interval() if units is not None else None
        out.append(
            Point(
                model=model,
                benchmark=benchmark,
                scoring=row["scoring"],
                item_set=row["item_set"],
                items=row["items"],
                run_id=run_id,
                when=created[run_id],
                value=row["value"],
                low=interval.low if interval else None,
                high=interval.high if interval else None,
                versions=seen[mine],
                judge=judge,
                judge_versions=judged,
            )
        )
    out.sort(key=lambda p: (p.when, p.run_id))
    return out


def _bare(row: dict, found: StoreRows) -> Point:
    """A point of a leaderboard row alone (no reported versions, no judge)."""
    units = found.units.get(
        units_key(row["run_id"], row["model"], row["benchmark"], row["scoring"])
    )
    interval = units.interval() if units is not None else None
    return Point(
        model=row["model"],
        benchmark=row["benchmark"],
        scoring=row["scoring"],
        item_set=row["item_set"],
        items=row["items"],
        run_id=row["run_id"],
        when=row["run_created_at"],
        value=row["value"],
        low=interval.low if interval else None,
        high=interval.high if interval else None,
        versions=(),
        judge="",
        judge_versions=(),
    )


def _figure(point: Point) -> str:
    if point.value is None:
        return "—"
    if point.low is None or point.high is None:
        return f"{point.value:.3f} (no interval)"
    return f"{point.value:.3f} [{point.low:.3f}, {point.high:.3f}]"


def history_text(model: str, found: list[Point]) -> str:
    """Per benchmark, item set and scoring mode, one line per run in time order."""
    if not found:
        return f"no results of {model} in this store"
    lines: list[str] = []
    for line in dict.fromkeys(p.line for p in found):
        _, benchmark, scoring, _ = line
        these = [p for p in found if p.line == line]
        lines.append(f"{benchmark} ({scoring}) on {these[0].items}:")
        for p in these:
            judge = f"  judge {p.judge} ({', '.join(p.judge_versions) or '?'})" if p.judge else ""
            lines.append(
                f"  {p.when[:19]}  {p.run_id}  {_figure(p)}  "
                f"reported {', '.join(p.versions) or '?'}{judge}"
            )
    return "\n".join(lines)
