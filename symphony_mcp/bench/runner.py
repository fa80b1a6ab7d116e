"""Run a benchmark's tasks on N environments in parallel: reset -> the bundled orchestrator -> evaluate.

Each environment takes the next task from one queue, so a slow task holds only its own slot. Per task
the phases are timed and each failure (reset, agent, evaluation) is recorded in the task's evaluation
with its reason; it never stops the run. A task's evaluation is written last, so a killed runner loses
at most its tasks in flight, and a rerun runs exactly the tasks without one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from symphony_mcp.bench.environments import server_for_task
from symphony_mcp.bench.machines import reset_machine
from symphony_mcp.bench.results_layout import domain_dir, read_evaluation, task_dir, write_evaluation
from symphony_mcp.bench.types import (
    Adapter,
    BenchTask,
    DrivesMachines,
    Environment,
    FailureReason,
    TaskEvaluation,
    TaskFilter,
)
from symphony_mcp.config import Settings
from symphony_mcp.errors import SymphonyError, clip_message
from symphony_mcp.orchestrator.api import TaskOutcome, run_task
from symphony_mcp.orchestrator.records import CLAIMED_DONE

log = logging.getLogger(__name__)


class RunObserver(Protocol):
    """Told when an environment starts and finishes a task (the live view, log lines)."""

    def started(self, environment: str, task: BenchTask) -> None: ...

    def finished(self, evaluation: TaskEvaluation) -> None: ...


class NoObserver:
    def started(self, environment: str, task: BenchTask) -> None:
        pass

    def finished(self, evaluation: TaskEvaluation) -> None:
        pass


@dataclass
class Plan:
    """The selected tasks split three ways: to run, finished earlier (resume), and skipped (with reasons)."""

    benchmark: str
    pending: list[BenchTask]
    earlier: list[TaskEvaluation]
    skipped: list[BenchTask]
    title: str = ""  # the benchmark's own name
    infeasible: int = 0  # runnable tasks (pending or earlier) whose right answer is to say they cannot be done


@dataclass
class RunResult:
    plan: Plan
    evaluations: list[TaskEvaluation] = field(default_factory=list)  # this run's
    not_run: list[BenchTask] = field(default_factory=list)  # left when every environment failed its setup
    seconds: float = 0.0


class NoEnvironmentError(SymphonyError):
    """Every environment failed its setup: nothing could run."""


def make_plan(adapter: Adapter, selection: TaskFilter, results: Path, force: bool) -> Plan:
    tasks = adapter.list_tasks(selection)
    if selection.task_ids:
        unknown = set(selection.task_ids) - {t.task_id for t in tasks}
        if unknown:
            raise SymphonyError(f"no such task in {adapter.name}: {', '.join(sorted(unknown))}")
    pending, earlier, skipped = [], [], []
    for task in tasks:
        if task.skip_reason is not None:
            skipped.append(task)
        elif not force and (evaluation := read_evaluation(task_dir(results, task))) is not None:
            earlier.append(evaluation)
        else:
            pending.append(task)
    infeasible = sum(t.infeasible for t in tasks if t.skip_reason is None)
    return Plan(adapter.name, pending, earlier, skipped, adapter.title, infeasible)


async def run_local(
    adapter: Adapter,
    environments: Sequence[Environment],
    plan: Plan,
    settings: Settings,
    results: Path,
    observer: RunObserver | None = None,
) -> RunResult:
    """Run `plan.pending` on `environments` (already started), one worker per environment."""
    observer = observer or NoObserver()
    result = RunResult(plan)
    queue: asyncio.Queue[BenchTask] = asyncio.Queue()
    for task in plan.pending:
        queue.put_nowait(task)
    started = time.monotonic()
    setup_errors: list[str] = []

    async def worker(environment: Environment) -> None:
        try:
            await adapter.setup(environment)
        except Exception as exc:
            log.warning("%s: setup failed; it takes no tasks", environment.name, exc_info=True)
            setup_errors.append(f"{environment.name}: {_describe(exc)}")
            return
        try:
            while not queue.empty():
                task = queue.get_nowait()
                observer.started(environment.name, task)
                evaluation = await run_one(adapter, environment, task, settings, results)
                result.evaluations.append(evaluation)
                observer.finished(evaluation)
        finally:
            try:
                await adapter.teardown(environment)
            except Exception:
                log.warning("%s: teardown failed", environment.name, exc_info=True)

    async with asyncio.TaskGroup() as group:
        for environment in environments:
            group.create_task(worker(environment))
    result.not_run = [queue.get_nowait() for _ in range(queue.qsize())]
    result.seconds = time.monotonic() - started
    if result.not_run and len(setup_errors) == len(environments):
        raise NoEnvironmentError(f"no environment could be set up: {'; '.join(setup_errors)}")
    return result


async def run_one(
    adapter: Adapter, environment: Environment, task: BenchTask, settings: Settings, results: Path
) -> TaskEvaluation:
    """One task start to end; its evaluation is written to its folder before it is returned."""
    evaluation = TaskEvaluation(
        benchmark=task.benchmark,
        domain=task.domain,
        task_id=task.task_id,
        instruction=task.instruction,
        score=0.0,
        environment=environment.name,
        started_at=time.time(),
    )
    clock = time.monotonic()
    try:
        if isinstance(adapter, DrivesMachines):  # a remote machine's revert, when the user gave one
            await asyncio.to_thread(reset_machine, environment, adapter.wait_for_machine)
        evaluation.instruction = await adapter.reset(environment, task)
    except Exception as exc:
        _failed(evaluation, "setup_error", exc, task)
    evaluation.reset_seconds = _since(clock)
    outcome = None
    if evaluation.failure is None:
        assert evaluation.instruction is not None
        clock = time.monotonic()
        try:
            outcome = await _run_agent(adapter, environment, task, evaluation.instruction, settings, results)
        except Exception as exc:
            _failed(evaluation, "agent_error", exc, task)
        evaluation.run_seconds = _since(clock)
    if outcome is not None:
        _account(evaluation, outcome)
        clock = time.monotonic()
        try:
            score = await adapter.evaluate(environment, task, outcome)
        except Exception as exc:
            _failed(evaluation, "evaluation_error", exc, task)
        else:
            evaluation.score, evaluation.detail = score.value, score.detail
            evaluation.failure = _verdict(score.value, outcome)
            if evaluation.failure == "scored_zero":  # the agent's done was its own word; the benchmark's reason
                evaluation.message = score.detail or "the benchmark's metric scored 0"
        evaluation.evaluate_seconds = _since(clock)
    evaluation.ended_at = time.time()
    write_evaluation(task_dir(results, task), evaluation)
    return evaluation


async def _run_agent(
    adapter: Adapter, environment: Environment, task: BenchTask, instruction: str, settings: Settings, results: Path
) -> TaskOutcome:
    folder = domain_dir(results, task)
    folder.mkdir(parents=True, exist_ok=True)
    orchestrator = settings.orchestrator.model_copy(update={"results_dir": folder})
    return await run_task(
        instruction,
        settings=settings.model_copy(update={"orchestrator": orchestrator}),
        task_id=task.task_id,
        connection=adapter.server(environment, server_for_task(environment, folder)),
        force=True,  # not finished by the runner's rule (no evaluation): an earlier attempt is set aside
    )


def _account(evaluation: TaskEvaluation, outcome: TaskOutcome) -> None:
    record = outcome.record
    evaluation.outcome = outcome.outcome
    evaluation.steps = len(record.steps)
    evaluation.message = record.message or ""
    evaluation.tokens = {role: usage.total_tokens for role, usage in record.usage.items()}
    evaluation.model_seconds = {role: round(usage.model_ms / 1000, 3) for role, usage in record.usage.items()}


def _verdict(score: float, outcome: TaskOutcome) -> FailureReason | None:
    """Why a task did not score 1 (a partial score is no failure); the benchmark's score decides."""
    if score > 0:
        return None
    if outcome.outcome in CLAIMED_DONE:
        return "scored_zero"
    return "agent_failed" if outcome.outcome == "fail" else "agent_error"


def _failed(evaluation: TaskEvaluation, reason: FailureReason, exc: Exception, task: BenchTask) -> None:
    log.warning("%s/%s: %s", task.domain, task.task_id, reason, exc_info=exc)
    evaluation.failure = reason
    evaluation.message = _describe(exc)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return clip_message(text if isinstance(exc, SymphonyError) else f"{type(exc).__name__}: {text}")


def _since(clock: float) -> float:
    return round(time.monotonic() - clock, 3)
