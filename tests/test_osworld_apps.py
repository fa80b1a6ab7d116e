"""OSWorld's Chrome, VLC and GIMP tasks (their JSONs unchanged, tests/data/osworld) run through the benchmark runner in
their environment's sandbox, with the image's apps (google-chrome as Chromium, VLC with its HTTP interface) and scored
by OSWorld's own getters (through the stand-in `env` and in-VM server) and metrics: a scripted solver policy
(testkit/osworld_solvers.py: the planner hands the job to the Coder, whose bash changes the app's settings inside the
environment) scores 1 on each; a do-nothing agent scores 0 on each.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.account import find_task_user
from symphony_mcp.bench.osworld.getters import GetterContext, get, getter_env, load_getter
from symphony_mcp.bench.osworld.image import chrome_available
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.bench.types import TaskFilter
from testkit.model_server import StandInModel
from testkit.osworld_host import TASKS, task_account
from testkit.osworld_runs import Planner, run, settings_for
from testkit.osworld_solvers import (
    CHROME_DO_NOT_TRACK,
    CHROME_HISTORY,
    CHROME_SEARCH,
    GIMP_THEME,
    GIMP_UNDO,
    VLC_MAX_VOLUME,
    VLC_RECORDINGS,
    Solver,
)
from testkit.scripted_planner import CODER
from testkit.waiting import wait_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not (chrome_available() and shutil.which("vlc") and shutil.which("gimp") and shutil.which("socat")),
        reason="needs Chromium, VLC, GIMP and socat (scripts/install.sh --dev installs them)",
    ),
]
CHROME = (CHROME_SEARCH, CHROME_DO_NOT_TRACK, CHROME_HISTORY)
VLC = (VLC_MAX_VOLUME, VLC_RECORDINGS)
GIMP = (GIMP_UNDO, GIMP_THEME)
ALL = (*CHROME, *VLC, *GIMP)


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    with task_account() as name:
        yield name


@pytest.mark.timeout(1200)  # fourteen runs of the real loop, each starting its apps, on a loaded 2-core machine
async def test_chrome_vlc_and_gimp_tasks_score_1_solved_and_0_left_alone(
    task_user: str, xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    adapter = OSWorldAdapter(TASKS)
    tasks = {t.task_id: t for t in adapter.list_tasks(TaskFilter(domains=("chrome", "vlc", "gimp")))}
    assert {task_id: task.skip_reason for task_id, task in tasks.items()} == dict.fromkeys(ALL)
    solver = Solver(Planner({task_id: str(task.instruction) for task_id, task in tasks.items()}))
    stand_in.script(default=solver)
    settings = settings_for(stand_in, coder=CODER)

    solver.solve(*ALL)
    scored = await run(adapter, settings, tmp_path / "solved", *ALL)
    assert {task_id: evaluation.score for task_id, evaluation in scored.items()} == dict.fromkeys(ALL, 1.0), {
        task_id: evaluation.detail for task_id, evaluation in scored.items()
    }
    assert not any(solver.coder.values())  # every Coder block ran
    assert "exact_match('Bing') = 1" in scored[CHROME_SEARCH].detail  # OSWorld's getter read the profile
    assert "check_history_deleted([(" in scored[CHROME_HISTORY].detail  # the visits the setup step wrote, minus YouTube

    solver.idle(*ALL)
    scored = await run(adapter, settings, tmp_path / "idle", *ALL)
    assert {task_id: evaluation.score for task_id, evaluation in scored.items()} == dict.fromkeys(ALL, 0.0), {
        task_id: evaluation.detail for task_id, evaluation in scored.items()
    }
    assert "exact_match('Google') = 0" in scored[CHROME_SEARCH].detail
    assert "youtube" in scored[CHROME_HISTORY].detail


def test_osworlds_own_controller_gets_its_answers_from_the_environment(task_user: str, tmp_path: Path) -> None:
    """OSWorld's PythonController, unchanged, against the in-VM server stand-in: each answer comes from inside the
    environment as the task user; bad requests get the server's error answers and the server goes on."""
    from desktop_env.controllers.python import PythonController

    user = find_task_user(task_user, "password")
    assert not isinstance(user, str), user
    sandbox = Sandbox.start(user)
    sandbox.wait_ready()
    offline = tmp_path / "osworld-cache"  # a copy of OSWorld's cache holding one gold file, as its harness leaves it
    (offline / "task-1").mkdir(parents=True)
    (offline / "task-1" / "gold.txt").write_text("gold")
    context = GetterContext(sandbox, tmp_path / "cache", (1920, 1080), "task-1", offline)
    try:
        with getter_env(context) as env:
            controller: PythonController = env.controller
            made = controller.execute_python_command("import os; os.makedirs(os.path.expanduser('~/Desktop/made'))")
            assert made is not None and made["returncode"] == 0, made
            assert controller.execute_python_command("import os; print(os.getuid())")["output"] == f"{user.uid}\n"
            assert controller.get_file("~/.bashrc") == sandbox.read_file("/home/user/.bashrc") is not None
            assert controller.get_file("/home/user/Desktop/nothing-here") is None
            tree = controller.get_vm_directory_tree("/home/user/Desktop")
            assert {"type": "directory", "name": "made", "children": []} in tree["children"]
            assert controller.get_vm_directory_tree("/home/user/.bashrc") is None  # not a folder: 400
            assert controller.get_vm_screen_size() == {"width": 1920, "height": 1080}
            assert controller.get_vm_desktop_path() == "/home/user/Desktop"
            launched = requests.post(
                f"{env.http_server}/setup/launch", json={"command": ["xterm", "-class", "OSWorldProbe"]}, timeout=10
            )
            assert launched.status_code == 200, launched.text
            wait_for(lambda: controller.get_vm_window_size("OSWorldProbe") is not None, timeout=20)
            assert controller.get_vm_window_size("NoSuchClass") is None
            # The environment's address, as a VM's: the server answers there (some getters post to it themselves)
            # and so does what a task serves on OSWorld's fixed ports (Chrome's DevTools, VLC's HTTP interface).
            assert (env.vm_ip, env.server_port) == (sandbox.vm_ip, 5000)
            served = requests.post(
                f"{env.http_server}/setup/launch",
                json={"command": ["python3", "-m", "http.server", str(env.chromium_port), "--bind", env.vm_ip]},
                timeout=10,
            )
            assert served.status_code == 200, served.text
            wait_for(lambda: _answers(f"http://{env.vm_ip}:{env.chromium_port}/"), timeout=20)
            # OSWorld's own getters on the same env: a command's stdout and stderr, a file into the cache.
            assert load_getter("vm_command_line")(env, {"command": "whoami", "shell": True}) == "user\n"
            assert load_getter("vm_command_error")(env, {"command": "ls /nowhere", "shell": True})
            copied = load_getter("vm_file")(env, {"path": "~/.bashrc", "dest": "bashrc"})
            assert Path(copied).read_bytes() == sandbox.read_file("/home/user/.bashrc")
            # OSWorld's cloud_file getter finds the gold file in the task's cache, put there from the copy; a gold
            # file the copy lacks is FileNotFoundError (scored 0), never a download.
            gold = get(
                env, context, {"type": "cloud_file", "path": "https://files.invalid/gold.txt", "dest": "gold.txt"}
            )
            assert gold == str(tmp_path / "cache" / "gold.txt") and Path(gold).read_text() == "gold"
            with pytest.raises(FileNotFoundError, match="no offline copy"):
                get(
                    env, context, {"type": "cloud_file", "path": "https://files.invalid/other.txt", "dest": "other.txt"}
                )
            # Bad requests: the server's error answers, and it goes on answering.
            assert requests.post(f"{env.http_server}/execute", data=b"{not json", timeout=10).status_code == 500
            assert requests.get(f"{env.http_server}/wallpaper", timeout=10).status_code == 404
            assert requests.get(f"{env.http_server}/platform", timeout=10).text == "Linux"
        assert not Path("/home/user/Desktop/made").exists()  # it happened inside the environment only
    finally:
        sandbox.stop()


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False
