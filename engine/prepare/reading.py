"""Reading a request's benchmark data: each benchmark's options, protocol and epochs resolved,
its samples loaded (downscaled if asked) and the plan table it will store made.

Reading needs Arrow (and with it NumPy): 70 MB of a process's memory that it never gives
back, in a run's driver that otherwise needs neither until it aggregates. So a process that
has not imported Arrow reads in a short-lived child (`python -m engine.prepare.reading`, about 0.4 s
of CPU) and gets the data back pickled, with the plan tables already made. A process that has
Arrow already (one that aggregated, a test) reads in place, and so does a request naming a
benchmark added with `registry.register()`, which a new process would not know (an installed
package's it knows).

The child works in the command's directory (relative paths mean the same), reads the request
on stdin and writes its answer on a pipe of its own, which the command unpickles as it comes
(the samples are not held twice). A `ValueError` it raises (`ConfigError`, `DatasetError`:
one line each) is raised here as it was; any other error prints its traceback there and is
raised here as a RuntimeError naming it. Its INFO and higher log records are logged here. It
runs in its own session, so a terminal's Ctrl-C reaches only the command, which decides
(`engine.run.interrupts`); it dies with the command (`core.fate`), however that ends.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
from dataclasses import replace
from typing import Any

from benchmarks import registry
from benchmarks.media import downscale_image, sniff_media_type
from benchmarks.protocols import Sampling, decodings
from core.answering import start_answering
from core.types import DatasetError, Part, Sample
from engine.run.items import BenchmarkData
from engine.run.request import EvalRequest


def read_benchmarks(request: EvalRequest) -> dict[str, BenchmarkData]:
    """Each benchmark of the request, read here if this process has Arrow already, else in a
    child process (see the module's docstring)."""
    known = all(registry.in_every_process(name) for name in request.benchmarks)
    if "pyarrow" in sys.modules or not known:
        return load_benchmarks(request)
    return _read_in_child(request)


def load_benchmarks(request: EvalRequest, *, with_plan: bool = False) -> dict[str, BenchmarkData]:
    """Each benchmark of the request, read in this process. `with_plan`: also make each
    plan table (`BenchmarkData.plan_table`), for a parent that does not import Arrow."""
    from engine.store.manifest import plan_table

    loaded: dict[str, BenchmarkData] = {}
    sampling = Sampling(request.temperature, request.top_p, request.max_tokens, request.base_seed)
    for name in request.benchmarks:
        bench = registry.get(name)
        options = bench.options(request.benchmark_options.get(name))
        protocol = request.protocol or bench.protocol
        data = bench.load(request.dataset_path_for(name), options, request.limit)
        samples = data.samples
        if request.max_image_side is not None:
            samples = [downscaled(s, request.max_image_side) for s in samples]
        if not samples:
            raise DatasetError(f"benchmark {name} has no samples to evaluate: check the dataset")
        bench_data = BenchmarkData(
            benchmark=bench,
            options=options,
            samples=samples,
            revision=data.revision,
            source=data.source,
            protocol=protocol,
            decodings=decodings(protocol, request.epochs or bench.epochs, sampling),
            excluded=data.excluded,
        )
        if with_plan:
            bench_data.plan_table = plan_table(bench_data)
        loaded[name] = bench_data
    return loaded


def downscaled(sample: Sample, max_side: int) -> Sample:
    """The sample with every image shrunk to `max_side` as PIL `thumbnail` does."""
    parts = []
    for part in sample.parts:
        if part.kind == "image" and part.data is not None:
            try:
                data = downscale_image(part.data, max_side)
            except ValueError as exc:
                raise DatasetError(f"sample {sample.id!r}: {exc}") from exc
            part = Part(kind="image", data=data, media_type=sniff_media_type(data))
        parts.append(part)
    return replace(sample, parts=parts)


# --- the child ---------------------------------------------------------------------------


def _read_in_child(request: EvalRequest) -> dict[str, BenchmarkData]:
    child, answer_pipe = start_answering("engine.prepare.reading")
    try:
        with answer_pipe as answer:
            child.stdin.write(pickle.dumps(request))
            child.stdin.close()
            try:
                outcome, value, records = pickle.load(answer)
            except Exception as exc:
                raise _no_answer(child.wait(), exc) from None
        child.wait()
    except BaseException:  # a second Ctrl-C, or no answer: the child ends with the reading
        child.kill()
        raise
    for name, level, message in records:
        logging.getLogger(name).log(level, "%s", message)
    if outcome == "error":
        raise value
    return value


def _no_answer(returncode: int, exc: Exception) -> Exception:
    if returncode == 0:  # it answered, but the answer does not unpickle here
        return RuntimeError(f"reading the data failed: its answer could not be read ({exc!r})")
    how = f"signal {-returncode}" if returncode < 0 else f"code {returncode}"
    return DatasetError(
        f"reading the data stopped: its process ended with {how} before answering; "
        "run again (what it printed is above)"
    )


class _Kept(logging.Handler):
    """The child's log records, sent back with the answer."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


def _child_main(answer_fd: int) -> int:
    kept = _Kept()
    logging.getLogger().addHandler(kept)
    logging.getLogger().setLevel(logging.INFO)
    request = pickle.loads(sys.stdin.buffer.read())
    try:
        message: Any = ("ok", load_benchmarks(request, with_plan=True), kept.records)
    except ValueError as exc:  # ConfigError and DatasetError among them: one line each
        message = ("error", exc, kept.records)
    except Exception as exc:  # a defect: its traceback goes to stderr, its line to the parent
        import traceback

        traceback.print_exc()
        message = ("error", RuntimeError(f"reading the data failed: {exc!r}"), kept.records)
    try:
        blob = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # an exception that does not pickle: its line still does
        error = DatasetError(f"reading the data failed: {message[1]!r} ({exc})")
        blob = pickle.dumps(("error", error, kept.records))
    with os.fdopen(answer_fd, "wb") as answer:
        answer.write(blob)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(int(sys.argv[1])))
