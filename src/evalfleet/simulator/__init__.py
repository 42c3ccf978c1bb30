"""A provider simulator: one HTTP server speaking the OpenAI (chat completions, responses),
Anthropic (messages) and Gemini (generateContent) protocols, with latency, rate limits, faults
and a deterministic answering model of configurable accuracy; and the three providers' batch
APIs (OpenAI Files + Batches, Anthropic Message Batches, Gemini batchGenerateContent), whose
lines the same engine answers (``batches``, ``openai_batch``, ``anthropic_batch``,
``gemini_batch``)."""

from importlib import import_module
from typing import Any

# Loaded on first use: `evalfleet --help` must not import the server (aiohttp, uvloop).
_HOMES = {
    "AnswerKey": "evalfleet.simulator.answering",
    "AnswerKeyError": "evalfleet.simulator.answering",
    "draw_correct": "evalfleet.simulator.answering",
    "prompt_sha256": "evalfleet.simulator.answering",
    "ConfigError": "evalfleet.simulator.config",
    "SimulatorConfig": "evalfleet.simulator.config",
    "load_config": "evalfleet.simulator.config",
    "SimulatorHandle": "evalfleet.simulator.process",
    "SimulatorStartError": "evalfleet.simulator.process",
    "start_simulator": "evalfleet.simulator.process",
    "start_simulator_in_thread": "evalfleet.simulator.process",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'evalfleet.simulator' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
