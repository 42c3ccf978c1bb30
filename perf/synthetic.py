"""A synthetic run for the planning benchmarks: M simulated models x S text samples x E
epochs of ZeroBench's sampled-k protocol, resolved into a real `ResolvedRun` (real request,
model configurations, manifest and store) without a dataset on disk or any request sent."""

from __future__ import annotations

from pathlib import Path

from evalfleet.engine.prepare.resolve import ResolvedRun


def synthetic_run(
    run_id: str, store_path: Path, *, models: int, samples: int, epochs: int
) -> ResolvedRun:
    from evalfleet.benchmarks import registry
    from evalfleet.benchmarks.protocols import Sampling, decodings
    from evalfleet.core.types import Part, Sample
    from evalfleet.engine.prepare.resolve import collect_keys, resolve_models
    from evalfleet.engine.run.items import BenchmarkData
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.engine.store import manifest as manifests
    from evalfleet.storage import open_store

    request = EvalRequest(
        models=[f"openai/sim-0.{3 + i % 6}-m{i}" for i in range(models)],
        benchmarks=["zerobench"],
        protocol="sampled-k",
        epochs=epochs,
        run_id=run_id,
        store=str(store_path),
        simulator_url="http://127.0.0.1:9",  # never contacted: nothing is requested
    )
    configs = resolve_models(request)
    bench = registry.get("zerobench")
    data = BenchmarkData(
        benchmark=bench,
        options=bench.options(),
        samples=[
            Sample(
                id=str(i + 1),
                parts=[Part.of_text(f"Synthetic question {i + 1}: what is {i} mod 97?")],
                target=str(i % 97),
                group_id=str(i + 1),
            )
            for i in range(samples)
        ],
        revision="synthetic:perf",
        source="synthetic",
        protocol="sampled-k",
        decodings=decodings("sampled-k", epochs, Sampling(0.7, 0.95, 16000, 42)),
    )
    store = open_store(request.store)
    manifest = manifests.build_manifest(request, run_id, configs, {"zerobench": data})
    return ResolvedRun(
        request, run_id, store, configs, collect_keys(configs), {"zerobench": data}, manifest
    )
