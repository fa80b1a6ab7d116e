"""OSWorld on its own VMs: `symphony-mcp bench osworld-vm --machines http://VM1:5000,http://VM2:5000`.

Each environment is one machine running OSWorld's in-VM controller (its Ubuntu image, port 5000), named by its URL
(bench/machines.py; a reset command given with `--machine-reset` reverts it before each task, then the runner waits
until its controller answers `/screenshot`, else machines are not reset). Per task: OSWorld's setup steps through
the machine's controller (remote_setup.py), the agent's server on the OSWorld desktop backend at that URL (every
tool acts on the machine), then OSWorld's evaluation with its own
getters and metrics (evaluate.evaluate_on, the local adapter's path), the getters on a stand-in `env` whose
controller is OSWorld's own `PythonController` on the machine's URL, the metrics here. The task set is OSWorld's
whole list by default (tasks.Machines: what is skipped on them and why); results go to `<results>/osworld-vm/`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import anyio.to_thread

from symphony_mcp.bench.machines import wait_for_route
from symphony_mcp.bench.osworld.adapter import CACHE_FOLDER, TASKS_VARIABLE, OSWorldError, said_fail
from symphony_mcp.bench.osworld.evaluate import evaluate_on
from symphony_mcp.bench.osworld.getters import GetterContext, GetterEnv
from symphony_mcp.bench.osworld.offline import CACHE_VARIABLE
from symphony_mcp.bench.osworld.remote_setup import ControllerMachine
from symphony_mcp.bench.osworld.setup import SetupRunner
from symphony_mcp.bench.osworld.tasks import REMOTE_BENCHMARK, Machines, TaskSet, load_task_set, select, to_bench_task
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.desktop.remote.osworld_controller import OsworldController, controller_for
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer

READ_SECONDS = 60.0  # one controller request (a screenshot, a file) before it counts as unanswered
GETTER_RETRY_SECONDS = 1.0  # OSWorld's PythonController waits 5 s between its 3 tries
READY_ROUTE = "/screenshot"  # OSWorld's docker provider treats 200 here as "the VM is ready"


class OSWorldVmAdapter:
    name = REMOTE_BENCHMARK
    title = "OSWorld"
    machine_schemes = ("http", "https")  # the controllers of OSWorld's VMs (port 5000)
    machine_note = "the selected tasks the machines can run"

    def __init__(
        self,
        tasks_dir: Path | None = None,
        *,
        password: str = "password",
        open_timeout: float = 300.0,
        cache: Path | None = None,
        task_list: Path | None = None,
        network: bool = True,
        chromium_port: int = 9222,
        vlc_port: int = 8080,
    ) -> None:
        folder = tasks_dir or os.environ.get(TASKS_VARIABLE)
        self.tasks_dir = Path(folder).expanduser() if folder else None
        offline = cache or os.environ.get(CACHE_VARIABLE)
        self.cache = Path(offline).expanduser() if offline else None
        self.task_list = Path(task_list).expanduser() if task_list else None
        self.password, self.open_timeout, self.network = password, open_timeout, network
        self.chromium_port, self.vlc_port = chromium_port, vlc_port  # the machines' Chrome DevTools and VLC ports
        self._task_set: TaskSet | None = None
        self._runners: dict[str, SetupRunner[ControllerMachine]] = {}

    def wait_for_machine(self, environment: Environment, timeout: float) -> None:
        wait_for_route(self._url(environment), READY_ROUTE, timeout)

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        if self.tasks_dir is None:
            raise OSWorldError(
                f"no OSWorld task folder: set {TASKS_VARIABLE} to OSWorld's evaluation_examples/examples "
                "folder (or give --option tasks_dir=DIR)"
            )
        self._task_set = load_task_set(self.tasks_dir, self.task_list)
        machines = Machines(self.cache, self.network)
        if not selection.task_ids and not selection.domains:
            selection = TaskFilter(everything=True)  # machines with OSWorld's image run the whole task list
        return [to_bench_task(t, machines) for t in select(self._task_set.tasks, selection, ())]

    def listing_notes(self) -> list[str]:
        return self._task_set.notes() if self._task_set else []

    async def setup(self, environment: Environment) -> None:
        """The machine answers (its screen size): a URL that does not is this environment's setup error."""
        controller = self._controller(environment)
        await anyio.to_thread.run_sync(controller.screen_size)

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        if task.skip_reason:
            raise OSWorldError(f"task {task.task_id} cannot run on the machines: {task.skip_reason}")
        machine = ControllerMachine(
            self._controller(environment),
            password=self.password,
            network=self.network,
            devtools=f"http://{urlsplit(self._url(environment)).hostname}:{self.chromium_port}",
        )
        cache = environment.workdir / CACHE_FOLDER / task.task_id
        runner = SetupRunner(machine, cache, task.task_id, self.cache, self.open_timeout)
        self._runners[environment.name] = runner
        shutil.rmtree(runner.cache_dir, ignore_errors=True)  # this task's files from an earlier attempt
        await anyio.to_thread.run_sync(runner.run, task.data.get("config", []))
        return str(task.data["instruction"])

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        """The agent's server on the OSWorld backend at the environment's machine: its tools and code act there."""
        url = self._url(environment)
        backend = {"SYMPHONY_DESKTOP__BACKEND": "osworld", "SYMPHONY_DESKTOP__URL": url}
        return replace(server, env={**server.env, **backend})

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        runner = self._runners[environment.name]
        url = self._url(environment)
        screen = runner.machine.screen_size
        context = GetterContext(None, runner.cache_dir, screen, task.task_id, self.cache, self.network)

        def getters() -> contextlib.AbstractContextManager[GetterEnv]:
            return machine_getter_env(url, runner.cache_dir, self.chromium_port, self.vlc_port)

        evaluator = task.data.get("evaluator") or {}
        return await anyio.to_thread.run_sync(evaluate_on, evaluator, runner.run, getters, context, said_fail(outcome))

    async def teardown(self, environment: Environment) -> None:
        self._runners.pop(environment.name, None)

    async def close(self) -> None:
        self._runners.clear()

    def _controller(self, environment: Environment) -> OsworldController:
        return controller_for(self._url(environment), READ_SECONDS)

    def _url(self, environment: Environment) -> str:
        if environment.machine is None:
            raise OSWorldError(
                "osworld-vm runs on OSWorld's VMs: give their controllers with --machines http://VM:5000,... "
                "(the local desktop's OSWorld is the `osworld` benchmark)"
            )
        return environment.machine


@contextlib.contextmanager
def machine_getter_env(url: str, cache_dir: Path, chromium_port: int, vlc_port: int) -> Iterator[GetterEnv]:
    """OSWorld's getters' `env` for a machine: its own `PythonController` on the machine's controller, the machine's
    address for the getters that post there themselves or reach its Chrome and VLC ports."""
    from desktop_env.controllers.python import PythonController  # desktop-env is optional (the osworld extra)

    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    cache_dir.mkdir(parents=True, exist_ok=True)
    controller = PythonController(host, port)
    controller.retry_interval = GETTER_RETRY_SECONDS
    yield GetterEnv(host, port, str(cache_dir), controller, chromium_port=chromium_port, vlc_port=vlc_port)
