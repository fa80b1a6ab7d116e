"""OSWorld tasks scored in a fresh environment of this host by OSWorld's own getters and metrics, as an agent run
that said done: left alone, or after what an agent's code does there as the task user."""

from __future__ import annotations

import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.bench.types import BenchTask, Environment, TaskFilter
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer
from symphony_mcp.orchestrator.records import RunRecord


def said_done(task: BenchTask, folder: Path) -> TaskOutcome:
    """The outcome of an agent run that said the task is done, with nothing else to show: what evaluate is given."""
    record = RunRecord(task_id=task.task_id, instruction=str(task.instruction), started_at=time.time(), max_steps=1)
    record.outcome = "success"
    return TaskOutcome(task.task_id, "success", False, folder, record, [])


async def score(adapter: OSWorldAdapter, environment: Environment, task: BenchTask, solution: str | None) -> str:
    """Reset the task in a fresh environment, run `solution` there as the task user when given, then score it:
    the verdict's value and detail, e.g. "1 exact_match('true') = 1"."""
    await adapter.reset(environment, task)
    if solution is not None:
        sandbox = adapter._sandboxes[environment.name]
        done = subprocess.run(
            sandbox.command(["bash", "-c", solution]), env=sandbox.env(), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    verdict = await adapter.evaluate(environment, task, said_done(task, environment.workdir))
    return f"{verdict.value:g} {verdict.detail}"


@dataclass(frozen=True)
class TaskRun:
    """One task of a task folder and the environment it is scored in, again and again."""

    adapter: OSWorldAdapter
    environment: Environment
    task: BenchTask

    async def score(self, solution: str | None) -> str:
        return await score(self.adapter, self.environment, self.task, solution)

    @property
    def sandbox(self) -> Sandbox:
        """The environment's machine as the last reset left it."""
        return self.adapter._sandboxes[self.environment.name]


@asynccontextmanager
async def task_run(tasks: Path, task_id: str, workdir: Path) -> AsyncIterator[TaskRun]:
    """Task `task_id` of the folder `tasks`, runnable here, with one environment in `workdir`; ended after."""
    adapter = OSWorldAdapter(tasks)
    [task] = adapter.list_tasks(TaskFilter(task_ids=(task_id,)))
    assert task.skip_reason is None, task.skip_reason
    try:
        yield TaskRun(adapter, Environment("env-0", "", workdir, SpawnServer()), task)
    finally:
        await adapter.close()


async def idle_and_solved(tasks: Path, task_id: str, workdir: Path, idle: str | None, solution: str) -> tuple[str, str]:
    """Task `task_id` scored twice, each after a reset: with only `idle` run (what lets the check see the app, such as
    waiting for its window; None: nothing), then with `solution` run."""
    async with task_run(tasks, task_id, workdir) as run:
        return await run.score(idle), await run.score(solution)
