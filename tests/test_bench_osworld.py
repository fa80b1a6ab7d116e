"""OSWorld offline: OSWorld's own `os` task JSONs (tests/data/osworld), set up on a real Xvfb desktop as the
task user, run by the real orchestrator loop (a stand-in planner over real HTTP, the real server spawned on
the environment's display, a real xterm the planner opens and types into) through the benchmark runner, and
scored by OSWorld's own metric functions from desktop-env.

The task user `user` is made by `symphony-mcp osworld-user` for the session and removed after it (when this
process is root and it did not exist); without root or desktop-env the tests that need them are skipped.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from symphony_mcp.bench.environments import started_environments
from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.account import RECORD, find_task_user
from symphony_mcp.bench.osworld.adapter import OSWorldError
from symphony_mcp.bench.osworld.setup import SetupError, SetupRunner
from symphony_mcp.bench.osworld.tasks import Host, load_tasks, skip_reason
from symphony_mcp.bench.osworld.turns import HomeTurns, turn_file
from symphony_mcp.bench.results import read_evaluation, task_dir
from symphony_mcp.bench.runner import make_plan, run_local
from symphony_mcp.bench.types import BenchTask, Environment, TaskEvaluation, TaskFilter
from symphony_mcp.config import Settings, load_settings
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.desktop.x11_windows import X11WindowManager
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer
from symphony_mcp.orchestrator.records import RunRecord
from testkit.model_server import ModelRequest, StandInModel
from testkit.osworld_cache import PHOTOS, TRASH, offline_cache
from testkit.scripted_planner import PLANNER, act
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tests" / "data" / "osworld"
ACCOUNT_COMMAND = [sys.executable, "-m", "symphony_mcp", "osworld-user"]  # the shipped script, through the CLI
RENAME = "e0df059f-28a6-4169-924f-b9623e7184cc"  # rename ~/Desktop/todo_list_Jan_1 (made by sudo) to ..._Jan_2
PYTHON3 = "c288e301-e626-4b98-a1ab-159dcb162af5"  # infeasible: no setup
HIERARCHY = "4783cc41-c03c-4e1b-89b4-50658f642bd5"  # infeasible: mkdir setup, pyautogui clicks, activate_window
HAS_DESKTOP_ENV = subprocess.run([sys.executable, "-c", "import desktop_env"], capture_output=True).returncode == 0
needs_desktop_env = pytest.mark.skipif(
    not HAS_DESKTOP_ENV, reason="desktop-env is not installed (scripts/install.sh --dev installs it with --no-deps)"
)


@pytest.fixture(scope="module")
def task_user() -> Iterator[str]:
    """The account OSWorld's tasks assume, made by the project's script and removed after (when we made it)."""
    if os.geteuid() != 0:
        pytest.skip("the OSWorld tasks run as the account 'user', which only root can create and act as")
    created = subprocess.run([*ACCOUNT_COMMAND, "status"], capture_output=True, text=True).stdout
    made_here = "does not exist" in created
    if made_here:
        subprocess.run([*ACCOUNT_COMMAND, "create"], check=True, capture_output=True)
    elif "created by this script" not in created:
        pytest.skip(f"an account 'user' exists that `symphony-mcp osworld-user` did not create: {created.strip()}")
    yield "user"
    if made_here:
        done = subprocess.run([*ACCOUNT_COMMAND, "remove"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert not RECORD.exists() and not Path("/home/user").exists()


def host(sudo: bool = True, systemd: bool = False, missing: tuple[str, ...] = ()) -> Host:
    """This machine as classification sees it, with chosen facts (the input of a pure function)."""
    user = find_task_user("user", "password")
    return Host(
        user=user if not isinstance(user, str) else None,
        user_problem=user if isinstance(user, str) else "",
        programs=lambda name: name not in missing and (name != "sudo" or sudo),
        systemd=systemd,
        pyautogui=True,
    )


@needs_desktop_env
def test_every_os_task_is_listed_runnable_or_with_its_reason(task_user: str, tmp_path: Path) -> None:
    tasks = {t["id"][:8]: t for t in load_tasks(TASKS)}
    assert len(tasks) == 31 and {t["_domain"] for t in tasks.values()} == {"os"}
    here = host(sudo=True)
    reasons = {key: skip_reason(task, here) for key, task in tasks.items()}
    runnable = sorted(key for key, reason in reasons.items() if reason is None)
    assert runnable == ["4783cc41", "a462a795", "b3d4a89c", "c288e301", "e0df059f"]
    assert reasons["0b35aee5"] == "needs the network (a download step; offline: OSWorld's cache in OSWORLD_CACHE)"
    assert reasons["13584542"] and "GNOME Terminal" in reasons["13584542"]
    assert reasons["3ce045a0"] == "needs GNOME (gsettings / GNOME Shell)"
    assert reasons["28cc3b7e"] and "PulseAudio" in reasons["28cc3b7e"]
    assert reasons["6ebbfb01"] == "needs the network (installs packages)"
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
    assert skip_reason(tasks["3ce045a0"], nobody) == "needs GNOME (gsettings / GNOME Shell)"  # the task's own first


@needs_desktop_env
def test_adapter_lists_the_default_subset_and_selections(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = OSWorldAdapter(TASKS)
    assert [t.domain for t in adapter.list_tasks(TaskFilter())] == ["os"] * 31
    [task] = adapter.list_tasks(TaskFilter(task_ids=(PYTHON3,)))
    assert task.benchmark == "osworld" and task.instruction and "Python3" in task.instruction
    assert adapter.list_tasks(TaskFilter(domains=("chrome",))) == []
    monkeypatch.delenv("OSWORLD_TASKS", raising=False)
    with pytest.raises(OSWorldError, match="set OSWORLD_TASKS to OSWorld's evaluation_examples/examples"):
        OSWorldAdapter().list_tasks(TaskFilter())
    monkeypatch.setenv("OSWORLD_TASKS", str(TASKS))
    assert len(OSWorldAdapter().list_tasks(TaskFilter(everything=True))) == 31


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


def windows(display: str) -> list[WindowInfo]:
    manager = X11WindowManager(display)
    try:
        return manager.list_windows()
    finally:
        manager.close()


def test_setup_steps_run_as_the_task_user_with_osworlds_semantics(
    task_user: str, xdisplay: Any, tmp_path: Path
) -> None:
    user = find_task_user(task_user, "password")
    assert not isinstance(user, str), user
    user.restore_home()
    runner = SetupRunner(user, xdisplay.name, tmp_path / "cache", (1920, 1080), open_timeout=20)
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
        assert (user.home / "n").read_text() == "3\n"
        assert (user.home / "Desktop" / "made").stat().st_uid == user.uid  # ~/ expanded, made by `user`
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
        probe = next(w for w in windows(xdisplay.name) if w.title == "OSWorld Probe")
        assert probe.active
        runner.run([{"type": "close_window", "parameters": {"window_name": "OSWorld Probe", "strict": True}}])
        wait_for(lambda: all(w.title != "OSWorld Probe" for w in windows(xdisplay.name)))
        # open: xdg-open as `user` (its own default app for text, a terminal titled with the file), then the
        # window whose title holds the file name is waited for and activated.
        viewer = "[Desktop Entry]\nType=Application\nName=Viewer\nExec=xterm -T %f -e sleep 600\nMimeType=text/plain;\n"
        (user.home / ".local/share/applications").mkdir(parents=True)
        (user.home / ".local/share/applications/viewer.desktop").write_text(viewer)
        (user.home / ".config").mkdir(exist_ok=True)
        (user.home / ".config/mimeapps.list").write_text("[Default Applications]\ntext/plain=viewer.desktop\n")
        (user.home / "Desktop/notes.txt").write_text("notes\n")
        runner.run([{"type": "open", "parameters": {"path": "~/Desktop/notes.txt"}}])
        assert any(w.title.endswith("notes.txt") and w.active for w in windows(xdisplay.name))
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
        with pytest.raises(SetupError, match="step 1: unknown type 'chrome_open_tabs'"):
            runner.run([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["about:blank"]}}])
        with pytest.raises(SetupError, match=r"application or file not found: ~/Desktop/absent\.txt"):
            runner.run([{"type": "open", "parameters": {"path": "~/Desktop/absent.txt"}}])
    finally:
        runner.end_launched()
    # The launched terminal and xdg-open's viewer (launched by the open step) are ended with their sessions.
    wait_for(lambda: subprocess.run(["pgrep", "-u", "user"], capture_output=True).returncode == 1)


XTERM_LEFT = ["xterm", "-T", "Left Over", "-e", "sleep", "600"]


def turn_taken(path: Path) -> bool:
    """Whether some environment holds the home (a probe's own lock attempt fails)."""
    probe = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(probe)
    return False


async def test_environments_take_turns_on_the_home_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "turn.lock"
    first, second = HomeTurns(path), HomeTurns(path)  # as two processes have (each its own open file)
    await first.take("env-0")
    assert turn_taken(path)
    async with anyio.create_task_group() as group:
        group.start_soon(second.take, "env-1")
        await anyio.wait_all_tasks_blocked()  # env-1 tried and now waits
        assert "env-1" not in second._held
        first.give("env-0")
    assert "env-1" in second._held and turn_taken(path)
    second.give_all()
    assert not turn_taken(path)


@needs_desktop_env
async def test_reset_closes_what_was_left_and_holds_the_home_until_evaluate(
    task_user: str, xdisplay: Any, tmp_path: Path
) -> None:
    adapter = OSWorldAdapter(TASKS)
    [task] = adapter.list_tasks(TaskFilter(task_ids=(PYTHON3,)))
    environment = Environment("env-0", xdisplay.name, tmp_path, SpawnServer())
    # What the last task left open is closed, as a VM revert would (here: a terminal the agent opened).
    left = subprocess.Popen(
        ["xterm", "-T", "Left Over", "-e", "sleep", "600"], env={**os.environ, "DISPLAY": xdisplay.name}
    )
    try:
        wait_for(lambda: any(w.title == "Left Over" for w in windows(xdisplay.name)))
        await adapter.reset(environment, task)
        assert left.wait(timeout=10) is not None and not any(w.title == "Left Over" for w in windows(xdisplay.name))
    finally:
        left.kill()
    assert turn_taken(turn_file("user"))
    record = RunRecord(task_id=task.task_id, instruction="x", started_at=0.0, max_steps=1, outcome="success")
    score = await adapter.evaluate(environment, task, TaskOutcome(task.task_id, "success", False, tmp_path, record, []))
    assert score.value == 0.0 and not turn_taken(turn_file("user"))
    await adapter.close()


# End to end through the runner and the real orchestrator loop.


Answer = str | Callable[[], str]


class Planner:
    """The stand-in planner: what each task's run does is chosen per task id before a run. An answer may be
    a function, called when the planner is asked (e.g. to look at the end state before saying done)."""

    def __init__(self, instructions: dict[str, str]) -> None:
        self.instructions = instructions
        self.plans: dict[str, list[Answer]] = {}

    def __call__(self, request: ModelRequest) -> str:
        text = "\n".join(request.texts())
        task = next(t for t, instruction in self.instructions.items() if instruction in text)
        answer = self.plans[task].pop(0)
        return answer if isinstance(answer, str) else answer()


def settings_for(stand_in: StandInModel, max_steps: int = 5) -> Settings:
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 0}
    return load_settings(
        models={"orchestrator": {**endpoint, "model": PLANNER}},
        orchestrator={"max_steps": max_steps, "reflection": False},
        ocr={"warm_up": False},
    )


async def run(adapter: OSWorldAdapter, settings: Settings, results: Path, *ids: str) -> dict[str, TaskEvaluation]:
    plan = make_plan(adapter, TaskFilter(task_ids=ids), results, force=True)
    assert {t.task_id for t in plan.pending} == set(ids), [(t.task_id, t.skip_reason) for t in plan.skipped]
    with started_environments(1, settings, results / "environments") as environments:
        await run_local(adapter, environments, plan, settings, results)
    evaluations = {}
    for task in plan.pending:
        evaluation = read_evaluation(task_dir(results, task))
        assert evaluation is not None
        assert (task_dir(results, task) / "result.txt").read_text().strip() == str(evaluation.score)
        evaluations[task.task_id] = evaluation
    return evaluations


def in_xterm(command: str, finished: Path) -> list[Answer]:
    """Open a terminal, type the command, press Enter; say done once the screen would show it has run (the
    file it makes is there: a real planner would see the prompt come back)."""

    def done() -> str:
        wait_for(finished.exists, timeout=20)
        return act("done()", "The command has run.")

    return [
        act("open_app(target='xterm -e bash --norc --noprofile', wait_seconds=30)", "Open a terminal."),
        act(f"type(text={command!r})", "Type the command."),
        act('hotkey(keys=["enter"])', "Run it."),
        done,
    ]


def rename_in_xterm(target: str) -> list[Answer]:
    desktop = "/home/user/Desktop"
    return in_xterm(f"mv {desktop}/todo_list_Jan_1 {desktop}/{target}", Path(desktop) / target)


@needs_desktop_env
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
        RENAME: rename_in_xterm("todo_list_Jan_2"),
        PYTHON3: [act('fail(reason="Ubuntu keeps python3 as python3; changing the default breaks the system")')],
        HIERARCHY: [act("done()")],
        TRASH: in_xterm(f"mv {trash}/poster_party_night.webp {desktop}/", Path(desktop, "poster_party_night.webp")),
        PHOTOS: in_xterm(
            f"find {desktop}/photos -name '*.jpg' -exec cp {{}} {desktop}/cpjpg/ \\; ; touch /tmp/osworld-copied",
            Path("/tmp/osworld-copied"),
        ),
    }
    Path("/tmp/osworld-copied").unlink(missing_ok=True)
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

    agent.plans = {RENAME: rename_in_xterm("todo_list_Jan_3")}
    scored = await run(adapter, settings, results, RENAME)
    assert (scored[RENAME].score, scored[RENAME].outcome, scored[RENAME].failure) == (0.0, "unverified", "scored_zero")
    assert Path("/home/user/Desktop/todo_list_Jan_3").is_dir()  # the wrong rename did happen

    # Runs that end in "fail" without the planner's fail(): no usable action on the last step. An infeasible
    # task scores 1 only for fail() itself; fail() on a feasible task scores 0, as in OSWorld.
    short = settings_for(stand_in, max_steps=1)
    agent.plans = {PYTHON3: [act("wait(seconds=1)")] * 5, RENAME: [act('fail(reason="I cannot find it")')]}
    scored = await run(adapter, short, results, PYTHON3, RENAME)
    assert (scored[PYTHON3].score, scored[PYTHON3].outcome) == (0.0, "fail")
    assert scored[PYTHON3].detail == "infeasible task: the agent did not say fail"
    assert (scored[RENAME].score, scored[RENAME].outcome) == (0.0, "fail")
    assert scored[RENAME].detail == "the agent said fail on a feasible task"
