"""Reading a request's benchmark data: each benchmark's options, protocol and epochs resolved,
its samples loaded (downscaled if asked) and the plan table it will store made.

Reading needs Arrow (and with it NumPy): 70 MB of a process's memory that it never gives
back, in a run's driver that otherwise needs neither until it aggregates. So a process that
has not imported Arrow reads in a short-lived child (`python -m engine.prepare.reading`, about
0.4 s of CPU) and gets the data back pickled, then each benchmark's plan table (made there
while the command goes on). A process that has Arrow already (one that aggregated, a test)
reads in place, and so does a request naming a benchmark added with `registry.register()`,
which a new process would not know (an installed package's it knows).

A command starts the child before its own slow imports (`start_reading`), so that the two
run on both cores; `resolve` takes its answer.

The child works in the command's directory (relative paths mean the same), reads the request
on stdin and writes its answer on a pipe of its own, which the command unpickles as it comes
(the samples are not held twice). A `ValueError` it raises (`ConfigError`, `DatasetError`:
one line each) is raised here as it was; any other error prints its traceback there and is
raised here as a RuntimeError naming it. Its INFO and higher log records are logged here. It
runs in its own session, so a terminal's Ctrl-C reaches only the command, which decides
(`engine.run.interrupts`); it dies with the command (`core.fate`), however that ends.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, BinaryIO

from evalfleet.benchmarks import registry
from evalfleet.benchmarks.media import downscale_image, sniff_media_type
from evalfleet.benchmarks.protocols import Sampling, decodings
from evalfleet.core import collector
from evalfleet.core.answering import end_answering, start_answering
from evalfleet.core.types import DatasetError, Part, Sample
from evalfleet.engine.run.items import BenchmarkData
from evalfleet.engine.run.request import EvalRequest


def read_benchmarks(
    request: EvalRequest, reading: Reading | None = None
) -> dict[str, BenchmarkData]:
    """Each benchmark of the request, read here if this process has Arrow already, else in a
    child process (see the module's docstring): `reading`'s, when one was started ahead."""
    if reading is not None:
        return reading.result()
    reading = start_reading(request)
    if reading is None:
        return load_benchmarks(request)
    data = reading.result()
    reading.take_tables()  # now: the child ends here
    return data


def start_reading(request: EvalRequest) -> Reading | None:
    """The request's data being read in a child from now on, or None when this process reads
    it itself (it has Arrow, or the request names a benchmark only it knows). A command starts
    it before its slow imports: the child reads on the other core meanwhile."""
    known = all(registry.in_every_process(name) for name in request.benchmarks)
    if "pyarrow" in sys.modules or not known:
        return None
    return Reading(request)


@collector.held_back()  # samples by the hundred thousand, all kept
def load_benchmarks(request: EvalRequest) -> dict[str, BenchmarkData]:
    """Each benchmark of the request, read in this process."""
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


class Reading:
    """A child reading a request's data: started at once, its answer taken by `result` (once).
    Each benchmark's plan table comes after (the child makes them while this process goes
    on), taken when the run is opened (`BenchmarkData.plan_later`). `close` ends the child
    (killed if it has not answered)."""

    def __init__(self, request: EvalRequest) -> None:
        self.child, self.answer = start_answering("evalfleet.engine.prepare.reading")
        self._tables: dict[str, bytes] | None = None
        asking = self.child.stdin
        assert asking is not None  # started with a pipe for its stdin
        try:  # the whole request now: no process forked later holds its stdin open
            asking.write(pickle.dumps(request))
        except OSError:  # a child that died at once: `result` says how it ended
            pass
        finally:
            with contextlib.suppress(OSError):
                asking.close()

    def result(self) -> dict[str, BenchmarkData]:
        outcome, value, records = self._next()
        for name, level, message in records:
            logging.getLogger(name).log(level, "%s", message)
        if outcome == "error":
            self.close()
            raise value
        data: dict[str, BenchmarkData] = value
        for name, bench_data in data.items():
            bench_data.plan_later = partial(self.plan_table, name)
        return data

    def plan_table(self, name: str) -> bytes:
        """One benchmark's plan table, from the child's second answer."""
        return self.take_tables()[name]

    def take_tables(self) -> dict[str, bytes]:
        """Each benchmark's plan table: the child's second answer, taken once (then it ends)."""
        if self._tables is None:
            outcome, value = self._next()
            self.close(wait_s=2.0)  # it has answered all: it exits on its own
            if outcome == "error":
                raise value
            self._tables = value
        return self._tables

    def _next(self) -> Any:
        try:
            try:
                # The GC took 2 s of the 3 unpickling 83,334 samples, which the run keeps.
                with collector.paused(freeze=True):
                    return pickle.load(self.answer)
            except Exception as exc:
                raise _no_answer(self.child.wait(), exc) from None
        except BaseException:  # a second Ctrl-C, or no answer: the child ends with the reading
            self.close()
            raise

    def close(self, wait_s: float = 0.0) -> None:
        end_answering(self.child, self.answer, wait_s)


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
    # A short-lived process whose objects all live until it exits: collecting is wasted (it
    # took a third of the reading's CPU).
    gc.disable()
    kept = _Kept()
    logging.getLogger().addHandler(kept)
    logging.getLogger().setLevel(logging.INFO)
    request = pickle.loads(sys.stdin.buffer.read())
    with os.fdopen(answer_fd, "wb") as answer:
        outcome, data = _attempt(lambda: load_benchmarks(request))
        if _sent(answer, (outcome, data, kept.records)) and outcome == "ok":
            # then each plan table, while the command goes on
            from evalfleet.engine.store.manifest import plan_table

            tables = _attempt(lambda: {name: plan_table(d) for name, d in data.items()})
            _sent(answer, tables)
    return 0


def _attempt(work: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", `work`'s value), or ("error", its error): a ValueError (ConfigError,
    DatasetError) as it was, one line; any other error's traceback printed here and its line
    kept."""
    try:
        return "ok", work()
    except ValueError as exc:
        return "error", exc
    except Exception as exc:  # a defect
        import traceback

        traceback.print_exc()
        return "error", RuntimeError(f"reading the data failed: {exc!r}")


def _sent(answer: BinaryIO, message: tuple[Any, ...]) -> bool:
    """`message` ((outcome, value, ...)) written pickled; whether it went as it was. An error
    that does not pickle is sent as its line."""
    try:
        blob = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        whole = True
    except Exception as exc:
        error = DatasetError(f"reading the data failed: {message[1]!r} ({exc})")
        blob, whole = pickle.dumps(("error", error, *message[2:])), False
    answer.write(blob)
    answer.flush()
    return whole


if __name__ == "__main__":
    sys.exit(_child_main(int(sys.argv[1])))
