"""The WindowsAgentArena adapter: WAA's task JSONs run on WAA machines through their servers, one machine per
environment, scored by OSWorld's metric functions over WAA's getters (getters.py).

    symphony-mcp bench waa --option tasks_dir=~/WindowsAgentArena/src/win-arena-container/\
client/evaluation_examples_windows/examples --machines http://10.0.0.5:5000,http://10.0.0.6:5000

(or WAA_TASKS for the task folder). Machines come as for every remote benchmark (bench/machines.py): `--machines`,
one environment each, and `--machine-reset CMD` to revert one before each task, after which the runner waits until
its server answers `/probe`. Per task: WAA's reset (close every window, wait for `/probe`, empty Downloads:
setup.py), the task's setup steps through the server's routes, then the agent's `symphony-mcp serve` on this host
with the WAA backend pointed at the machine (every tool and the code tools act there), then postconfig and the
metrics. Tasks whose steps, getters or metrics cannot run here are listed with the reason (tasks.py).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import anyio.to_thread

from symphony_mcp.bench.machines import wait_for_route
from symphony_mcp.bench.osworld.adapter import said_fail
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.bench.waa.getters import Getting, score
from symphony_mcp.bench.waa.setup import reset_machine, run_steps
from symphony_mcp.bench.waa.tasks import BENCHMARK, INFEASIBLE, load_tasks, select, to_bench_task
from symphony_mcp.desktop.remote.waa_controller import WaaController
from symphony_mcp.errors import SymphonyError
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer

TASKS_VARIABLE = "WAA_TASKS"
READY_ROUTE = "/probe"  # WAA's health check
CACHE_FOLDER = "waa-cache"


class WaaError(SymphonyError):
    """The adapter cannot reach a machine or run a task (no task folder, an environment that is no machine)."""


class WaaAdapter:
    name = BENCHMARK
    title = "WindowsAgentArena"
    machine_schemes = ("http", "https")  # the WAA servers in the Windows VMs (port 5000)
    machine_note = "the selected tasks whose setup, getters and metrics run through this adapter"

    def __init__(
        self,
        tasks_dir: Path | None = None,
        *,
        task_list: Path | None = None,
        timeout: float = 30.0,
    ) -> None:
        folder = tasks_dir or os.environ.get(TASKS_VARIABLE)
        self.tasks_dir = Path(folder).expanduser() if folder else None
        self.task_list = Path(task_list).expanduser() if task_list else None
        self.timeout = timeout
        self._controllers: dict[str, WaaController] = {}

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        if self.tasks_dir is None:
            raise WaaError(
                f"no WAA task folder: set {TASKS_VARIABLE} (or --option tasks_dir=...) to WAA's "
                "evaluation_examples_windows/examples folder"
            )
        if not self.tasks_dir.is_dir():
            raise WaaError(f"no WAA task folder at {self.tasks_dir} (WAA's evaluation_examples_windows/examples)")
        return [to_bench_task(task) for task in select(load_tasks(self.tasks_dir, self.task_list), selection)]

    def wait_for_machine(self, environment: Environment, timeout: float) -> None:
        wait_for_route(self._machine(environment), READY_ROUTE, timeout)

    async def setup(self, environment: Environment) -> None:
        url = self._machine(environment)
        controller = WaaController(url, self.timeout)
        try:
            await anyio.to_thread.run_sync(controller.probe)
        except SymphonyError as exc:
            controller.close()
            raise WaaError(f"{environment.name}: the WAA machine at {url} does not answer /probe: {exc}") from exc
        self._controllers[environment.name] = controller

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        if task.skip_reason:
            raise WaaError(f"task {task.task_id} cannot run here: {task.skip_reason}")
        controller = self._controller(environment)
        await anyio.to_thread.run_sync(reset_machine, controller)
        await anyio.to_thread.run_sync(run_steps, controller, task.data.get("config", []))
        return str(task.data["instruction"])

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        """The agent's server on this host, its desktop and code tools on the environment's machine."""
        remote = {"SYMPHONY_DESKTOP__BACKEND": "waa", "SYMPHONY_DESKTOP__URL": self._machine(environment)}
        return replace(server, env={**server.env, **remote})

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        evaluator = task.data.get("evaluator") or {}
        controller = self._controller(environment)
        await anyio.to_thread.run_sync(run_steps, controller, evaluator.get("postconfig", []))
        failed = said_fail(outcome)
        if evaluator.get("func") == INFEASIBLE:
            if failed:
                return Score(value=1.0, detail="infeasible task: the agent said fail, as it should")
            return Score(value=0.0, detail="infeasible task: the agent did not say fail")
        if failed:
            return Score(value=0.0, detail="the agent said fail on a feasible task")
        getting = Getting(controller, environment.workdir / CACHE_FOLDER / task.task_id)
        return await anyio.to_thread.run_sync(score, evaluator, getting)

    async def teardown(self, environment: Environment) -> None:
        controller = self._controllers.pop(environment.name, None)
        if controller is not None:
            controller.close()

    async def close(self) -> None:
        for name in list(self._controllers):
            self._controllers.pop(name).close()

    def _machine(self, environment: Environment) -> str:
        if environment.machine is None:
            raise WaaError(
                f"{environment.name} is no WAA machine: give the machines with --machines http://VM:5000,..."
            )
        return environment.machine

    def _controller(self, environment: Environment) -> WaaController:
        controller = self._controllers.get(environment.name)
        if controller is None:
            raise WaaError(f"{environment.name} was not set up")
        return controller
