"""OSWorld offline: OSWorld's own `os` task JSONs (tests/data/osworld), set up on a real Xvfb desktop as the
task user inside each environment's sandbox, run by the real orchestrator loop (a stand-in planner and Coder
over real HTTP, the real server spawned inside the environment, a real xterm the planner opens and types into)
through the benchmark runner, and scored by OSWorld's own metric functions from desktop-env. What a task does
to the machine (sudo into /, background processes) is checked to stay inside and end at the next reset.

The task user `user` is made by `symphony-mcp osworld-user` for the session and removed after it (when this
process is root and it did not exist); without root or desktop-env the tests that need them are skipped.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import pwd
import sqlite3
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from PIL import Image

from symphony_mcp.bench.environments import environment_server, started_environments
from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.account import find_task_user
from symphony_mcp.bench.osworld.adapter import OSWorldError
from symphony_mcp.bench.osworld.image import installed_schemas
from symphony_mcp.bench.osworld.local_setup import SandboxMachine
from symphony_mcp.bench.osworld.loopback import loopback_ports
from symphony_mcp.bench.osworld.sandbox import Sandbox, processes_in
from symphony_mcp.bench.osworld.setup import SetupError, SetupRunner
from symphony_mcp.bench.osworld.tasks import IMAGE_ASSUMPTIONS, Host, Machines, load_tasks, skip_reason, to_bench_task
from symphony_mcp.bench.types import BenchTask, Environment, TaskFilter, brings_own_display
from symphony_mcp.config import load_settings
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.x11_windows import X11WindowManager
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer, connect
from symphony_mcp.orchestrator.records import RunRecord
from testkit.model_server import ModelRequest, StandInModel
from testkit.osworld_cache import PHOTOS, TRASH, offline_cache
from testkit.osworld_host import TASKS, host, task_account
from testkit.osworld_runs import Answer, Planner, in_xterm, run, settings_for
from testkit.scripted_planner import CODER, PLANNER, act, said
from testkit.swatch import red_centroid
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent
RENAME = "e0df059f-28a6-4169-924f-b9623e7184cc"  # rename ~/Desktop/todo_list_Jan_1 (made by sudo) to ..._Jan_2
PYTHON3 = "c288e301-e626-4b98-a1ab-159dcb162af5"  # infeasible: no setup
HIERARCHY = "4783cc41-c03c-4e1b-89b4-50658f642bd5"  # infeasible: mkdir setup, pyautogui clicks, activate_window
HAS_DESKTOP_ENV = subprocess.run([sys.executable, "-c", "import desktop_env"], capture_output=True).returncode == 0
needs_desktop_env = pytest.mark.skipif(
    not HAS_DESKTOP_ENV, reason="desktop-env is not installed (scripts/install.sh --dev installs it with --no-deps)"
)


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    with task_account() as name:
        yield name


@needs_desktop_env
def test_every_os_task_is_listed_runnable_or_with_its_reason(task_user: str, tmp_path: Path) -> None:
    tasks = {t["id"][:8]: t for t in load_tasks(TASKS / "os")}
    assert len(tasks) == 31 and {t["_domain"] for t in tasks.values()} == {"os"}
    here = host(sudo=True)
    reasons = {key: skip_reason(task, here) for key, task in tasks.items()}
    runnable = sorted(key for key, reason in reasons.items() if reason is None)
    # GNOME's settings (dconf on the environment's session bus) and PulseAudio run inside when installed.
    gnome = ["3ce045a0", "a4d98375", "bedcedc4", "ec4e3f68", "f9be0997"] if installed_schemas() else []
    basics = ["4783cc41", "a462a795", "b3d4a89c", "c288e301", "e0df059f", "28cc3b7e", "13584542"]
    assert runnable == sorted([*basics, *gnome])
    # Every reason a task cannot run, not only the first.
    assert reasons["0b35aee5"] == (
        "needs the network (a download step; offline: OSWorld's cache in OSWORLD_CACHE); "
        "OSWorld has no getter 'calc_insensitive_md5'; "
        "needs the network (installs packages; Debian's archive or PyPI does not answer here)"
    )
    assert "GNOME Terminal" in (skip_reason(tasks["13584542"], host(missing=("gnome-terminal",))) or "")
    # Without GNOME's schemas the settings tasks say what to install; a schema this machine lacks is named.
    bare = replace(here, schemas=lambda _: False)
    assert "gsettings-desktop-schemas" in (skip_reason(tasks["3ce045a0"], bare) or "")
    no_shell = replace(here, schemas=lambda schema: schema != "org.gnome.shell")
    assert skip_reason(tasks["ec4e3f68"], no_shell) == (
        "needs GNOME's settings schema org.gnome.shell, which is not installed here"
    )
    assert "PulseAudio" in (skip_reason(tasks["28cc3b7e"], host(missing=("pulseaudio", "pactl"))) or "")
    assert reasons["6ebbfb01"] == (
        "needs the network (installs packages; Debian's archive or PyPI does not answer here); "
        "needs systemd (timedatectl, loginctl...), which is not running here"
    )
    # Where Debian's archive and PyPI answer, apt-get / pip install is no reason (systemd still is).
    with_registries = replace(here, registries=True)
    assert skip_reason(tasks["6ebbfb01"], with_registries) == (
        "needs systemd (timedatectl, loginctl...), which is not running here"
    )
    assert reasons["b6781586"] and "systemd" in reasons["b6781586"]
    assert reasons["765d2b74"] == "the benchmark gives this task no evaluator (func is empty)"
    assert reasons["94d95f96"] and "Spotify" in reasons["94d95f96"]
    # Facts of the machine change the verdict: sudo for the task user, systemd.
    assert "sudo" in (skip_reason(tasks["e0df059f"], host(sudo=False)) or "")
    assert skip_reason(tasks["a462a795"], host(sudo=False)) is None  # infeasible: its setup's outcome is not scored
    assert skip_reason(tasks["b6781586"], host(systemd=True)) is None
    # With a copy of OSWorld's download cache, tasks that only download files run offline.
    assert reasons["5ea617a3"] == "needs the network (a download step; offline: OSWorld's cache in OSWORLD_CACHE)"
    cached = Host(here.user, "", here.programs, False, True, offline_cache(tmp_path, TASKS / "os" / f"{TRASH}.json"))
    assert skip_reason(tasks["5ea617a3"], cached) is None
    assert skip_reason(tasks["23393935"], cached) is not None  # its files are not in that copy
    # Without the account, every runnable task says how to make it.
    nobody = Host(None, "the task account 'user' does not exist: create it", lambda _: True, False, True)
    assert skip_reason(tasks["e0df059f"], nobody) == "the task account 'user' does not exist: create it"
    assert skip_reason(tasks["3ce045a0"], replace(nobody, schemas=lambda _: False)) == (
        "needs GNOME's settings (gsettings with dconf: apt-get install gsettings-desktop-schemas "
        "dconf-gsettings-backend); the task account 'user' does not exist: create it"
    )


def test_an_image_assumption_holds_for_its_own_domains_task_not_another_with_its_id(
    task_user: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OSWorld gives a Chrome task and a Thunderbird task one id (99146c54): an image assumption of the Chrome task
    skips it alone, the Thunderbird task is classified on its own; machines with OSWorld's image skip neither."""
    shared = "99146c54-4f37-4ab8-9327-5f3291665e1e"
    monkeypatch.setitem(IMAGE_ASSUMPTIONS, ("chrome", shared), (lambda: False, "a Chrome profile assumption"))
    for domain in ("chrome", "thunderbird"):
        (tmp_path / domain).mkdir()
        task = {"id": shared, "instruction": f"A {domain} task.", "config": [], "evaluator": {"func": "infeasible"}}
        (tmp_path / domain / f"{shared}.json").write_text(json.dumps(task))
    chrome, thunderbird = load_tasks(tmp_path)
    assert (chrome["_domain"], thunderbird["_domain"]) == ("chrome", "thunderbird")
    here = host(sudo=True)
    assert skip_reason(chrome, here) == "a Chrome profile assumption"
    assert skip_reason(thunderbird, here) is None
    machines = Machines(cache=None, network=False)
    assert skip_reason(chrome, machines) is None and skip_reason(thunderbird, machines) is None


@needs_desktop_env
def test_listing_holds_only_tasks_and_names_the_live_web(tmp_path: Path) -> None:
    """template.json and a Linux task's Windows variant (`<id>-win.json`, same id) are not tasks of the set; a task
    whose JSON does not say it needs the live web but does (RESEARCH-NEXT §7) says so."""
    rename = json.loads((TASKS / "os" / f"{RENAME}.json").read_text())
    (tmp_path / "os").mkdir()
    (tmp_path / "os" / f"{RENAME}.json").write_text(json.dumps(rename))
    (tmp_path / "os" / f"{RENAME}-win.json").write_text(json.dumps({**rename, "snapshot": "windows"}))
    (tmp_path / "template.json").write_text(json.dumps({**rename, "id": "", "instruction": ""}))
    live = "68a25bd4-59c7-4f4d-975e-da0c8509c848"
    (tmp_path / "multi_apps").mkdir()
    (tmp_path / "multi_apps" / f"{live}.json").write_text(json.dumps({**rename, "id": live}))
    tasks = load_tasks(tmp_path)
    assert [(t["_domain"], t["id"]) for t in tasks] == [("multi_apps", live), ("os", RENAME)]
    reason = skip_reason(tasks[0], host()) or ""
    assert reason.startswith("needs the live web (its evaluation or inputs come from live sites"), reason
    assert "live web" not in (skip_reason(tasks[1], host()) or "")
    # A JSON this adapter cannot read (two of OSWorld's vlc tasks have a string evaluator) is listed with why.
    odd = to_bench_task({**tasks[1], "evaluator": "not a dict"}, host())
    assert not odd.infeasible and (odd.skip_reason or "").startswith("the task JSON is not in the format")


@needs_desktop_env
def test_adapter_lists_the_default_subset_and_selections(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = OSWorldAdapter(TASKS)
    assert [t.domain for t in adapter.list_tasks(TaskFilter())] == ["os"] * 31
    [task] = adapter.list_tasks(TaskFilter(task_ids=(PYTHON3,)))
    assert task.benchmark == "osworld" and task.instruction and "Python3" in task.instruction
    assert task.infeasible and not adapter.list_tasks(TaskFilter(task_ids=(RENAME,)))[0].infeasible
    assert adapter.list_tasks(TaskFilter(domains=("thunderbird",))) == []
    monkeypatch.delenv("OSWORLD_TASKS", raising=False)
    with pytest.raises(OSWorldError, match="set OSWORLD_TASKS to OSWorld's evaluation_examples/examples"):
        OSWorldAdapter().list_tasks(TaskFilter())
    monkeypatch.setenv("OSWORLD_TASKS", str(TASKS))
    assert len(OSWorldAdapter().list_tasks(TaskFilter(everything=True))) == 31 + 3 + 2 + 2  # os, chrome, vlc, gimp


@needs_desktop_env
def test_metrics_load_one_module_without_torch_and_print_nothing_to_stdout() -> None:
    code = (
        "import sys\n"
        "from symphony_mcp.bench.osworld.metrics import load_metric, quiet\n"
        "exact = load_metric('exact_match'); include = load_metric('check_include_exclude')\n"
        "with quiet():\n"
        "    scores = exact('a\\n', {'expected': 'a\\n'}), include('x y', {'include': ['x'], 'exclude': ['z']})\n"
        "heavy = sorted(m for m in ('torch', 'easyocr', 'cv2') if m in sys.modules)\n"
        "sys.stderr.write(repr(scores) + ' ' + repr(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # the metrics' own prints went to stderr
    assert done.stderr.endswith("(1.0, 1.0) []")


def test_a_metric_module_failing_at_import_skips_its_tasks_with_the_reason(task_user: str, tmp_path: Path) -> None:
    """Not only ImportError: torchvision's CUDA build beside CPU torch raises RuntimeError when imported (issue 23
    item 4). A desktop_env package of one such metric module stands in for the installed one."""
    metrics = tmp_path / "desktop_env" / "evaluators" / "metrics"
    metrics.mkdir(parents=True)
    for package in (tmp_path / "desktop_env", tmp_path / "desktop_env" / "evaluators"):
        (package / "__init__.py").write_text("")
    (metrics / "__init__.py").write_text("from .docs import compare_docx_files\nfrom .general import exact_match\n")
    (metrics / "docs.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    (metrics / "general.py").write_text(
        "def exact_match(result, rules):\n    return float(result == rules['expected'])\n"
    )
    getters = metrics.parent / "getters"  # the getters the task's evaluator names, as OSWorld's package has them
    getters.mkdir()
    (getters / "__init__.py").write_text("from .general import get_vm_command_line\nfrom .misc import get_rule\n")
    (getters / "general.py").write_text("def get_vm_command_line(env, config):\n    return None\n")
    (getters / "misc.py").write_text("def get_rule(env, config):\n    return config['rules']\n")
    code = (
        "import json, sys\n"
        "from symphony_mcp.bench.osworld.tasks import load_tasks, skip_reason\n"
        "from testkit.osworld_host import TASKS, host\n"
        "task = next(t for t in load_tasks(TASKS) if t['id'].startswith('e0df059f'))\n"
        "docx = {**task, 'evaluator': {**task['evaluator'], 'func': 'compare_docx_files'}}\n"
        "print(json.dumps([skip_reason(docx, host()), skip_reason(task, host())]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    broken, fine = json.loads(done.stdout.splitlines()[-1])
    assert broken == (
        "OSWorld's metric module docs fails to import here: RuntimeError: operator torchvision::nms does not exist"
    )
    assert fine is None  # a task whose metric module imports is listed runnable


def windows(display: str) -> list[WindowInfo]:
    manager = X11WindowManager(display)
    try:
        return manager.list_windows()
    finally:
        manager.close()


def test_setup_steps_run_as_the_task_user_with_osworlds_semantics(task_user: str, tmp_path: Path) -> None:
    user = find_task_user(task_user, "password")
    assert not isinstance(user, str), user
    sandbox = Sandbox.start(user)
    sandbox.wait_ready()
    namespace = sandbox.namespace
    runner = SetupRunner(SandboxMachine(sandbox, (1920, 1080)), tmp_path / "cache", "", None, open_timeout=20)
    try:
        # execute: placeholders filled, as `user` in its home, stdout saved into the task's cache; a failing
        # command does not stop the setup (OSWorld logs it); `until` runs the command again until it matches.
        counter = "n=$(cat ~/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > ~/n; [ $n -ge 3 ] && echo ready"
        runner.run(
            [
                {
                    "type": "execute",
                    "parameters": {
                        "command": "echo {SCREEN_WIDTH_HALF} $(whoami) $PWD",
                        "shell": True,
                        "stdout": "who.txt",
                    },
                },
                {"type": "command", "parameters": {"command": ["false"]}},
                {"type": "execute", "parameters": {"command": counter, "shell": True, "until": {"stdout": "ready"}}},
                {"type": "execute", "parameters": {"command": ["touch", "~/Desktop/made"]}},
            ]
        )
        assert (tmp_path / "cache" / "who.txt").read_text() == "960 user /home/user\n"
        assert sandbox.read_file("/home/user/n") == b"3\n"
        owner = subprocess.run(sandbox.command(["stat", "-c", "%U", "Desktop/made"]), capture_output=True, text=True)
        assert owner.stdout == "user\n"  # ~/ expanded, made by `user`
        # launch (not waited for), then a verification that waits for its window; activate_window matches a
        # part of the title whatever its case, close_window the whole title (strict).
        runner.run(
            [
                {"type": "launch", "parameters": {"command": ["xterm", "-T", "OSWorld Probe", "-e", "sleep", "600"]}},
                {
                    "type": "execute_with_verification",
                    "parameters": {"command": ["true"], "verification": {"window_exists": "OSWorld Probe"}},
                },
                {"type": "activate_window", "parameters": {"window_name": "osworld probe"}},
            ]
        )
        probe = next(w for w in windows(sandbox.display) if w.title == "OSWorld Probe")
        assert probe.active
        runner.run([{"type": "close_window", "parameters": {"window_name": "OSWorld Probe", "strict": True}}])
        wait_for(lambda: all(w.title != "OSWorld Probe" for w in windows(sandbox.display)))
        # open: xdg-open as `user` (its own default app for text, a terminal titled with the file), then the
        # window whose title holds the file name is waited for and activated.
        viewer = "[Desktop Entry]\nType=Application\nName=Viewer\nExec=xterm -T %f -e sleep 600\nMimeType=text/plain;\n"
        sandbox.write_file("/home/user/.local/share/applications/viewer.desktop", viewer.encode())
        sandbox.write_file("/home/user/.config/mimeapps.list", b"[Default Applications]\ntext/plain=viewer.desktop\n")
        sandbox.write_file("/home/user/Desktop/notes.txt", b"notes\n")
        runner.run([{"type": "open", "parameters": {"path": "~/Desktop/notes.txt"}}])
        assert any(w.title.endswith("notes.txt") and w.active for w in windows(sandbox.display))
        # Steps OSWorld treats as fatal, and unknown ones, stop the setup with the reason.
        with pytest.raises(SetupError, match=r"did not pass within 0\.5 s"):
            runner.run(
                [
                    {
                        "type": "execute_with_verification",
                        "parameters": {
                            "command": ["true"],
                            "verification": {"window_exists": "No Such Window"},
                            "max_wait_time": 0.5,
                            "check_interval": 0.1,
                        },
                    }
                ]
            )
        with pytest.raises(SetupError, match="step 1: type 'chrome_open_tabs' is not run on the local environment"):
            runner.run([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["about:blank"]}}])
        with pytest.raises(SetupError, match=r"application or file not found: ~/Desktop/absent\.txt"):
            runner.run([{"type": "open", "parameters": {"path": "~/Desktop/absent.txt"}}])
        # download: the file from the copy of OSWorld's cache, put where the task says as the task user.
        offline = offline_cache(tmp_path / "osworld-cache", TASKS / "os" / f"{TRASH}.json")
        [download] = [
            s for s in json.loads((TASKS / "os" / f"{TRASH}.json").read_text())["config"] if s["type"] == "download"
        ]
        [copy] = (offline / TRASH).iterdir()
        SetupRunner(runner.machine, tmp_path / "cache", TRASH, offline, open_timeout=20).run([download])
        assert sandbox.read_file("/home/user/Desktop/poster_party_night.webp") == copy.read_bytes()
        # update_browse_history: the profile's History emptied, then the task's visits written into it.
        history = tmp_path / "History"
        with contextlib.closing(sqlite3.connect(history)) as database:
            database.executescript(CHROME_HISTORY_TABLES)
            database.execute("INSERT INTO urls (url, title) VALUES ('https://old.example/', 'Old')")
            database.commit()
        profile_history = "/home/user/.config/google-chrome/Default/History"
        sandbox.write_file(profile_history, history.read_bytes())
        visit = {"url": "https://example.org/", "title": "Example", "visit_time_from_now_in_seconds": 3600}
        runner.run([{"type": "update_browse_history", "parameters": {"history": [visit]}}])
        written = sandbox.read_file(profile_history)
        assert written is not None
        history.write_bytes(written)
        with contextlib.closing(sqlite3.connect(history)) as database:
            assert database.execute("SELECT url, title FROM urls").fetchall() == [("https://example.org/", "Example")]
            assert database.execute("SELECT transition FROM visits").fetchall() == [(805306368,)]
        assert not Path("/home/user/Desktop/made").exists()  # all of it happened inside the environment
    finally:
        sandbox.stop()
    # The launched terminal and xdg-open's viewer (launched by the open step) end with the environment.
    assert processes_in(namespace) == []


CHROME_HISTORY_TABLES = """
CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER DEFAULT 0,
    typed_count INTEGER DEFAULT 0, last_visit_time INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0);
CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER, from_visit INTEGER,
    transition INTEGER, segment_id INTEGER, visit_duration INTEGER);
"""  # the columns of Chrome's History that OSWorld's update_browse_history step writes


# End to end through the runner and the real orchestrator loop.


def inside(adapter: OSWorldAdapter, path: str, environment: str = "env-0") -> Callable[[], bool]:
    """Whether `path` exists in the environment's sandbox (as the task user sees it)."""

    def check() -> bool:
        sandbox = adapter._sandboxes.get(environment)
        if sandbox is None:
            return False
        return subprocess.run(sandbox.command(["test", "-e", path]), env=sandbox.env()).returncode == 0

    return check


def rename_in_xterm(adapter: OSWorldAdapter, target: str) -> list[Answer]:
    desktop = "/home/user/Desktop"
    return in_xterm(f"mv {desktop}/todo_list_Jan_1 {desktop}/{target}", inside(adapter, f"{desktop}/{target}"))


@needs_desktop_env
@pytest.mark.timeout(600)  # a dozen runs of the real loop on a loaded 2-core machine
async def test_os_tasks_score_by_osworlds_metrics_through_the_runner(
    task_user: str, xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    cache = offline_cache(tmp_path / "cache", TASKS / "os" / f"{TRASH}.json", TASKS / "os" / f"{PHOTOS}.json")
    adapter = OSWorldAdapter(TASKS, cache=cache)
    tasks: dict[str, BenchTask] = {t.task_id: t for t in adapter.list_tasks(TaskFilter())}
    if tasks[RENAME].skip_reason:
        pytest.skip(f"the rename task cannot run here: {tasks[RENAME].skip_reason}")
    agent = Planner({task_id: str(task.instruction) for task_id, task in tasks.items()})
    stand_in.script(default=agent)
    settings = settings_for(stand_in)
    results = tmp_path / "results"

    # The right end state, reached through the real server's tools (a terminal the planner opens and types
    # into): 1 by OSWorld's exact_match. An infeasible task: fail() scores 1; done() on another scores 0.
    trash, desktop = "/home/user/.local/share/Trash/files", "/home/user/Desktop"
    agent.plans = {
        RENAME: rename_in_xterm(adapter, "todo_list_Jan_2"),
        PYTHON3: [act('fail(reason="Ubuntu keeps python3 as python3; changing the default breaks the system")')],
        HIERARCHY: [act("done()")],
        TRASH: in_xterm(
            f"mv {trash}/poster_party_night.webp {desktop}/", inside(adapter, f"{desktop}/poster_party_night.webp")
        ),
        PHOTOS: in_xterm(
            f"find {desktop}/photos -name '*.jpg' -exec cp {{}} {desktop}/cpjpg/ \\; ; touch /tmp/osworld-copied",
            inside(adapter, "/tmp/osworld-copied"),
        ),
    }
    scored = await run(adapter, settings, results, RENAME, PYTHON3, HIERARCHY, TRASH, PHOTOS)
    # Two tasks made runnable by the offline copy of OSWorld's download cache: the poster restored from the
    # trash (exact_match on a shell test), the .jpg files copied (check_moved_jpgs on list_directory's tree).
    assert (scored[TRASH].score, scored[PHOTOS].score) == (1.0, 1.0), (scored[TRASH], scored[PHOTOS])
    assert "check_moved_jpgs({'type': 'directory', 'name': 'cpjpg'" in scored[PHOTOS].detail
    assert (scored[RENAME].score, scored[RENAME].outcome) == (1.0, "unverified"), scored[RENAME]
    assert "exact_match('Directory exists.\\n') = 1" in scored[RENAME].detail
    assert scored[RENAME].steps == 4 and scored[RENAME].failure is None
    assert (scored[PYTHON3].score, scored[PYTHON3].outcome) == (1.0, "fail")
    assert "said fail, as it should" in scored[PYTHON3].detail
    assert (scored[HIERARCHY].score, scored[HIERARCHY].failure) == (0.0, "scored_zero")

    # Doing nothing scores 0 (the home was put back: the last run's rename is gone); a scripted failure (the
    # wrong name) scores 0; an infeasible task whose run only ran out of steps scores 0, and fail() on a
    # feasible task scores 0 as in OSWorld.
    agent.plans = {
        RENAME: [act("done()")],
        HIERARCHY: [act('fail(reason="The variables are not set")')],
        TRASH: [act("done()")],
        PHOTOS: [act("done()")],
    }
    scored = await run(adapter, settings, results, RENAME, HIERARCHY, TRASH, PHOTOS)
    assert scored[RENAME].score == 0.0 and "Directory does not exist." in scored[RENAME].detail
    assert scored[HIERARCHY].score == 1.0
    assert (scored[TRASH].score, scored[PHOTOS].score) == (0.0, 0.0), (scored[TRASH], scored[PHOTOS])

    agent.plans = {RENAME: rename_in_xterm(adapter, "todo_list_Jan_3")}  # done() waits for the wrong rename
    scored = await run(adapter, settings, results, RENAME)
    assert (scored[RENAME].score, scored[RENAME].outcome, scored[RENAME].failure) == (0.0, "unverified", "scored_zero")

    # Runs that end in "fail" without the planner's fail(): no usable action on the last step. An infeasible
    # task scores 1 only for fail() itself; fail() on a feasible task scores 0, as in OSWorld.
    short = settings_for(stand_in, max_steps=1)
    agent.plans = {PYTHON3: [act("wait(seconds=1)")] * 5, RENAME: [act('fail(reason="I cannot find it")')]}
    scored = await run(adapter, short, results, PYTHON3, RENAME)
    assert (scored[PYTHON3].score, scored[PYTHON3].outcome) == (0.0, "fail")
    assert scored[PYTHON3].detail == "infeasible task: the agent did not say fail"
    assert (scored[RENAME].score, scored[RENAME].outcome) == (0.0, "fail")
    assert scored[RENAME].detail == "the agent said fail on a feasible task"


# Each environment is a machine of its own: the held-out failure, what a task leaves behind, two side by side.

TODO_GUI, TODO_CODER, TODO_IDLE = (f"0d0d0d0d-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))
LEAVER, LOOKER = "1e1e1e1e-0000-4000-8000-000000000001", "1e1e1e1e-0000-4000-8000-000000000002"
MOVED = "[ -f ~/Desktop/done/todo.txt ] && [ ! -e ~/Desktop/todo.txt ] && echo moved"


def os_task(folder: Path, task_id: str, instruction: str, config: list[dict[str, Any]], check: str, want: str) -> None:
    """A task JSON in OSWorld's format (setup steps; exact_match on a shell command run as the task user)."""
    task = {
        "id": task_id,
        "snapshot": "os",
        "instruction": instruction,
        "source": "symphony-mcp tests",
        "config": config,
        "related_apps": ["os"],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": check, "shell": True},
            "expected": {"type": "rule", "rules": {"expected": want}},
        },
    }
    (folder / "os").mkdir(parents=True, exist_ok=True)
    (folder / "os" / f"{task_id}.json").write_text(json.dumps(task), encoding="utf-8")


def todo_tasks(folder: Path) -> Path:
    """The issue's held-out failure: move ~/Desktop/todo.txt into ~/Desktop/done/ (made by the setup, as `user`)."""
    make = {
        "type": "execute",
        "parameters": {"command": "mkdir -p ~/Desktop/done && echo milk > ~/Desktop/todo.txt", "shell": True},
    }
    for task_id, how in ((TODO_GUI, "in a terminal"), (TODO_CODER, "with code"), (TODO_IDLE, "somehow")):
        instruction = f"Move todo.txt on my Desktop into the folder done on the Desktop ({how})."
        os_task(folder, task_id, instruction, [make], MOVED, "moved\n")
    return folder


@needs_desktop_env
@pytest.mark.timeout(300)  # three runs of the real loop
async def test_the_agent_is_the_task_user_in_its_terminal_and_its_coder(
    task_user: str, xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    adapter = OSWorldAdapter(todo_tasks(tmp_path / "tasks"))
    tasks = {t.task_id: t for t in adapter.list_tasks(TaskFilter(everything=True))}
    planner = Planner({task_id: str(task.instruction) for task_id, task in tasks.items()})
    coder = [
        said("Move the file with ~ paths.", "bash", "mv ~/Desktop/todo.txt ~/Desktop/done/ && ls ~/Desktop/done"),
        "todo.txt is in done.\nDONE",
        "Moved ~/Desktop/todo.txt into ~/Desktop/done/.",
    ]

    def answer(request: ModelRequest) -> str:
        return coder.pop(0) if request.body["model"] == CODER else planner(request)

    stand_in.script(default=answer)
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 0}
    settings = load_settings(
        models={"orchestrator": {**endpoint, "model": PLANNER}, "coder": {**endpoint, "model": CODER}},
        orchestrator={"max_steps": 5, "reflection": False},
        ocr={"warm_up": False},
    )
    planner.plans = {
        TODO_GUI: in_xterm(
            "mv ~/Desktop/todo.txt ~/Desktop/done/", inside(adapter, "/home/user/Desktop/done/todo.txt")
        ),
        TODO_CODER: [
            act('call_code_agent(task="Move ~/Desktop/todo.txt into ~/Desktop/done/")', "Code moves it."),
            act("done()", "The coder moved it."),
        ],
        TODO_IDLE: [act("done()")],
    }
    scored = await run(adapter, settings, tmp_path / "results", TODO_GUI, TODO_CODER, TODO_IDLE)
    # ~ is /home/user for the terminal the agent opened and for the Coder's code, as in OSWorld's VM; doing
    # nothing scores 0.
    assert (scored[TODO_GUI].score, scored[TODO_CODER].score, scored[TODO_IDLE].score) == (1.0, 1.0, 0.0), scored
    assert "exact_match('moved\\n') = 1" in scored[TODO_CODER].detail
    assert not coder  # the Coder ran (its block, its verdict, its summary)
    assert not Path("/home/user/Desktop/done").exists()  # nothing of it reached the host's home


@needs_desktop_env
async def test_what_a_task_does_to_the_machine_is_gone_at_the_next_reset(
    task_user: str, xdisplay: Any, tmp_path: Path
) -> None:
    canary = Path("/etc/symphony-canary")  # must never appear on the host
    keep = Path("/var/tmp") / f"symphony-canary-{uuid.uuid4().hex}"  # must stay as it is
    keep.write_text("host\n")
    script = "while true; do date > /tmp/alive; sleep 1; done"
    leave = [
        {"type": "execute", "parameters": {"command": "echo {CLIENT_PASSWORD} | sudo -S mkdir /test", "shell": True}},
        {
            "type": "execute",
            "parameters": {
                "command": f"echo {{CLIENT_PASSWORD}} | sudo -S sh -c 'echo x > {canary}; rm -f {keep}'",
                "shell": True,
            },
        },
        {
            "type": "execute",
            "parameters": {
                "command": f"printf '%s\\n' '{script}' > ~/my_process.sh && chmod +x ~/my_process.sh",
                "shell": True,
            },
        },
        {"type": "execute", "parameters": {"command": "nohup ./my_process.sh > /dev/null 2>&1 &", "shell": True}},
    ]
    folder = tmp_path / "tasks"
    left = "test -d /test && test -e /etc/symphony-canary && test -x ~/my_process.sh && echo left"
    os_task(folder, LEAVER, "Leave things behind.", leave, left, "left\n")
    gone = (
        "test -e /test || test -e /etc/symphony-canary || test -e ~/my_proces?.sh || pgrep -f 'my_[p]rocess' "
        "|| echo clean"
    )
    os_task(folder, LOOKER, "Look around.", [], gone, "clean\n")
    adapter = OSWorldAdapter(folder)
    tasks = {t.task_id: t for t in adapter.list_tasks(TaskFilter(everything=True))}
    environment = Environment("env-0", xdisplay.name, tmp_path / "env-0", SpawnServer())
    record = RunRecord(task_id=LEAVER, instruction="x", started_at=0.0, max_steps=1, outcome="success")
    outcome = TaskOutcome(LEAVER, "success", False, tmp_path, record, [])
    try:
        await adapter.reset(environment, tasks[LEAVER])
        wait_for(inside(adapter, "/tmp/alive"))  # the setup's background process runs, as the task user
        namespace = adapter._sandboxes["env-0"].namespace
        # The script's loop forks for `date` and `sleep`: a fork holds the script's command line until it execs.
        [process] = wait_for(lambda: found if len(found := processes_in(namespace, "my_process.sh")) == 1 else None)
        assert Path(f"/proc/{process}").stat().st_uid == pwd.getpwnam("user").pw_uid
        assert (await adapter.evaluate(environment, tasks[LEAVER], outcome)).value == 1.0  # all there, inside
        # The task's root (through sudo) cannot reach the host: no mounts, no device nodes, no kernel knobs.
        sandbox = adapter._sandboxes["env-0"]
        for attack, refusal in (
            ("echo 1 > /proc/sys/vm/drop_caches", "Read-only file system"),
            ("mount -t tmpfs none /mnt", "permission denied"),
            ("mknod /tmp/disk b 254 0", "Operation not permitted"),
        ):
            command = ["sh", "-c", f"echo password | sudo -S sh -c '{attack}'"]
            done = subprocess.run(sandbox.command(command), env=sandbox.env(), capture_output=True, text=True)
            assert done.returncode != 0 and refusal in done.stderr, (attack, done.stderr)
        assert not Path("/test").exists() and not canary.exists() and keep.read_text() == "host\n"
        await adapter.reset(environment, tasks[LOOKER])
        # The next attempt starts clean: sudo's /test, the file in /etc and the script are gone, the process ended.
        # A freed namespace's number may be given to the next sandbox's: then only that sandbox's processes are in it.
        fresh = adapter._sandboxes["env-0"].namespace
        assert not Path(f"/proc/{process}").exists() and processes_in(fresh, "my_process.sh") == []
        assert namespace == fresh or processes_in(namespace) == []
        score = await adapter.evaluate(environment, tasks[LOOKER], outcome)
        assert score.value == 1.0, score.detail
    finally:
        await adapter.close()
        keep.unlink(missing_ok=True)
    assert not Path("/test").exists() and not canary.exists()
    assert processes_in(namespace) == []  # nothing of the environment outlives it


def test_an_environment_ends_with_a_runner_killed_by_sigkill(task_user: str) -> None:
    """A runner that dies without cleaning up (SIGKILL, the OOM killer) leaves no environment behind."""
    code = (
        "import sys, time\n"
        "from symphony_mcp.bench.osworld.account import find_task_user\n"
        "from symphony_mcp.bench.osworld.sandbox import Sandbox\n"
        "sandbox = Sandbox.start(find_task_user('user', 'password'))\n"
        "sandbox.wait_ready()\n"
        "print(sandbox.namespace, flush=True)\n"
        "time.sleep(600)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert runner.stdout is not None
    namespace = runner.stdout.readline().strip()
    assert namespace.startswith("pid:") and processes_in(namespace)
    runner.kill()
    runner.wait()
    wait_for(lambda: not processes_in(namespace), timeout=30)


@needs_desktop_env
async def test_two_environments_side_by_side_each_have_their_own_home(
    task_user: str, xdisplay: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "tasks"
    for n in (1, 2):
        mine = {"type": "execute", "parameters": {"command": f"echo {n} > ~/Desktop/mine && sleep 1", "shell": True}}
        check = "cat ~/Desktop/mine"  # a shared home would hold the last writer's number for both
        os_task(folder, f"2f2f2f2f-0000-4000-8000-00000000000{n}", f"Task {n}.", [mine], check, f"{n}\n")
    adapter = OSWorldAdapter(folder)
    first, second = adapter.list_tasks(TaskFilter(everything=True))
    settings = load_settings(ocr={"warm_up": False})
    record = RunRecord(task_id="x", instruction="x", started_at=0.0, max_steps=1, outcome="success")
    outcome = TaskOutcome("x", "success", False, tmp_path, record, [])
    with started_environments(2, settings, tmp_path / "environments", own_display=True) as environments:
        try:
            async with anyio.create_task_group() as group:  # both setups at once, each in its own environment
                for environment, task in zip(environments, (first, second), strict=True):
                    group.start_soon(adapter.reset, environment, task)
            scores = [
                await adapter.evaluate(environment, task, outcome)
                for environment, task in zip(environments, (first, second), strict=True)
            ]
        finally:
            await adapter.close()
    # Each sees its own ~/Desktop/mine, and the host's home neither.
    assert [s.value for s in scores] == [1.0, 1.0], [s.detail for s in scores]
    assert not Path("/home/user/Desktop/mine").exists()


# Each environment is a machine of its own: its network (an address, OSWorld's fixed ports) and its display.


def listening(sandbox: Sandbox, port: int, answer: bytes) -> None:
    """An HTTP server inside the environment on `port` of every address, as the task user, answering `answer`."""
    sandbox.write_file("/tmp/www/who", answer)
    server = [sys.executable, "-m", "http.server", str(port), "--bind", "0.0.0.0", "--directory", "/tmp/www"]
    process = subprocess.Popen(
        sandbox.command(server), env=sandbox.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    sandbox.children.append(process)


def fetched(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bytes(answer.read())
    except OSError:
        return None


def fetched_inside(sandbox: Sandbox, url: str) -> str:
    code = (
        "import urllib.request as u\n"
        f"try: print(u.urlopen({url!r}, timeout=2).read().decode())\n"
        "except OSError: print('unreachable')"
    )
    done = subprocess.run(
        sandbox.command([sys.executable, "-c", code]), env=sandbox.env(), capture_output=True, text=True
    )
    return done.stdout.strip()


def red_pixels(image: Image.Image) -> int:
    rgb = np.asarray(image.convert("RGB")).astype(int)
    return int(((rgb[..., 0] > 200) & (rgb[..., 1] < 60) & (rgb[..., 2] < 60)).sum())


def network_namespace_in_use(identity: str) -> bool:
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and os.readlink(entry / "ns" / "net") == identity:
                return True
    return False


def test_two_environments_serve_on_the_same_port_each_at_its_own_address(task_user: str) -> None:
    user = find_task_user(task_user, "password")
    assert not isinstance(user, str), user
    sandboxes = [Sandbox.start(user), Sandbox.start(user)]
    try:
        for sandbox in sandboxes:
            sandbox.wait_ready()
        first, second = sandboxes
        assert first.network is not None and second.network is not None
        port = first.network.server_port  # OSWorld's controller port, the same in every environment
        assert port == second.network.server_port and first.vm_ip != second.vm_ip
        for sandbox, name in ((first, b"first"), (second, b"second")):
            listening(sandbox, port, name)
        # The host reaches each at vm_ip:port, as OSWorld's getters reach a VM; each sees its own on loopback.
        assert wait_for(lambda: fetched(f"http://{first.vm_ip}:{port}/who")) == b"first"
        assert wait_for(lambda: fetched(f"http://{second.vm_ip}:{port}/who")) == b"second"
        assert fetched_inside(first, f"http://127.0.0.1:{port}/who") == "first"
        assert fetched_inside(second, f"http://127.0.0.1:{port}/who") == "second"
        # Neither reaches the other's.
        assert fetched_inside(first, f"http://{second.vm_ip}:{port}/who") == "unreachable"
        identities = [os.readlink(f"/proc/{s.init_pid}/ns/net") for s in sandboxes]
        links = [s.network.host_link for s in sandboxes if s.network]
        displays = [s.display.lstrip(":") for s in sandboxes]
        namespaces = [s.namespace for s in sandboxes]
    finally:
        for sandbox in sandboxes:
            sandbox.stop()
    # Everything of both ends with them: processes, network namespaces, the host's ends of the links, the displays.
    assert all(processes_in(namespace) == [] for namespace in namespaces)
    assert not any(network_namespace_in_use(identity) for identity in identities)
    for link in links:
        assert subprocess.run(["ip", "link", "show", link], capture_output=True).returncode != 0, link
    for number in displays:
        assert not Path(f"/tmp/.X11-unix/X{number}").exists() and not Path(f"/tmp/.X{number}-lock").exists()


async def test_the_display_is_the_environments_own_and_its_server_sees_it(
    task_user: str, xdisplay: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "tasks"
    probe = ["xterm", "-T", "Red Probe", "-geometry", "60x20+300+200", "-bg", "#ff0000", "-e", "sleep", "600"]
    red = {"type": "launch", "parameters": {"command": probe}}
    os_task(folder, "3a3a3a3a-0000-4000-8000-000000000001", "With a window.", [red], "true", "")
    os_task(folder, "3a3a3a3a-0000-4000-8000-000000000002", "Without one.", [], "true", "")
    adapter = OSWorldAdapter(folder)
    windowed, bare = adapter.list_tasks(TaskFilter(everything=True))
    settings = load_settings(ocr={"warm_up": False})
    environments = [Environment(f"env-{n}", xdisplay.name, tmp_path / f"env-{n}", SpawnServer()) for n in (0, 1)]
    try:
        async with anyio.create_task_group() as group:
            for environment, task in zip(environments, (windowed, bare), strict=True):
                group.start_soon(adapter.reset, environment, task)
        inner = adapter._sandboxes["env-0"].display
        assert inner != xdisplay.name
        # The window is up (its map seen from the host, as a VM's screen is).
        wait_for(lambda: any(w.title == "Red Probe" for w in windows(inner)), timeout=20)
        shown = []
        for environment in environments:
            server = adapter.server(environment, environment_server(settings, environment.display))
            async with connect(server) as client:
                result = await client.call_tool("screenshot", {})
                assert not result.is_error, result.content
                image_block = result.content[0]
                assert image_block.type == "image"
                shown.append(Image.open(io.BytesIO(base64.b64decode(image_block.data))))
    finally:
        await adapter.close()
    # The server inside env-0 shows the red terminal; env-1's screen and the runner's display have none.
    x, _ = red_centroid(shown[0])
    assert 300 * shown[0].width / 1920 < x < 1200 * shown[0].width / 1920, x
    assert not red_pixels(shown[1])
    assert all(w.title != "Red Probe" for w in windows(xdisplay.name))


def test_the_servers_model_endpoints_on_the_hosts_loopback_are_the_ports_carried_in() -> None:
    env = {
        "SYMPHONY_MODELS__CODER__BASE_URL": "http://127.0.0.1:33203/v1",
        "SYMPHONY_MODELS__GROUNDER__BASE_URL": "http://localhost/v1",
        "SYMPHONY_MODELS__ORCHESTRATOR__BASE_URL": "https://api.example.com/v1",  # reached through NAT
        "SYMPHONY_SEARCH__URL": "http://127.0.0.10:8000/",  # not this host's 127.0.0.1
        "SYMPHONY_DISPLAY__DISPLAY": ":200",
    }
    assert loopback_ports(env) == {33203, 80}


def test_the_runner_starts_no_display_for_an_adapter_that_brings_its_own(tmp_path: Path) -> None:
    """OSWorld's environments run their Xvfb inside their sandbox: the runner's slots for it have no display of their
    own (no Xvfb started, display empty), while an adapter without the attribute still gets one per slot."""
    assert brings_own_display(OSWorldAdapter(TASKS)) and not brings_own_display(object())
    settings = load_settings(ocr={"warm_up": False})
    before = our_xvfbs()
    with started_environments(2, settings, tmp_path / "own", own_display=True) as environments:
        assert [e.display for e in environments] == ["", ""]
        assert all(e.workdir.is_dir() and e.view_url is None for e in environments)
        assert our_xvfbs() == before
    with started_environments(1, settings, tmp_path / "runner's", own_display=False) as environments:
        assert environments[0].display.startswith(":")
        assert len(our_xvfbs() - before) == 1


def our_xvfbs() -> set[int]:
    """The Xvfb processes descended from this test process."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)], names[int(entry.name)] = int(rest[1]), name

    def ours(pid: int) -> bool:
        while pid > 1:
            if pid == os.getpid():
                return True
            pid = parents.get(pid, 0)
        return False

    return {pid for pid, name in names.items() if name == "Xvfb" and ours(pid)}
