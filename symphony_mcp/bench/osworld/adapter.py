"""The OSWorld adapter: OSWorld task JSONs run on the local desktop, scored by OSWorld's own metrics.

    adapter = OSWorldAdapter(Path("evaluation_examples/examples"))   # or OSWORLD_TASKS=... OSWorldAdapter()
    tasks = adapter.list_tasks(TaskFilter(domains=("os",)))   # skipped ones carry their reason

Per task: reset ends what the last task's setup launched, closes the windows left on the display, puts
the task user's home back (as OSWorld reverts its VM), and runs the task's `config` steps as the task user
on the environment's display; the agent (the bundled orchestrator, its server running as the invoking
user) does the task; evaluate runs the postconfig and OSWorld's getters and metric functions. The default
selection is the `os` domain. Files a task downloads come from a copy of OSWorld's cache (`cache`, or
OSWORLD_CACHE; offline.py), never the network.

All environments share the one task account and its home, so their tasks take turns (turns.py): an
environment holds the home from its reset to its evaluate (or teardown), and the others wait, in this
process or another on the machine.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio.to_thread

from symphony_mcp.bench.osworld.account import TaskUser, find_task_user
from symphony_mcp.bench.osworld.evaluate import evaluate
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE
from symphony_mcp.bench.osworld.setup import SetupRunner
from symphony_mcp.bench.osworld.tasks import BENCHMARK, Host, load_tasks, to_bench_task
from symphony_mcp.bench.osworld.turns import HomeTurns, turn_file
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.desktop.x11_display import open_display
from symphony_mcp.errors import SymphonyError
from symphony_mcp.orchestrator.action_space import FAIL
from symphony_mcp.orchestrator.api import TaskOutcome

DEFAULT_DOMAINS = ("os",)
CACHE_FOLDER = "osworld-cache"
TASKS_VARIABLE = "OSWORLD_TASKS"  # the task folder when none is given (the registry's factory takes no arguments)


class OSWorldError(SymphonyError):
    """The adapter cannot prepare or score a task (no task account, a skipped task, a fatal setup step)."""


class OSWorldAdapter:
    name = BENCHMARK

    def __init__(
        self,
        tasks_dir: Path | None = None,
        *,
        user: str = "user",
        password: str = "password",
        open_timeout: float = 120.0,
        cache: Path | None = None,
    ) -> None:
        folder = tasks_dir or os.environ.get(TASKS_VARIABLE)
        self.tasks_dir = Path(folder).expanduser() if folder else None
        offline = cache or os.environ.get(CACHE_VARIABLE)
        self.cache = Path(offline).expanduser() if offline else None  # a copy of OSWorld's download cache
        self.user_name, self.password, self.open_timeout = user, password, open_timeout
        self._runners: dict[str, SetupRunner] = {}
        self._turns = HomeTurns(turn_file(user))

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        if self.tasks_dir is None:
            raise OSWorldError(
                f"no OSWorld task folder: set {TASKS_VARIABLE} to OSWorld's evaluation_examples/examples "
                "folder (or one domain's folder)"
            )
        host = Host.here(find_task_user(self.user_name, self.password), self.cache)
        tasks = load_tasks(self.tasks_dir)
        if selection.task_ids:
            wanted = set(selection.task_ids)
            tasks = [t for t in tasks if t["id"] in wanted]
        elif selection.domains or not selection.everything:
            domains = set(selection.domains or DEFAULT_DOMAINS)
            tasks = [t for t in tasks if t["_domain"] in domains]
        return [to_bench_task(t, host) for t in tasks]

    async def setup(self, environment: Environment) -> None:
        self._user()  # fail early, with what to do

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        if task.skip_reason:
            raise OSWorldError(f"task {task.task_id} cannot run here: {task.skip_reason}")
        runner = self._runner(environment, task)
        await self._turns.take(environment.name)
        await anyio.to_thread.run_sync(self._prepare, runner, task)
        return str(task.data["instruction"])

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        runner = self._runner(environment, task)
        evaluator = task.data.get("evaluator") or {}
        try:
            return await anyio.to_thread.run_sync(evaluate, evaluator, runner, said_fail(outcome))
        finally:
            self._turns.give(environment.name)

    async def teardown(self, environment: Environment) -> None:
        runner = self._runners.pop(environment.name, None)
        if runner is not None:
            await anyio.to_thread.run_sync(runner.end_launched)
        self._turns.give(environment.name)

    async def close(self) -> None:
        for runner in self._runners.values():
            runner.end_launched()
        self._runners.clear()
        self._turns.give_all()

    def _prepare(self, runner: SetupRunner, task: BenchTask) -> None:
        runner.end_launched()
        runner.close_windows()
        runner.user.restore_home()
        shutil.rmtree(runner.cache_dir, ignore_errors=True)  # this task's files from an earlier attempt
        runner.run(task.data.get("config", []))

    def _runner(self, environment: Environment, task: BenchTask) -> SetupRunner:
        cache = environment.workdir / CACHE_FOLDER / task.task_id
        runner = self._runners.get(environment.name)
        if runner is None:
            size = _screen_size(environment.display)
            runner = SetupRunner(self._user(), environment.display, cache, size, self.open_timeout, self.cache)
            self._runners[environment.name] = runner
        runner.cache_dir, runner.task_id = cache, task.task_id
        return runner

    def _user(self) -> TaskUser:
        found = find_task_user(self.user_name, self.password)
        if isinstance(found, str):
            raise OSWorldError(found)
        return found


def said_fail(outcome: TaskOutcome) -> bool:
    """The agent's last action was fail() (OSWorld's FAIL), not a run that ran out of steps or broke."""
    steps = outcome.record.steps
    action = steps[-1].action if steps else None
    return outcome.outcome == "fail" and action is not None and action.name == FAIL


def _screen_size(display: str) -> tuple[int, int]:
    connection = open_display("the OSWorld setup's screen size", display)
    try:
        screen = connection.screen()
        return int(screen.width_in_pixels), int(screen.height_in_pixels)
    finally:
        connection.close()
