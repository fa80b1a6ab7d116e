"""The runner's live view (rich): done/total, each environment's task, success so far and an ETA.

A line per finished task either way (above the live table on a terminal, alone otherwise); --quiet
prints nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from symphony_mcp.bench.runner import RunObserver
from symphony_mcp.bench.types import BenchTask, TaskEvaluation
from symphony_mcp.orchestrator.terminal import styled


class Progress:
    """Counts what finished and what runs where; renders itself for rich."""

    def __init__(self, total: int, environments: list[str]) -> None:
        self.total = total
        self.done = 0
        self.successes = 0
        self.running: dict[str, BenchTask | None] = dict.fromkeys(environments)
        self.started = time.monotonic()

    def start(self, environment: str, task: BenchTask) -> None:
        self.running[environment] = task

    def finish(self, evaluation: TaskEvaluation) -> None:
        self.done += 1
        self.successes += evaluation.score >= 1.0
        self.running[evaluation.environment] = None

    def eta_seconds(self) -> float | None:
        """Remaining tasks at the pace so far (None before the first task ends)."""
        if not self.done:
            return None
        return (time.monotonic() - self.started) / self.done * (self.total - self.done)

    def headline(self) -> str:
        rate = f"{self.successes / self.done:.0%}" if self.done else "—"
        eta = self.eta_seconds()
        eta_text = "—" if eta is None else f"{eta:.0f} s"
        return f"{self.done}/{self.total} done · success {self.successes}/{self.done} ({rate}) · ETA {eta_text}"

    def __rich__(self) -> Group:
        table = Table(expand=True)
        table.add_column("environment", no_wrap=True)
        table.add_column("task")
        for environment, task in self.running.items():
            where = styled(f"{task.domain}/{task.task_id}") if task else styled("idle", "dim")
            table.add_row(styled(environment), where)
        return Group(styled(self.headline(), "bold"), table)


class ProgressObserver:
    def __init__(self, progress: Progress, console: Console | None) -> None:
        self.progress = progress
        self.console = console  # a line per finished task goes here; None when quiet

    def started(self, environment: str, task: BenchTask) -> None:
        self.progress.start(environment, task)

    def finished(self, evaluation: TaskEvaluation) -> None:
        self.progress.finish(evaluation)
        if self.console is not None:
            why = f" ({evaluation.failure}: {evaluation.message})" if evaluation.failure else ""
            line = (
                f"[{evaluation.environment}] {evaluation.domain}/{evaluation.task_id} score {evaluation.score:g}"
                f"{why} · {self.progress.headline()}"
            )
            self.console.print(styled(line), soft_wrap=True)


@contextmanager
def progress_view(console: Console, total: int, environments: list[str], quiet: bool) -> Iterator[RunObserver]:
    progress = Progress(total, environments)
    if quiet or not console.is_terminal:
        yield ProgressObserver(progress, None if quiet else console)
        return
    with Live(progress, console=console, refresh_per_second=2, transient=False):
        yield ProgressObserver(progress, console)  # finished tasks' lines print above the live table
