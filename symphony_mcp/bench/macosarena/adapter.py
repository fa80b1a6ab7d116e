"""MacOSArena through the runner: one machine per environment, reached over SSH, its tasks' setup commands run there,
the task's symphony-mcp server on the SSH backend acting on it, and the task's own checks (the shell-level ones)
run there afterwards.

Machines are the user's (`machines`: ssh:// URLs, one per parallel environment, e.g. MacOSArena's docker-osx
containers or real Macs). Between tasks a machine is reset by the user's `reset_command` when one is given (run on
this host with MACOSARENA_MACHINE set to the machine's URL, e.g. a script that recreates the container); without
one, a task starts from what the last task on that machine left, and the summary's scope says so.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from symphony_mcp.bench.macosarena.evaluate import evaluate
from symphony_mcp.bench.macosarena.machine import ArenaMachine, MachineAccess, SetupError
from symphony_mcp.bench.macosarena.tasks import BENCHMARK, ArenaTask, listing_notes, load, select
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.config import DesktopSettings
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer

DEFAULT_RESET_SECONDS = 900.0  # a docker-osx container takes minutes to boot
_ENVIRONMENT_INDEX = re.compile(r"env-(\d+)")


def machine_urls(machines: str | Sequence[str]) -> tuple[str, ...]:
    """The machines option: a list, or one text of URLs separated by commas or spaces; each a valid ssh:// URL."""
    urls = tuple(re.split(r"[,\s]+", machines.strip()) if isinstance(machines, str) else machines)
    urls = tuple(url for url in urls if url)
    if not urls:
        raise InvalidInputError("MacOSArena needs machines: --option machines=ssh://user@host:port[,ssh://...]")
    for url in urls:
        DesktopSettings(backend="ssh", url=url)  # the SSH backend's own check of the URL
    if len(set(urls)) != len(urls):
        raise InvalidInputError("a machine is listed twice in machines: each environment needs a machine of its own")
    return urls


class MacOSArenaAdapter:
    """MacOSArena's task JSONs on the user's machines over SSH, scored by the tasks' shell-level checks."""

    name = BENCHMARK
    title = "MacOSArena"

    def __init__(
        self,
        *,
        tasks_dir: Path | str,
        machines: str | Sequence[str],
        known_hosts: Path | str = "~/.ssh/known_hosts",
        key_file: Path | str | None = None,
        python: str = "python3",
        display: str = ":0",
        reset_command: str | None = None,
        reset_seconds: float = DEFAULT_RESET_SECONDS,
    ) -> None:
        self.tasks_dir = Path(tasks_dir).expanduser()
        self.accesses = [
            MachineAccess(
                url,
                Path(known_hosts).expanduser(),
                Path(key_file).expanduser() if key_file else None,
                python,
                display,
            )
            for url in machine_urls(machines)
        ]
        if reset_command is not None and not reset_command.strip():
            raise InvalidInputError("reset_command is empty: give a command, or leave it out")
        self.reset_command = reset_command
        self.reset_seconds = reset_seconds
        self._machines: dict[str, ArenaMachine] = {}
        self._listed: list[BenchTask] = []

    # --- the task list ----------------------------------------------------------------------------------------
    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        self._listed = select(load(self.tasks_dir), selection)
        return self._listed

    def listing_notes(self) -> list[str]:
        runnable = sum(task.skip_reason is None for task in self._listed)
        notes = [f"tasks from {self.tasks_dir}: {runnable} of {len(self._listed)} with shell-level checks run here"]
        return notes + listing_notes(self._listed)

    def scope(self, runnable: int, listed: int, infeasible: int) -> str:
        """What the figures cover: the machines, the tasks with shell-level checks, and how machines were reset."""
        reset = (
            f"machines reset before each task by {self.reset_command!r}"
            if self.reset_command
            else "machines not reset between tasks (no reset_command given): a task starts where the last one left"
        )
        machines = f"{len(self.accesses)} machine{'s' if len(self.accesses) != 1 else ''}"
        return (
            f"MacOSArena on {machines}: {runnable} of {listed} tasks (the tasks whose checks are shell commands; not "
            f"MacOSArena's score); {reset}"
        )

    # --- one environment, one machine -------------------------------------------------------------------------
    def access(self, environment: Environment) -> MachineAccess:
        match = _ENVIRONMENT_INDEX.fullmatch(environment.name)
        index = int(match.group(1)) if match else -1
        if not 0 <= index < len(self.accesses):
            raise SetupError(
                f"no machine for {environment.name}: {len(self.accesses)} machines given; run with --parallel at most "
                f"{len(self.accesses)} or give more machines"
            )
        return self.accesses[index]

    def _machine(self, environment: Environment) -> ArenaMachine:
        machine = self._machines.get(environment.name)
        if machine is None:
            raise SetupError(f"{environment.name} has no machine: setup did not run")
        return machine

    async def setup(self, environment: Environment) -> None:
        machine = ArenaMachine(self.access(environment))
        try:
            await asyncio.to_thread(machine.wait_for_login, 0.0)  # fails now when the machine is unreachable
        except BaseException:
            machine.close()
            raise
        self._machines[environment.name] = machine

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        machine = self._machine(environment)
        arena = ArenaTask.model_validate(task.data["task"])
        await asyncio.to_thread(machine.reset, self.reset_command, self.reset_seconds)
        for line in arena.commands():
            done = await asyncio.to_thread(machine.command, line)
            if done.status != 0:  # MacOSArena's runner never reads the status; a task set up halfway is not run
                raise SetupError(
                    f"setup command {clip(line)} exited with {done.status} on {machine.access.url}: "
                    f"{clip(done.stderr.strip(), 500)}"
                )
        return arena.instruction

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        """The task's server on the SSH backend, acting on this environment's machine."""
        return replace(server, env={**server.env, **self.access(environment).server_env()})

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        arena = ArenaTask.model_validate(task.data["task"])
        return await asyncio.to_thread(evaluate, self._machine(environment), arena)

    async def teardown(self, environment: Environment) -> None:
        machine = self._machines.pop(environment.name, None)
        if machine is not None:
            machine.close()

    async def close(self) -> None:
        for name in list(self._machines):
            self._machines.pop(name).close()
