"""A synthetic run for the planning benchmarks: M simulated models x S text samples x E
epochs of ZeroBench's sampled-k protocol, resolved into a real `ResolvedRun` (real request,
model configurations, manifest and store) without a dataset on disk or any request sent."""

from __future__ import annotations

from pathlib import Path

from engine.prepare.resolve import ResolvedRun


def synthetic_run(
    run_id: str, store_path: Path, *, models: int, samples: int, epochs: int
) -> ResolvedRun:
    from benchmarks import registry
    from benchmarks.protocols import Sampling, decodings
    from core.types import Part, Sample
    from engine.prepare.resolve import collect_keys, resolve_models
    from engine.run.items import BenchmarkData
    from engine.run.request import EvalRequest
    from engine.store import manifest as manifests
    from storage import open_store

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
