"""`evalfleet score rome`: score ROME predictions made elsewhere and write what upstream's
evaluate.py writes (`scores.json`, `updated_predictions.json`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalfleet.benchmarks.interface import Command, CommandContext
from evalfleet.core.settings import SIMULATOR_URL
from evalfleet.core.types import ConfigError


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--annotations", required=True, help="ROME annotations (e.g. test.json)")
    p.add_argument("--predictions", required=True, help="predictions to score")
    p.add_argument("--scoring", choices=["upstream", "fixed"], default="upstream", help="rule mode")
    p.add_argument("--tracker-type", default="task", help="bucket field (default task)")
    p.add_argument("--tracker-subtype", default=None, help="sub-bucket field")
    p.add_argument(
        "--judge-model", metavar="PROVIDER/MODEL", help="judge every prediction with this model"
    )
    p.add_argument(
        "--judge-parse",
        choices=["upstream", "robust"],
        default="upstream",
        help="upstream's verdict parse (default) or the last 'Judgement: 0|1'",
    )
    p.add_argument("--simulator-url", help="the simulator's URL (else $EVALFLEET_SIMULATOR_URL)")
    p.add_argument("--output", help="directory for the two files (default: beside predictions)")


def _score(args: argparse.Namespace, context: CommandContext) -> int:
    from evalfleet.benchmarks.rome.judge import RomeJudge
    from evalfleet.benchmarks.rome.offline import (
        read_annotations,
        read_predictions,
        score_predictions,
        unpredicted,
    )
    from evalfleet.benchmarks.rome.scoring import dumps

    for flag, path in (("--annotations", args.annotations), ("--predictions", args.predictions)):
        if not Path(path).is_file():
            raise ConfigError(f"{flag} {path}: no such file: give the path of an existing file")
    annotations = read_annotations(Path(args.annotations))
    predictions = read_predictions(Path(args.predictions))
    judge = None
    if args.judge_model:

        def judge(prompts: list[str]) -> list[str | None]:
            return context.ask_judge(
                args.judge_model,
                prompts,
                RomeJudge.decoding,
                args.simulator_url or SIMULATOR_URL.get(),
            )

    scores, updated = score_predictions(
        annotations,
        predictions,
        mode=args.scoring,
        tracker=args.tracker_type,
        subtracker=args.tracker_subtype,
        judge=judge,
        judge_parse=args.judge_parse,
    )
    out = Path(args.output) if args.output else Path(args.predictions).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_bytes(dumps(scores))
    (out / "updated_predictions.json").write_bytes(dumps(updated))
    print(f"final_score {scores['final_score']}, accuracy {scores['accuracy']}: written to {out}")
    missing = unpredicted(annotations, predictions)
    if missing:
        first = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        print(
            f"{len(missing)} of {len(annotations)} annotated questions have no prediction "
            f"(first: {first}): as upstream, the score is over the {len(predictions)} "
            "predictions only; they count neither as wrong nor in the total"
        )
    return 0


COMMANDS = [
    Command(
        path=("score", "rome"),
        help="write scores.json and updated_predictions.json as ROME's evaluate.py does",
        description="Score a ROME predictions file (one object, an array, or an object keyed "
        "by question_id; JSON or JSON lines) against the annotations.",
        arguments=_arguments,
        run=_score,
        group_help="score predictions made elsewhere",
    )
]
