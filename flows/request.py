"""The evaluation request: the flow's parameters, so the Prefect UI renders it as a form."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from providers.types import Decoding

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
Protocol = Literal["zerobench-paper", "sampled-k"]


class EvalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(min_length=1, description="provider/model ids, e.g. openai/gpt-4o")
    benchmarks: list[str] = Field(default=["zerobench", "zerobench_subquestions"], min_length=1)
    limit: int | None = Field(default=None, ge=1, description="first N samples of each benchmark")
    dataset_path: str | None = Field(
        default=None, description="local copy (save_to_disk or Parquet) instead of the Hub"
    )
    dataset_paths: dict[str, str] = Field(
        default_factory=dict, description="per-benchmark local copies (override dataset_path)"
    )
    text_alternatives: list[Literal["image", "audio"]] = Field(
        default_factory=list,
        description="send a benchmark's text stand-in instead of these media (OmniBench)",
    )
    protocol: Protocol = "zerobench-paper"
    epochs: int = Field(
        default=5, ge=1, le=100, description="sampled epochs (after the greedy one in the paper)"
    )
    temperature: float = Field(default=0.7, ge=0, le=2)
    top_p: float = Field(default=0.95, gt=0, le=1)
    base_seed: int = 42
    max_tokens: int = Field(default=16000, ge=1)
    max_image_side: int | None = Field(default=None, ge=16, description="1024 = upstream")
    run_id: str | None = None
    store: str = "./runs"
    s3_endpoint_url: str | None = None
    simulator_url: str | None = None
    max_in_flight: int = Field(default=256, ge=1)
    workers: int = Field(default=2, ge=1, le=64)
    max_attempts: int = Field(default=6, ge=1, le=50)
    max_retry_seconds: float = Field(default=600.0, gt=0)
    rpm: dict[str, int] = Field(default_factory=dict, description="requests/min per model id")
    tpm: dict[str, int] = Field(default_factory=dict, description="tokens/min per model id")
    judge_model: str | None = None

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str | None) -> str | None:
        if value is not None and not RUN_ID.match(value):
            raise ValueError("run id must be 1-128 characters of letters, digits, '.', '_' or '-'")
        return value

    def dataset_path_for(self, benchmark: str) -> str | None:
        return self.dataset_paths.get(benchmark, self.dataset_path)

    def resolved_run_id(self) -> str:
        return self.run_id or datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S")

    def epoch_decodings(self) -> list[Decoding]:
        """The decoding settings of every epoch; the seed differs per epoch."""
        sampled = [
            Decoding(
                temperature=self.temperature,
                top_p=self.top_p,
                max_tokens=self.max_tokens,
                seed=self.base_seed + epoch,
            )
            for epoch in range(self.epochs + (1 if self.protocol == "zerobench-paper" else 0))
        ]
        if self.protocol == "zerobench-paper":
            sampled[0] = Decoding(
                temperature=0.0, top_p=None, max_tokens=self.max_tokens, seed=self.base_seed
            )
        return sampled

    def identity(self) -> dict[str, object]:
        """What must match when a run id is reused (everything that changes the answers)."""
        return {
            "models": sorted(self.models),
            "benchmarks": sorted(self.benchmarks),
            "limit": self.limit,
            "protocol": self.protocol,
            "epochs": self.epochs,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "base_seed": self.base_seed,
            "max_tokens": self.max_tokens,
            "max_image_side": self.max_image_side,
        }
