"""The OSWorld adapter: OSWorld task JSONs run on the local desktop, scored by OSWorld's own metrics.

    adapter = OSWorldAdapter(Path("evaluation_examples/examples"))   # or OSWORLD_TASKS=... OSWorldAdapter()
    tasks = adapter.list_tasks(TaskFilter(domains=("os",)))   # skipped ones carry their reason

The task set is what OSWorld's task list names (test_all.json beside the examples folder, or `task_list`);
the folder's other JSONs (OSWorld's Windows set, tasks kept out of its test set, the template) are counted
in `listing_notes`, not listed.
Per task: reset throws the environment's sandbox away (every process the last task started ends, every
file it wrote anywhere is gone, as OSWorld reverts its VM) and starts a fresh one (sandbox.py): the host's
root under a private overlay, the task user's home as the account has it, plus what OSWorld's image holds that
tasks take for granted (image.py: `google-chrome`, the apps' first-run state), its own network (an address of
its own, `vm_ip`, with OSWorld's fixed ports) and its own display, window manager and accessibility bus, all
inside as the task user, as in OSWorld's VM (the runner's display for the environment is not used). The
task's `config` steps run inside as the task user on the environment's display; the agent's server (the
bundled orchestrator's `symphony-mcp serve`) runs inside as the task user too, so the apps it opens, its
terminal and the Coder's code are that user with HOME=/home/user, as in OSWorld's VM, and the Coder runs without a
confinement of its own (the environment is the sandbox). Evaluate runs the postconfig and OSWorld's getters
inside and its metric functions here. The default selection is the `os` domain. Files a task downloads
come from a copy of OSWorld's cache (`cache`, or OSWORLD_CACHE; offline.py), never the network.
Environments run side by side, each in its own sandbox.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import anyio.to_thread

from symphony_mcp.bench.osworld.account import TaskUser, find_task_user
from symphony_mcp.bench.osworld.desktop import SCREEN
from symphony_mcp.bench.osworld.evaluate import evaluate
from symphony_mcp.bench.osworld.image import prepare
from symphony_mcp.bench.osworld.local_setup import SandboxMachine
from symphony_mcp.bench.osworld.loopback import loopback_ports
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE
from symphony_mcp.bench.osworld.sandbox import Sandbox, sandbox_problem
from symphony_mcp.bench.osworld.setup import SetupRunner
from symphony_mcp.bench.osworld.tasks import BENCHMARK, Host, TaskSet, load_task_set, select, to_bench_task
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.errors import SymphonyError
from symphony_mcp.orchestrator.action_space import FAIL
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer

DEFAULT_DOMAINS = ("os",)
CACHE_FOLDER = "osworld-cache"
TASKS_VARIABLE = "OSWORLD_TASKS"  # the task folder when none is given (the registry's factory takes no arguments)
# The server inside keeps its trajectory in the sandbox's private /tmp; the orchestrator copies it into the
# results through the server's resources, as from a remote server (orchestrator.task_folders.mirror_trajectory).
SERVER_TRAJECTORY_DIR = "/tmp/symphony-trajectory"


class OSWorldError(SymphonyError):
    """The adapter cannot prepare or score a task (no task account, a skipped task, a fatal setup step)."""


class OSWorldAdapter:
    name = BENCHMARK
    title = "OSWorld"
    brings_own_display = True  # each environment's Xvfb runs in its sandbox (desktop.py): the runner starts none

    def __init__(
        self,
        tasks_dir: Path | None = None,
        *,
        user: str = "user",
        password: str = "password",
        open_timeout: float = 120.0,
        cache: Path | None = None,
        task_list: Path | None = None,
    ) -> None:
        folder = tasks_dir or os.environ.get(TASKS_VARIABLE)
        self.tasks_dir = Path(folder).expanduser() if folder else None
        offline = cache or os.environ.get(CACHE_VARIABLE)
        self.cache = Path(offline).expanduser() if offline else None  # a copy of OSWorld's download cache
        self.task_list = Path(task_list).expanduser() if task_list else None  # default: OSWorld's test_all.json
        self.user_name, self.password, self.open_timeout = user, password, open_timeout
        self._task_set: TaskSet | None = None
        self._runners: dict[str, SetupRunner[SandboxMachine]] = {}
        self._sandboxes: dict[str, Sandbox] = {}

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        if self.tasks_dir is None:
            raise OSWorldError(
                f"no OSWorld task folder: set {TASKS_VARIABLE} to OSWorld's evaluation_examples/examples "
                "folder (or one domain's folder)"
            )
        host = Host.here(find_task_user(self.user_name, self.password), self.cache)
        self._task_set = load_task_set(self.tasks_dir, self.task_list)
        return [to_bench_task(t, host) for t in select(self._task_set.tasks, selection, DEFAULT_DOMAINS)]

    def listing_notes(self) -> list[str]:
        """What the last listing's task set covers and what the folder holds besides (task_set.notes)."""
        return self._task_set.notes() if self._task_set else []

    async def setup(self, environment: Environment) -> None:
        self._user()  # fail early, with what to do
        problem = sandbox_problem()
        if problem:
            raise OSWorldError(problem)

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        if task.skip_reason:
            raise OSWorldError(f"task {task.task_id} cannot run here: {task.skip_reason}")
        await self._end(environment.name)
        sandbox = Sandbox.start(self._user())  # from this thread: see Sandbox.start
        self._sandboxes[environment.name] = sandbox
        await anyio.to_thread.run_sync(sandbox.wait_ready)
        runner = self._runner(environment, task, sandbox)
        await anyio.to_thread.run_sync(self._prepare, runner, task)
        return str(task.data["instruction"])

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        """The task's server inside the environment as the task user, its code unconfined there (the environment
        is the sandbox), the same code as ours (PYTHONPATH), its trajectory in the sandbox's /tmp; the model
        endpoints its settings name on the host's loopback reachable at the same URLs inside."""
        sandbox = self._sandboxes.get(environment.name)
        if sandbox is None:
            raise OSWorldError(f"{environment.name} has no environment to run a server in: reset it first")
        inside = {
            **sandbox.env(),
            "SYMPHONY_DISPLAY__DISPLAY": sandbox.display,
            "SYMPHONY_MEMORY__TRAJECTORY_DIR": SERVER_TRAJECTORY_DIR,
            "SYMPHONY_CODE__BACKEND": "none",
            "SYMPHONY_CODE__DISPLAY": "true",
            "SYMPHONY_CODE__NETWORK": "true",
        }
        if os.environ.get("PYTHONPATH"):
            inside["PYTHONPATH"] = os.environ["PYTHONPATH"]
        for port in sorted(loopback_ports(server.env)):
            sandbox.reach_host_port(port)
        return replace(server, env={**server.env, **inside}, prefix=tuple(sandbox.command([])))

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        runner = self._runners[environment.name]
        evaluator = task.data.get("evaluator") or {}
        return await anyio.to_thread.run_sync(evaluate, evaluator, runner, said_fail(outcome))

    async def teardown(self, environment: Environment) -> None:
        self._runners.pop(environment.name, None)
        await self._end(environment.name)

    async def close(self) -> None:
        for name in list(self._sandboxes):
            await self._end(name)
        self._runners.clear()

    async def _end(self, environment: str) -> None:
        sandbox = self._sandboxes.pop(environment, None)
        if sandbox is not None:
            await anyio.to_thread.run_sync(sandbox.stop)

    def _prepare(self, runner: SetupRunner[SandboxMachine], task: BenchTask) -> None:
        shutil.rmtree(runner.cache_dir, ignore_errors=True)  # this task's files from an earlier attempt
        prepare(runner.machine.sandbox, task.data)  # what OSWorld's image holds (google-chrome, first-run state)
        runner.run(task.data.get("config", []))

    def _runner(self, environment: Environment, task: BenchTask, sandbox: Sandbox) -> SetupRunner[SandboxMachine]:
        cache = environment.workdir / CACHE_FOLDER / task.task_id
        machine = SandboxMachine(sandbox, SCREEN)
        runner = SetupRunner(machine, cache, task.task_id, self.cache, self.open_timeout)
        self._runners[environment.name] = runner
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
