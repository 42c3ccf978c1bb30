"""A provider simulator: one HTTP server speaking the OpenAI (chat completions, responses),
Anthropic (messages) and Gemini (generateContent) protocols, with latency, rate limits, faults
and a deterministic answering model of configurable accuracy; and the three providers' batch
APIs (OpenAI Files + Batches, Anthropic Message Batches, Gemini batchGenerateContent), whose
lines the same engine answers (``batches``, ``openai_batch``, ``anthropic_batch``,
``gemini_batch``)."""

from simulator.answering import AnswerKey, AnswerKeyError, draw_correct, prompt_sha256
from simulator.config import ConfigError, SimulatorConfig, load_config
from simulator.process import (
    SimulatorHandle,
    SimulatorStartError,
    start_simulator,
    start_simulator_in_thread,
)

__all__ = [
    "AnswerKey",
    "AnswerKeyError",
    "ConfigError",
    "SimulatorConfig",
    "SimulatorHandle",
    "SimulatorStartError",
    "draw_correct",
    "load_config",
    "prompt_sha256",
    "start_simulator",
    "start_simulator_in_thread",
]
