"""summary.json of a benchmark run: success per domain and overall, steps, tokens and time per role,
failures by reason, and the skipped tasks with their reasons (listed, never counted in a rate).

A task succeeds when the benchmark scores it 1; `mean_score` is OSWorld's figure (partial scores count).
The summary covers the whole selection: tasks finished in earlier runs (resume) count like this run's.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from symphony_mcp.bench.types import BenchTask, TaskEvaluation

SUMMARY_FILE = "summary.json"


class Tally(BaseModel):
    """Success figures of a set of finished tasks."""

    finished: int = 0
    successes: int = 0
    success_rate: float | None = None
    mean_score: float | None = None
    steps: int = 0
    failures: dict[str, int] = Field(default_factory=dict, description="tasks per failure reason")


class DomainTally(Tally):
    domain: str


class SkippedTask(BaseModel):
    domain: str
    task_id: str
    reason: str


class TaskRow(BaseModel):
    """One finished task as the summary page lists it."""

    domain: str
    task_id: str
    instruction: str | None
    score: float
    outcome: str | None
    failure: str | None
    message: str
    steps: int
    environment: str
    seconds: float


class BenchSummary(BaseModel):
    benchmark: str
    written_at: float
    overall: Tally
    domains: list[DomainTally]
    tasks: list[TaskRow]
    skipped: list[SkippedTask]
    not_run: list[str] = Field(default_factory=list, description="selected but never started (no environment)")
    tokens: dict[str, int] = Field(default_factory=dict, description="total tokens per model role")
    model_seconds: dict[str, float] = Field(default_factory=dict, description="model time per role")
    phase_seconds: dict[str, float] = Field(default_factory=dict, description="reset, run, evaluate: totals")
    scope: str = Field(
        "", description="what the figures cover: the benchmark's tasks this machine runs, never the benchmark's score"
    )
    wall_seconds: float = Field(0.0, description="this run's wall time")
    ran_now: int = Field(0, description="tasks run by this run (the others finished earlier)")


def summarise(
    benchmark: str,
    evaluations: Iterable[TaskEvaluation],
    skipped: Iterable[BenchTask],
    not_run: Iterable[BenchTask] = (),
    wall_seconds: float = 0.0,
    ran_now: int = 0,
    scope: str = "",
) -> BenchSummary:
    rows = sorted(evaluations, key=lambda e: (e.domain, e.task_id))
    domains = sorted({e.domain for e in rows})
    tokens: Counter[str] = Counter()
    model_seconds: Counter[str] = Counter()
    for e in rows:
        tokens.update(e.tokens)
        model_seconds.update(e.model_seconds)
    return BenchSummary(
        benchmark=benchmark,
        written_at=time.time(),
        overall=_tally(rows),
        domains=[DomainTally(domain=d, **_tally([e for e in rows if e.domain == d]).model_dump()) for d in domains],
        tasks=[_row(e) for e in rows],
        skipped=[SkippedTask(domain=t.domain, task_id=t.task_id, reason=t.skip_reason or "") for t in skipped],
        not_run=[f"{t.domain}/{t.task_id}" for t in not_run],
        tokens=dict(tokens),
        model_seconds={role: round(s, 3) for role, s in model_seconds.items()},
        phase_seconds={
            phase: round(sum(getattr(e, f"{phase}_seconds") for e in rows), 3) for phase in ("reset", "run", "evaluate")
        },
        wall_seconds=round(wall_seconds, 3),
        ran_now=ran_now,
        scope=scope,
    )


@dataclass(frozen=True)
class MachineScope:
    """A run on remote machines (bench --machines): how many, whether a command reset them before each task, and the
    adapter's word on which tasks they run (DrivesMachines.machine_note)."""

    machines: int
    reset: bool
    note: str


def scope_of(title: str, runnable: int, listed: int, infeasible: int, machines: MachineScope | None = None) -> str:
    """The subset a run's figures cover, said so that nobody takes them for the benchmark's own score."""
    if machines is not None:
        reset = (
            "each reset before every task"
            if machines.reset
            else "machines NOT reset between tasks: a task starts where the last one left"
        )
        return (
            f"{title} on {machines.machines} machine{'s' if machines.machines != 1 else ''}: {runnable} of {listed} "
            f"tasks, {infeasible} infeasible ({machines.note}; {reset}; not {title}'s score)"
        )
    return (
        f"{title} local: {runnable} of {listed} tasks, {infeasible} infeasible "
        f"(the selected tasks this machine can run; not {title}'s score)"
    )


def write_summary(directory: Path, summary: BenchSummary) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SUMMARY_FILE
    tmp = path.with_name(f".{SUMMARY_FILE}.tmp")
    tmp.write_text(summary.model_dump_json(indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_summary(directory: Path) -> BenchSummary:
    return BenchSummary.model_validate_json((directory / SUMMARY_FILE).read_bytes())


def _tally(rows: list[TaskEvaluation]) -> Tally:
    successes = sum(e.score >= 1.0 for e in rows)
    return Tally(
        finished=len(rows),
        successes=successes,
        success_rate=successes / len(rows) if rows else None,
        mean_score=sum(e.score for e in rows) / len(rows) if rows else None,
        steps=sum(e.steps for e in rows),
        failures=dict(Counter(e.failure for e in rows if e.failure)),
    )


def _row(e: TaskEvaluation) -> TaskRow:
    return TaskRow(
        domain=e.domain,
        task_id=e.task_id,
        instruction=e.instruction,
        score=e.score,
        outcome=e.outcome,
        failure=e.failure,
        message=e.message,
        steps=e.steps,
        environment=e.environment,
        seconds=round(e.reset_seconds + e.run_seconds + e.evaluate_seconds, 3),
    )
