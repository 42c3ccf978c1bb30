"""The aiohttp application: routes for every protocol on one port, admin routes, and runners.

Routes are served both at the providers' own paths (``/v1/...``, ``/v1beta/...``) and under a
per-provider prefix (``/openai/v1``, ``/anthropic/v1``, ``/gemini/v1beta``). ``GET /v1/models``
is shared by OpenAI and Anthropic and answered by the ``anthropic-version`` header.

Batch routes: OpenAI files and batches (``openai_batch``), Anthropic message batches
(``anthropic_batch``), Gemini ``:batchGenerateContent`` and ``batches/...`` (``gemini_batch``).
Admin routes: ``GET /health`` (with ``in_flight``, the model requests being answered),
``POST /_sim/flush`` (the request log), ``POST /_sim/reset`` (rate windows, attempt counts),
``POST /_sim/batches/advance`` (``{"seconds": N}``: move the batch clock forward).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from evalfleet.simulator import (
    anthropic_batch,
    anthropic_routes,
    gemini_batch,
    gemini_routes,
    openai_batch,
    openai_routes,
)
from evalfleet.simulator.answering import AnswerKey
from evalfleet.simulator.config import SimulatorConfig
from evalfleet.simulator.engine import Simulator, json_response, new_entry
from evalfleet.simulator.protocol import Protocol

SIM_KEY: web.AppKey[Simulator] = web.AppKey("simulator", Simulator)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_CHAT = openai_routes.ChatCompletions()
_RESPONSES = openai_routes.Responses()
_MESSAGES = anthropic_routes.Messages()
_GEMINI = gemini_routes.GenerateContent()


def _protocol_handler(proto: Protocol) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await request.app[SIM_KEY].handle(proto, request)

    return handler


def _with_sim(
    handler: Callable[[Simulator, web.Request], Awaitable[web.StreamResponse]],
) -> Handler:
    async def wrapped(request: web.Request) -> web.StreamResponse:
        return await handler(request.app[SIM_KEY], request)

    return wrapped


async def _gemini_model_action(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    model, _, action = name.rpartition(":")
    if action == "batchGenerateContent" and model:
        return await gemini_batch.create(request.app[SIM_KEY], request, model)
    if action != "generateContent" or not model:
        version = request.match_info["version"]
        status, body, headers = gemini_routes.not_found(
            f"models/{name} is not found for API version {version}, or the method is not "
            "supported by the simulator (only generateContent and batchGenerateContent)."
        )
        return json_response(status, body, headers)
    request.match_info["model"] = model
    return await request.app[SIM_KEY].handle(_GEMINI, request)


def _log_list(
    sim: Simulator, request: web.Request, route: str, rid: str, status: int, auth: bool
) -> None:
    entry = new_entry(route, rid, request)
    outcome = {200: "ok", 401: "unauthorized", 404: "not_found"}.get(status, "error")
    entry.update(model=request.match_info.get("model") or request.match_info.get("name"))
    entry.update(status=status, outcome=outcome, auth=auth, latency_ms=0.0)
    sim.log.write(entry)


async def _shared_models(request: web.Request) -> web.StreamResponse:
    """GET /v1/models[/{model}]: Anthropic if the request carries ``anthropic-version``,
    Gemini (its SDK at api_version "v1") if it carries Gemini's key header, else OpenAI."""
    pinned = request.path.startswith(("/openai/", "/anthropic/"))  # the prefix names it
    if "x-goog-api-key" in request.headers and not pinned:
        return await _gemini_models(request)
    sim = request.app[SIM_KEY]
    anthropic = "anthropic-version" in request.headers or request.path.startswith("/anthropic/")
    proto: Protocol = _MESSAGES if anthropic else _CHAT
    route = "anthropic.models" if anthropic else "openai.models"
    rid = sim.next_request_id()
    model = request.match_info.get("model")
    auth = proto.auth_present(request.headers, request.query)
    if sim.config.require_auth and not auth:
        status, body, headers = proto.error("unauthorized", "No API key provided.", rid)
    elif model is not None and model not in sim.config.models:
        status, body, headers = proto.error(
            "not_found", f"The model `{model}` does not exist.", rid
        )
    else:
        status, headers = 200, proto.headers(rid, None)
        if anthropic:
            body = (
                anthropic_routes.model_info(model)
                if model
                else anthropic_routes.models_list(sim.config.models)
            )
        else:
            body = (
                openai_routes.model_object(model, sim.profiles.get(model))
                if model
                else openai_routes.models_list(sim.config.models, sim.profiles)
            )
    _log_list(sim, request, route, rid, status, auth)
    return json_response(status, body, headers)


async def _gemini_models(request: web.Request) -> web.StreamResponse:
    sim = request.app[SIM_KEY]
    rid = sim.next_request_id()
    model = request.match_info.get("name") or request.match_info.get("model")
    auth = _GEMINI.auth_present(request.headers, request.query)
    if sim.config.require_auth and not auth:
        status, body, headers = _GEMINI.error("unauthorized", "API key not provided.", rid)
    elif model is not None and model not in sim.config.models:
        status, body, headers = gemini_routes.not_found(f"models/{model} is not found.")
    else:
        status, headers = 200, {}
        profiles = sim.profiles
        if model is not None:
            body = gemini_routes.model_resource(model, profiles.get(model).thinking)
        else:
            body = {
                "models": [
                    gemini_routes.model_resource(m, profiles.get(m).thinking)
                    for m in sim.config.models
                ]
            }
    _log_list(sim, request, "gemini.models", rid, status, auth)
    return json_response(status, body, headers)


async def _health(request: web.Request) -> web.StreamResponse:
    sim = request.app[SIM_KEY]
    return json_response(200, {"status": "ok", "answers": len(sim.key), "in_flight": sim.in_flight})


async def _flush(request: web.Request) -> web.StreamResponse:
    request.app[SIM_KEY].log.flush()
    return json_response(200, {"flushed": True})


async def _reset(request: web.Request) -> web.StreamResponse:
    request.app[SIM_KEY].reset()
    return json_response(200, {"reset": True})


async def _advance_batches(request: web.Request) -> web.StreamResponse:
    try:
        seconds = float((await request.json())["seconds"])
    except (ValueError, KeyError, TypeError):
        return json_response(400, {"error": 'expected {"seconds": <number>}'})
    store = request.app[SIM_KEY].batches
    store.advance_clock(seconds)
    return json_response(200, {"offset_s": store.offset})


async def _flush_periodically(app: web.Application) -> Any:
    sim = app[SIM_KEY]

    async def loop() -> None:
        while True:
            await asyncio.sleep(sim.config.log_flush_s)
            sim.log.flush()

    task = asyncio.create_task(loop())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    sim.log.close()


def build_app(sim: Simulator) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[SIM_KEY] = sim
    app.cleanup_ctx.append(_flush_periodically)

    async def stop_hangs(app: web.Application) -> None:
        sim.stopping_event().set()

    app.on_shutdown.append(stop_hangs)
    r = app.router
    r.add_get("/health", _health)
    r.add_post("/_sim/flush", _flush)
    r.add_post("/_sim/reset", _reset)
    r.add_post("/_sim/batches/advance", _advance_batches)
    for prefix in ("", "/openai"):
        r.add_post(f"{prefix}/v1/chat/completions", _protocol_handler(_CHAT))
        r.add_post(f"{prefix}/v1/responses", _protocol_handler(_RESPONSES))
        r.add_post(f"{prefix}/v1/files", _with_sim(openai_batch.files_create))
        r.add_get(prefix + "/v1/files/{file_id}", _with_sim(openai_batch.files_retrieve))
        r.add_get(prefix + "/v1/files/{file_id}/content", _with_sim(openai_batch.files_content))
        r.add_post(f"{prefix}/v1/batches", _with_sim(openai_batch.batches_create))
        r.add_get(f"{prefix}/v1/batches", _with_sim(openai_batch.batches_list))
        r.add_get(prefix + "/v1/batches/{batch_id}", _with_sim(openai_batch.batches_retrieve))
        r.add_post(prefix + "/v1/batches/{batch_id}/cancel", _with_sim(openai_batch.batches_cancel))
    for prefix in ("", "/anthropic"):
        r.add_post(f"{prefix}/v1/messages", _protocol_handler(_MESSAGES))
        batches = f"{prefix}/v1/messages/batches"
        r.add_post(batches, _with_sim(anthropic_batch.create))
        r.add_get(batches, _with_sim(anthropic_batch.list_batches))
        r.add_get(batches + "/{batch_id}", _with_sim(anthropic_batch.retrieve))
        r.add_post(batches + "/{batch_id}/cancel", _with_sim(anthropic_batch.cancel))
        r.add_get(batches + "/{batch_id}/results", _with_sim(anthropic_batch.results))
    for prefix in ("", "/openai", "/anthropic"):
        r.add_get(f"{prefix}/v1/models", _shared_models)
        r.add_get(prefix + "/v1/models/{model}", _shared_models)
    for prefix in ("", "/gemini"):
        r.add_post(prefix + "/{version:v1|v1beta}/models/{name}", _gemini_model_action)
        r.add_get(prefix + "/{version:v1|v1beta}/models", _gemini_models)
        r.add_get(prefix + "/{version:v1|v1beta}/models/{name}", _gemini_models)
        r.add_get(prefix + "/{version:v1|v1beta}/batches", _with_sim(gemini_batch.list_batches))
        r.add_get(
            prefix + "/{version:v1|v1beta}/batches/{name}", _with_sim(gemini_batch.batch_action)
        )
        r.add_post(
            prefix + "/{version:v1|v1beta}/batches/{name}", _with_sim(gemini_batch.batch_action)
        )
    return app


class SimulatorServer:
    """Runs the app on the current event loop; ``start`` returns the bound URL."""

    def __init__(
        self, config: SimulatorConfig, key: AnswerKey, log_path: str | None = None
    ) -> None:
        self.config = config
        self.simulator = Simulator(config, key, log_path)
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> str:
        app = build_app(self.simulator)
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,  # a client timeout ends a hang at once
            shutdown_timeout=2.0,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port, backlog=1024)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://{self.config.host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            self.simulator.stopping_event().set()
            await self._runner.cleanup()
            self._runner = None
