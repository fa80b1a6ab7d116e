"""MacOSArena through the runner: one machine per environment, reached over SSH, its tasks' setup commands run there,
the task's symphony-mcp server on the SSH backend acting on it, and the task's own checks (the shell-level ones)
run there afterwards.

Machines are the user's, given as for every remote benchmark (bench/machines.py): `--machines ssh://user@host:port,...`
(e.g. MacOSArena's docker-osx containers or real Macs), one environment each, no display on this host. Between tasks
a machine is reset by the user's `--machine-reset` command when one is given (e.g. a script that recreates the
container, with `{url}` or `{index}` filled in), after which the runner waits until the machine logs in again;
without one, a task starts from what the last task on that machine left, and the summary's scope says so.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from symphony_mcp.bench.macosarena.evaluate import evaluate
from symphony_mcp.bench.macosarena.machine import ArenaMachine, MachineAccess, SetupError
from symphony_mcp.bench.macosarena.tasks import BENCHMARK, ArenaTask, listing_notes, load, select
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.config import DesktopSettings
from symphony_mcp.errors import clip
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer


class MacOSArenaAdapter:
    """MacOSArena's task JSONs on the user's machines over SSH, scored by the tasks' shell-level checks."""

    name = BENCHMARK
    title = "MacOSArena"
    machine_schemes = ("ssh",)  # ssh://user@host:port, checked further by the SSH backend's settings at setup
    machine_note = "the tasks whose checks are shell commands"

    def __init__(
        self,
        *,
        tasks_dir: Path | str,
        known_hosts: Path | str = "~/.ssh/known_hosts",
        key_file: Path | str | None = None,
        python: str = "python3",
        display: str = ":0",
    ) -> None:
        self.tasks_dir = Path(tasks_dir).expanduser()
        self.known_hosts = Path(known_hosts).expanduser()
        self.key_file = Path(key_file).expanduser() if key_file else None
        self.python, self.display = python, display
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

    # --- one environment, one machine -------------------------------------------------------------------------
    def access(self, environment: Environment) -> MachineAccess:
        """How to reach the environment's machine (its --machines URL, checked as the SSH backend checks it)."""
        if environment.machine is None:
            raise SetupError(f"{environment.name} is no machine: give them with --machines ssh://user@host:port,...")
        try:
            DesktopSettings(backend="ssh", url=environment.machine)
        except ValueError:
            raise SetupError(
                f"the SSH backend logs in with ssh://user@host[:port], got {environment.machine!r}"
            ) from None
        return MachineAccess(environment.machine, self.known_hosts, self.key_file, self.python, self.display)

    def _machine(self, environment: Environment) -> ArenaMachine:
        machine = self._machines.get(environment.name)
        if machine is None:
            raise SetupError(f"{environment.name} has no machine: setup did not run")
        return machine

    def wait_for_machine(self, environment: Environment, timeout: float) -> None:
        """After its reset: log in again (the connection kept from before is closed, the machine may be new)."""
        machine = self._machine(environment)
        machine.close()
        machine.wait_for_login(timeout)

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
