"""The benchmark contract: what an adapter (MiniWoB++, OSWorld, ...) provides and what the runner records.

The agent side is always the bundled orchestrator over MCP (`orchestrator.api.run_task`), so any model
endpoint and any setting apply. An adapter only knows its benchmark: which tasks exist, how to prepare the
desktop of one environment for a task, and how the benchmark itself scores the end state.

An environment is one parallel slot: its own X display (Xvfb; none when the adapter brings its own,
`brings_own_display`) and working folder; the runner spawns a
symphony-mcp server on that display for each task (`Environment.server`, as `Adapter.server` says: OSWorld's
adapter starts it inside the environment's sandbox, as the task user). Adapters act on the display named
in `Environment.display` (setting DISPLAY for the programs they start), never on the runner's own.
With `bench --machines URL,...` an environment is a remote machine instead (`Environment.machine`, its
controller's URL; no display here): the adapter's server drives it through a remote desktop backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer
from symphony_mcp.orchestrator.records import Outcome

SCORE_FILE = "result.txt"  # OSWorld's layout: the task's score as text, in the task's folder
EVALUATION_FILE = "evaluation.json"  # written last and atomically: a task with it is finished


@dataclass(frozen=True)
class BenchTask:
    """One task of a benchmark, as listed (before any desktop is prepared)."""

    benchmark: str
    domain: str  # OSWorld's domain (os, chrome, ...); MiniWoB++'s task family
    task_id: str  # unique within the benchmark; a directory name (limits.TASK_ID_PATTERN)
    instruction: str | None = None  # when known before reset (OSWorld); None when reset makes it (MiniWoB++)
    skip_reason: str | None = None  # listed but not runnable here (network, GNOME, proprietary app): why
    infeasible: bool = False  # the right answer is to say it cannot be done (OSWorld's "infeasible" tasks)
    data: dict[str, Any] = field(default_factory=dict)  # the adapter's own (the task JSON, a seed)


@dataclass(frozen=True)
class TaskFilter:
    """Which tasks a run takes: ids (exact), domains, or the adapter's documented default subset."""

    task_ids: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    everything: bool = False  # the whole task list instead of the default subset


@dataclass(frozen=True)
class Environment:
    """One parallel slot: a display of its own, a folder of its own, and how to start a server on it."""

    name: str  # env-0, env-1, ...
    display: str  # e.g. ":42"; "" when the adapter brings its own (brings_own_display)
    workdir: Path
    server: SpawnServer  # `symphony-mcp serve` on this display (run_task spawns it per task)
    view_url: str | None = None  # the display's live view in a browser (settings.view), when on
    machine: str | None = None  # a remote machine's controller URL (bench --machines); then `display` is unused
    machine_reset: str | None = None  # the user's command that reverts the machine before each task (machines.py)

    def env(self) -> dict[str, str]:
        """Environment variables for programs an adapter starts on this environment's display."""
        return {"DISPLAY": self.display}


class Score(BaseModel):
    """The benchmark's own verdict on one task's end state."""

    value: float = Field(ge=0.0, le=1.0)
    detail: str = Field("", description="how it was scored: the metric, what it compared, why it failed")


FailureReason = Literal[
    "scored_zero",  # the agent finished but the benchmark's metric says no
    "agent_failed",  # the agent said fail (or ran out of steps)
    "agent_error",  # the model, server or screen failed during the run
    "setup_error",  # reset could not prepare the desktop
    "evaluation_error",  # the metric could not be computed
]


class TaskEvaluation(BaseModel):
    """What the runner keeps per task (EVALUATION_FILE) and the summary aggregates."""

    benchmark: str
    domain: str
    task_id: str
    instruction: str | None
    score: float
    detail: str = ""
    outcome: Outcome | None = None  # the orchestrator's own view
    failure: FailureReason | None = None
    message: str = ""
    steps: int = 0
    tokens: dict[str, int] = Field(default_factory=dict, description="total tokens per model role")
    model_seconds: dict[str, float] = Field(default_factory=dict, description="model time per role")
    reset_seconds: float = 0.0
    run_seconds: float = 0.0
    evaluate_seconds: float = 0.0
    environment: str = ""
    started_at: float = 0.0
    ended_at: float = 0.0


class Adapter(Protocol):
    """A benchmark. The runner calls setup once per environment, then reset -> run -> evaluate per task."""

    name: str
    title: str  # the benchmark's own name, as its summary names it (e.g. "OSWorld")

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        """The tasks selected, skipped ones included (with skip_reason), in a stable order."""
        ...

    async def setup(self, environment: Environment) -> None:
        """Prepare an environment once, before its first task (start a browser, create a user's folders)."""
        ...

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        """Prepare the desktop as the task requires; returns the instruction the agent gets."""
        ...

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        """How the task's server starts, after reset: `server` as is, or inside what reset prepared (OSWorld's
        sandboxed environment runs it there, as its task user)."""
        ...

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        """Score the end state with the benchmark's own rules (after the agent's run)."""
        ...

    async def teardown(self, environment: Environment) -> None:
        """Undo setup (close what it started); the environment's display is stopped by the runner."""
        ...

    async def close(self) -> None: ...


def brings_own_display(adapter: object) -> bool:
    """Whether an adapter's environments have displays of their own (its optional `brings_own_display` attribute,
    e.g. OSWorld's sandbox starts its Xvfb inside at every reset): the runner then starts none for them, and its
    environments' `display` is empty."""
    return getattr(adapter, "brings_own_display", False) is True


@runtime_checkable
class ExplainsListing(Protocol):
    """An adapter whose task set is a choice (OSWorld's test_all.json) says what it covers and leaves out."""

    def listing_notes(self) -> list[str]:
        """Lines about the last listing: the task list used, and what else was found and why it is not listed."""
        ...


@runtime_checkable
class DrivesMachines(Protocol):
    """An adapter whose environments are remote machines (`bench --machines URL,...`, one environment each, no
    display here), reset before each task by the user's `--machine-reset` command when one is given (machines.py).
    What differs per benchmark is said here: the URLs it takes, how a machine is known to be up again, and what its
    figures cover."""

    machine_schemes: tuple[str, ...]  # the URL schemes of its machines (http, https; ssh)
    machine_note: str  # the summary's word on the tasks its machines run (e.g. "the tasks whose checks are ...")

    def wait_for_machine(self, environment: Environment, timeout: float) -> None:
        """Block until the environment's machine answers again after its reset (its controller, its SSH login);
        raise when it does not within `timeout` seconds."""
        ...
