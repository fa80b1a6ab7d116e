"""The Ray backend: one actor per environment (num_cpus=1 each), on one machine or a cluster.

Each actor owns its environment (display, folder, adapter) for the whole run, or with `--machines` the one remote
machine it drives (machines.py: no display; its reset command run from the actor's node), and runs the tasks the
driver hands it, one at a time, through the same `run_one` as the local backend, so the results layout,
the evaluation written last, and so resume are the same. The driver keeps the queue (work stealing: an
actor that finishes gets the next task) and writes the summary. On a cluster the results folder must be
the same shared path on every node (the actors and the servers they spawn write into it).

`ray` is an optional extra (`pip install 'symphony-mcp[ray]'`); it is imported only here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from symphony_mcp.bench.environments import started_environment
from symphony_mcp.bench.machines import machine_environment
from symphony_mcp.bench.registry import BenchmarkUnavailableError, load_adapter
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.runner import NoEnvironmentError, Plan, RunObserver, RunResult, run_one
from symphony_mcp.bench.types import BenchTask, TaskEvaluation, brings_own_display
from symphony_mcp.config import Settings

ACTOR_CPUS = 1
log = logging.getLogger(__name__)


class EnvironmentActor:
    """Lives in a Ray worker process: its display is tied to that process (the worker's main thread)."""

    def __init__(self, index: int, request: BenchRequest, settings: Settings, machine: str | None = None) -> None:
        """Environment `env-<index>`: a display of its own, or the remote `machine` (a URL of --machines)."""
        self.settings = settings
        self.loop = asyncio.new_event_loop()  # one loop for the actor's life: adapters may hold loop-bound objects
        self.stack = ExitStack()
        name = f"env-{index}"
        workdir = Path(tempfile.mkdtemp(prefix=f"symphony-bench-{name}-"))  # on the actor's own node
        self.stack.callback(shutil.rmtree, workdir, True)
        self.adapter = load_adapter(request.spec, request.options)
        if machine is not None:
            self.environment = machine_environment(
                index, machine, settings, workdir, request.server_args, request.machine_reset
            )
        else:
            own = brings_own_display(self.adapter)
            self.environment = self.stack.enter_context(
                started_environment(name, settings, workdir, request.server_args, own_display=own)
            )
        self.ready = False

    def setup(self) -> str | None:
        """Prepare the environment; the error's text when it failed (the driver then gives it no tasks)."""
        try:
            self.loop.run_until_complete(self.adapter.setup(self.environment))
        except Exception as exc:
            return f"{self.environment.name}: {type(exc).__name__}: {exc}"
        self.ready = True
        return None

    def run(self, task: BenchTask, results: str) -> TaskEvaluation:
        return self.loop.run_until_complete(run_one(self.adapter, self.environment, task, self.settings, Path(results)))

    def close(self) -> None:
        try:
            if self.ready:
                self.loop.run_until_complete(self.adapter.teardown(self.environment))
            self.loop.run_until_complete(self.adapter.close())
        finally:
            self.stack.close()
            self.loop.close()


def run_ray(request: BenchRequest, plan: Plan, settings: Settings, results: Path, observer: RunObserver) -> RunResult:
    """Run `plan.pending` on min(parallel, tasks) actors, or one per machine of `request.machines` (as many as there
    are tasks); connects to `request.ray_address` or starts Ray."""
    try:
        import ray
    except ImportError as exc:
        raise BenchmarkUnavailableError("the Ray backend needs ray: pip install 'symphony-mcp[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=request.ray_address, include_dashboard=False, log_to_driver=False)
    result = RunResult(plan)
    clock = time.monotonic()
    actor_class: Any = ray.remote(num_cpus=ACTOR_CPUS, max_restarts=0)(EnvironmentActor)
    machines: list[str | None] = [*request.machines[: len(plan.pending)]]
    if not machines:
        machines = [None] * min(request.parallel, len(plan.pending))
    names = [f"env-{i}" for i in range(len(machines))]
    actors: list[Any] = [actor_class.remote(i, request, settings, machine) for i, machine in enumerate(machines)]
    try:
        errors = ray.get([actor.setup.remote() for actor in actors])
        ready = [(actor, name) for actor, name, error in zip(actors, names, errors, strict=True) if error is None]
        if not ready:
            raise NoEnvironmentError(f"no environment could be set up: {'; '.join(e for e in errors if e)}")
        _dispatch(ray, ready, plan, results, observer, result)
        for closing in [actor.close.remote() for actor in actors]:
            with contextlib.suppress(ray.exceptions.RayError):  # a dead actor has nothing left to close
                ray.get(closing)
    finally:
        for actor in actors:
            ray.kill(actor)
        if started_here:
            ray.shutdown()
    result.seconds = time.monotonic() - clock
    return result


def _dispatch(
    ray: Any, actors: list[tuple[Any, str]], plan: Plan, results: Path, observer: RunObserver, result: RunResult
) -> None:
    """Work stealing: each actor gets the next task as soon as its last one is done.

    A task whose actor died (its node went away, it was killed) is left unfinished (no evaluation: the next
    run runs it) and listed as not run; the others go on without that actor.
    """
    queue = list(reversed(plan.pending))
    running: dict[Any, tuple[Any, str, BenchTask]] = {}

    def hand(actor: Any, name: str) -> None:
        task = queue.pop()
        observer.started(name, task)
        running[actor.run.remote(task, str(results))] = (actor, name, task)

    for actor, name in actors:
        if queue:
            hand(actor, name)
    while running:
        done, _ = ray.wait(list(running), num_returns=1)
        actor, name, task = running.pop(done[0])
        try:
            evaluation: TaskEvaluation = ray.get(done[0])
        except ray.exceptions.RayError as exc:
            log.warning("%s: %s/%s did not finish: %s", name, task.domain, task.task_id, exc)
            result.not_run.append(task)
            if isinstance(exc, ray.exceptions.RayActorError):
                continue  # the actor is gone: it takes no more tasks
        else:
            result.evaluations.append(evaluation)
            observer.finished(evaluation)
        if queue:
            hand(actor, name)
    result.not_run += reversed(queue)
