"""`evalfleet up` / `evalfleet down`: the long-lived stack a team runs evalfleet on.

`up` starts, each in its own session and detached from the terminal, what is not running:

1. the Prefect server (`evalfleet.stack.prefect_server`) and the automation that marks a flow run
   Crashed once its heartbeats stop;
2. with `--ray`, a Ray cluster (`evalfleet.stack.ray_cluster`): a head, with `--ray-nodes N` a head
   that hosts no work and N worker nodes; and warm worker actors every run borrows;
3. what runs the deployments' flow runs (`evalfleet.stack.runners`): one `serve` process, or with
   `--pool` the deployments of `deployments/prefect.yaml` on a process work pool and N
   `prefect worker` processes;
4. the warm launcher of `evalfleet` commands (`evalfleet.cli.launcher`).

It waits until each answers, records what it started in `stack.json` (`evalfleet.stack.state`), and
prints where everything is. A second `up` reports what is running and starts only what is
not (given another store, schedule or runner, or after packages were installed or removed,
it restarts what depends on it). `down`
(`evalfleet.stack.down`) stops exactly the processes recorded. `evalfleet run` attaches to a running
stack instead of starting its own server and Ray head.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from evalfleet.core.checkout import environment_digest, installed_digest
from evalfleet.stack import pidfiles, prefect_server, ray_cluster, runners
from evalfleet.stack.services import ServiceError
from evalfleet.stack.state import (
    Daemon,
    Stack,
    load,
    load_checked,
    save,
    stack_dir,
    stop,
    stop_stale,
)
from evalfleet.storage import store_url

DEPLOYMENT_NAMES = (  # what deployments/serve.py serves and deployments/prefect.yaml declares
    "evaluate-and-aggregate/evaluate",
    "aggregate/aggregate",
    "judge/judge",
    "leaderboard/leaderboard",
    "limits/limits",
    "reevaluate/reevaluate",
    "reevaluate/rerun-ranked",
    "poll-batches/poll-batches",
)


def up(
    *,
    folder: str | None = None,
    port: int | None = None,
    ray: bool = False,
    ray_nodes: int = 0,
    pool: bool = False,
    workers: int = 2,
    store: str | None = None,
    serve_settings: dict[str, str] | None = None,
) -> tuple[Stack, list[str]]:
    """Start what is not running; return the stack and a line per service (started or
    already running). `store` and `serve_settings` (environment for the served deployments:
    the reevaluation's schedule and request) default to what the stack was started with;
    given and different, what runs the flow runs is restarted with them."""
    crash_after = prefect_server.crash_after_s()  # a bad value stops `up` before it starts
    path = stack_dir(folder)
    stack = load(path) or _fresh(path)
    notes: dict[str, str] = {}
    started: list[Daemon] = []
    try:
        _bring_up(stack, path, port, ray or ray_nodes > 0, ray_nodes, notes, started)
        stack.extras["crash_automation"] = prefect_server.ensure_crash_automation(
            stack.api_url, crash_after
        )
        stack.extras["crash_after_s"] = crash_after
        _run_flows(stack, path, pool, workers, store, serve_settings, notes, started)
        _launch(stack, path, notes, started)
    except BaseException:
        # Nothing this `up` started outlives its failure; what was running before stays.
        for daemon in reversed(started):
            stop(daemon)
        if any(daemon is stack.ray for daemon in started):
            ray_cluster.remove_sessions(path, keep_logs=True)
        _forget(stack, started)
        save(stack)
        raise
    save(stack)
    return stack, describe(stack, notes)


def _fresh(path: Path) -> Stack:
    """A new stack, unless processes an earlier `up` started still run unrecorded (its
    `stack.json` damaged or lost; found by their pid files or the stack's mark): a second
    server and launcher beside them would be unreachable by `down`."""
    _, problem = load_checked(path)
    recorded = pidfiles.alive(path)
    running = [f"{d.name} pid {d.pid}" for d in recorded]
    groups = {d.pid for d in recorded}  # each leads its group: what is in them goes with them
    marked = [pid for pid in sorted(pidfiles.members(path)) if pidfiles.group(pid) not in groups]
    running += [f"pid {pid}" for pid in marked[:3]] + (["..."] if len(marked) > 3 else [])
    if running:
        what = "is damaged" if problem else "is missing"
        pids = ", ".join(running)
        raise ServiceError(
            f"stack.json in {path} {what} while processes `up` started still run ({pids}): "
            "run `evalfleet down` first"
        )
    return Stack(folder=str(path), store="")


def _bring_up(
    stack: Stack,
    path: Path,
    port: int | None,
    ray: bool,
    ray_nodes: int,
    notes: dict[str, str],
    started: list[Daemon],
) -> None:
    if stack.prefect and stack.prefect.alive() and prefect_server.prefect_healthy(stack.api_url):
        notes["prefect"] = "already running"
    else:
        notes["prefect"] = "started"
        stack.prefect = prefect_server.start_prefect(path, port)
        started.append(stack.prefect)
        _stop_runners(stack)  # they talk to the server that was
        save(stack)
    if not ray:
        notes["ray"] = "already running" if stack.ray and stack.ray.alive() else ""
        return
    if stack.ray and stack.ray.alive():
        notes["ray"] = "already running"
    else:
        notes["ray"] = "started"
        for node in stack.ray_nodes:  # nodes of a head that is gone
            stop(node)
        stack.ray_nodes = []
        stack.ray_token = secrets.token_hex(32)
        stack.ray = ray_cluster.start_head(path, stack.ray_token, hosts_work=ray_nodes == 0)
        started.append(stack.ray)
        stack.extras["ray_head_hosts_work"] = ray_nodes == 0
        _stop_runners(stack)  # they must be started with RAY_ADDRESS
        save(stack)
    stack.ray_nodes = [n for n in stack.ray_nodes if n.alive()]
    new_nodes = False
    while len(stack.ray_nodes) < ray_nodes:
        index = max((int(n.name.rsplit(" ", 1)[1]) for n in stack.ray_nodes), default=0) + 1
        node = ray_cluster.start_node(path, stack.ray.address, stack.ray_token, index)
        stack.ray_nodes.append(node)
        started.append(node)
        new_nodes = True
        save(stack)
    if notes["ray"] == "started" or new_nodes:
        ray_cluster.start_warm_workers(path, stack.ray.address, stack.ray_token)


def _run_flows(
    stack: Stack,
    path: Path,
    pool: bool,
    workers: int,
    store: str | None,
    serve_settings: dict[str, str] | None,
    notes: dict[str, str],
    started: list[Daemon],
) -> None:
    """The serve process, or the work pool's workers (`--pool`)."""
    store = store_url(store or stack.store or None)
    settings = serve_settings or stack.extras.get("serve_settings") or {}
    same = store == stack.store and settings == stack.extras.get("serve_settings", {})
    installed = installed_digest()  # another package's benchmarks are the form's choices too
    same = same and stack.extras.get("installed") == installed
    env = runners.runner_env(stack.api_url, store, stack.ray, stack.ray_token)
    if pool:
        stop_stale(stack.serve)
        stack.serve = None
        alive = [w for w in stack.workers if w.alive()]
        if same and stack.pool == runners.POOL and len(alive) >= workers:
            notes["runners"] = "already running"
            stack.workers = alive
            return
        notes["runners"] = "restarted with the new settings" if alive else "started"
        for worker in alive:
            stop(worker)
        stack.workers, stack.pool, stack.store = [], runners.POOL, store
        stack.extras.update(serve_settings=settings, installed=installed)
        save(stack)
        runners.apply_deployments(path, env)
        for index in range(1, workers + 1):
            worker = runners.start_pool_worker(path, env, index)
            stack.workers.append(worker)
            started.append(worker)
            save(stack)
        return
    for worker in stack.workers:  # serve replaces a pool's workers
        stop(worker)
    stack.workers, stack.pool = [], ""
    serving = stack.serve and stack.serve.alive() and stack.serve.address == stack.api_url
    if serving and same:
        notes["runners"] = "already running"
        return
    notes["runners"] = "restarted with the new settings" if serving else "started"
    stop_stale(stack.serve)
    stack.store = store
    stack.extras.update(serve_settings=settings, installed=installed)
    save(stack)  # what is up so far, should serve fail to start
    stack.serve = runners.start_serve(path, env, settings)
    started.append(stack.serve)


def _launch(stack: Stack, path: Path, notes: dict[str, str], started: list[Daemon]) -> None:
    """The warm launcher, started again when the code (or a package installed beside it), the
    store or the cluster changed."""
    code = environment_digest()
    wanted = {"code": code, "store": stack.store, "ray": stack.ray.address if stack.ray else ""}
    if stack.launcher and stack.launcher.alive() and stack.extras.get("launcher") == wanted:
        notes["launcher"] = "already running"
        return
    notes["launcher"] = "started" if not stack.launcher else "restarted"
    stop_stale(stack.launcher)
    env = runners.runner_env(stack.api_url, stack.store, stack.ray, stack.ray_token)
    stack.launcher = runners.start_launcher(path, env)
    stack.extras["launcher"] = wanted
    started.append(stack.launcher)


def _stop_runners(stack: Stack) -> None:
    for daemon in (stack.serve, stack.launcher, *stack.workers):
        stop_stale(daemon)
    stack.serve, stack.launcher, stack.workers = None, None, []


def _forget(stack: Stack, gone: list[Daemon]) -> None:
    ids = {id(d) for d in gone}
    for name in ("prefect", "serve", "ray", "launcher"):
        if id(getattr(stack, name)) in ids:
            setattr(stack, name, None)
    stack.workers = [w for w in stack.workers if id(w) not in ids]
    stack.ray_nodes = [n for n in stack.ray_nodes if id(n) not in ids]


def describe(stack: Stack, notes: dict[str, str] | None = None) -> list[str]:
    notes = notes or {}

    def line(label: str, text: str, note: str | None = "") -> str:
        return f"  {label:<14} {text}   {note or ''}".rstrip()

    lines = [f"evalfleet stack (state in {stack.folder})"]
    if stack.prefect:
        lines.append(
            line(
                "Prefect UI",
                f"{stack.prefect.address}   API {stack.api_url}   pid {stack.prefect.pid}",
                notes.get("prefect", ""),
            )
        )
    names = ", ".join(DEPLOYMENT_NAMES)
    if stack.serve:
        lines.append(
            line("deployments", f"{names}   served by pid {stack.serve.pid}", notes.get("runners"))
        )
    if stack.workers:
        pids = ", ".join(str(w.pid) for w in stack.workers)
        lines.append(line("deployments", f"{names}   on work pool {stack.pool}"))
        lines.append(
            line("pool workers", f"{len(stack.workers)} (pids {pids})", notes.get("runners"))
        )
    if stack.ray:
        hosts = stack.extras.get("ray_head_hosts_work", True)
        role = "" if hosts else " (hosts no work)"
        lines.append(
            line(
                "Ray head",
                f"{stack.ray.address}   pid {stack.ray.pid}{role}",
                notes.get("ray", ""),
            )
        )
        for node in stack.ray_nodes:
            lines.append(line(node.name, f"pid {node.pid}"))
    else:
        lines.append(line("Ray", "one local instance per flow run (`up --ray` shares one)"))
    if stack.launcher:
        lines.append(
            line(
                "launcher",
                f"`evalfleet` commands start warm (pid {stack.launcher.pid})",
                notes.get("launcher", ""),
            )
        )
    lines.append(line("store", f"{stack.store} (the run form's default)"))
    lines.append(line("logs", f"{stack.folder}/*.log"))
    lines.append("`evalfleet run` uses this stack while it is up; `evalfleet down` stops it.")
    return lines


def attach(folder: str | None = None) -> Stack | None:
    """The running stack, if `up` started one that still answers; None otherwise."""
    try:
        path = stack_dir(folder)
    except OSError:
        return None
    stack = load(path)
    if stack is None or not stack.prefect or not stack.prefect.alive():
        return None
    if not prefect_server.prefect_healthy(stack.api_url):
        return None
    if stack.ray is not None and not stack.ray.alive():
        stack.ray = None
    return stack


def ray_client_env(stack: Stack) -> dict[str, str]:
    """What a process sets before importing Ray to join the stack's head."""
    return ray_cluster.ray_client_env(stack.ray.address, stack.ray_token) if stack.ray else {}
