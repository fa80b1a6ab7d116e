"""OSWorld on its own VMs through the runner (`bench osworld-vm --machines ...`): stand-in OSWorld controllers, each
on its own real Xvfb desktop with its own home (testkit/osworld_machines.py), are the machines. OSWorld's own `os`
task JSON is set up through each machine's controller, the real orchestrator loop (a scripted stand-in planner over
real HTTP) drives the machine through a real `symphony-mcp serve` on the OSWorld backend (an xterm it opens and
types into, on the machine's display), and OSWorld's own getter (through its PythonController on the machine's URL)
and metric score the end state. Two machines take tasks side by side; a reset command the user gives reverts them;
a finished task is not run again; a setup step that fails is a setup error, not a 0.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.machines import (
    MachineResetError,
    machine_environment,
    parse_machines,
    reset_argv,
    reset_machine,
)
from symphony_mcp.bench.osworld.remote import OSWorldVmAdapter
from symphony_mcp.bench.registry import adapter_spec
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.results_layout import read_evaluation
from symphony_mcp.bench.summary import BenchSummary
from symphony_mcp.bench.types import TaskEvaluation, TaskFilter
from symphony_mcp.config import load_settings
from symphony_mcp.errors import SettingsError
from testkit.model_server import StandInModel
from testkit.osworld_controller.process import RunningController
from testkit.osworld_host import TASKS
from testkit.osworld_machines import stand_in_machines
from testkit.osworld_runs import Planner, bench_on_machines, in_xterm, settings_for
from testkit.paths import ROOT
from testkit.ports import free_port
from testkit.scripted_planner import act
from testkit.waiting import wait_for

RENAME = "e0df059f-28a6-4169-924f-b9623e7184cc"  # OSWorld's: rename ~/Desktop/todo_list_Jan_1 (made by sudo) to _Jan_2
NOTE = "0f0f0f0f-0000-4000-8000-000000000001"  # write ~/Desktop/note.txt (exact_match on its text)
BROKEN = "ffffffff-0000-4000-8000-000000000001"  # its setup opens a file the machine does not have
HAS_DESKTOP_ENV = subprocess.run([sys.executable, "-c", "import desktop_env"], capture_output=True).returncode == 0
needs_desktop_env = pytest.mark.skipif(
    not HAS_DESKTOP_ENV, reason="desktop-env is not installed (scripts/install.sh --dev installs it with --no-deps)"
)


def os_task(folder: Path, task_id: str, instruction: str, config: list[dict], check: str, want: str) -> None:
    """A task JSON in OSWorld's format: setup steps, exact_match on a shell command run on the machine."""
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
    (folder / "os" / f"{task_id}.json").write_text(json.dumps(task), encoding="utf-8")


def task_folder(root: Path) -> Path:
    """OSWorld's rename task (its JSON unchanged) and two of ours, in OSWorld's layout."""
    folder = root / "tasks"
    (folder / "os").mkdir(parents=True)
    shutil.copy(TASKS / "os" / f"{RENAME}.json", folder / "os")
    os_task(
        folder,
        NOTE,
        "Write the word hello into a new file note.txt on my Desktop.",
        [{"type": "execute", "parameters": {"command": ["mkdir", "-p", "~/Desktop"]}}],
        "cat ~/Desktop/note.txt",
        "hello\n",
    )
    os_task(
        folder,
        BROKEN,
        "Edit the report on my Desktop.",
        [{"type": "open", "parameters": {"path": "~/Desktop/no-such-report.docx"}}],
        "true",
        "",
    )
    return folder


def on_some_machine(machines: list[RunningController], path: str) -> Callable[[], bool]:
    return lambda: any((machine.home / path).exists() for machine in machines)


@needs_desktop_env
@pytest.mark.timeout(600)  # three runs of the real loop on two machines, on a loaded 2-core machine
def test_osworld_tasks_run_on_two_machines_scored_by_osworlds_own_getters(
    stand_in: StandInModel, tmp_path: Path
) -> None:
    tasks = task_folder(tmp_path)
    with stand_in_machines(2, tmp_path / "machines") as machines:
        agent = Planner({t.task_id: str(t.instruction) for t in OSWorldVmAdapter(tasks).list_tasks(TaskFilter())})
        stand_in.script(default=agent)
        settings, results, urls = settings_for(stand_in), tmp_path / "results", [machine.url for machine in machines]
        options = {"tasks_dir": str(tasks), "network": False}

        # Solved: 1 by OSWorld's exact_match, on whichever machine took the task, the two side by side.
        agent.plans = {
            RENAME: in_xterm(
                "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2",
                on_some_machine(machines, "Desktop/todo_list_Jan_2"),
            ),
            NOTE: in_xterm("echo hello > ~/Desktop/note.txt", on_some_machine(machines, "Desktop/note.txt")),
        }
        summary, scored = bench_on_machines("osworld-vm", options, urls, settings, results)
        assert (scored[RENAME].score, scored[RENAME].failure) == (1.0, None), scored[RENAME]
        assert "exact_match('Directory exists.\\n') = 1" in scored[RENAME].detail
        assert (scored[NOTE].score, scored[NOTE].failure) == (1.0, None), scored[NOTE]
        assert scored[RENAME].steps == scored[NOTE].steps == 4
        # Each machine ran its own task: its end state is in that machine's home only, and the runs overlapped.
        homes = {f"env-{i}": machine.home for i, machine in enumerate(machines)}
        assert scored[RENAME].environment != scored[NOTE].environment
        assert (homes[scored[RENAME].environment] / "Desktop/todo_list_Jan_2").is_dir()
        assert (homes[scored[NOTE].environment] / "Desktop/note.txt").read_text() == "hello\n"
        assert not (homes[scored[RENAME].environment] / "Desktop/note.txt").exists()
        assert max(scored[RENAME].started_at, scored[NOTE].started_at) < min(
            scored[RENAME].ended_at, scored[NOTE].ended_at
        )
        # A setup step that fails (the file to open is not there) is a setup error: the agent never ran.
        assert (scored[BROKEN].failure, scored[BROKEN].steps, scored[BROKEN].score) == ("setup_error", 0, 0.0)
        assert "setup step 1 (open) failed" in scored[BROKEN].message
        assert "no-such-report.docx" in scored[BROKEN].message
        assert summary.scope.startswith("OSWorld on 2 machines: 3 of 3 tasks")
        assert "machines NOT reset between tasks" in summary.scope and "not OSWorld's score" in summary.scope

        # Not solved: 0. The user's reset command reverts each machine before every task (here: an empty Desktop),
        # so the last run's rename is gone and doing nothing does not pass.
        reset = f"sh -c {shlex.quote(f'rm -rf {tmp_path}/machines/machine-{{index}}/Desktop/*')}"
        agent.plans = {RENAME: [act("done()")], NOTE: [act("done()")]}
        summary, scored = bench_on_machines("osworld-vm", options, urls, settings, results, reset=reset)
        assert scored[RENAME].score == 0.0 and "Directory does not exist." in scored[RENAME].detail
        assert (scored[RENAME].failure, scored[NOTE].score, scored[NOTE].failure) == ("scored_zero", 0.0, "scored_zero")
        assert not any((machine.home / "Desktop/todo_list_Jan_2").exists() for machine in machines)
        assert "each reset before every task" in summary.scope

        # Resume: every task has its evaluation, so nothing runs again (the planner has no answers left to give).
        agent.plans = {}
        summary, again = bench_on_machines("osworld-vm", options, urls, settings, results, force=False)
        assert summary.ran_now == 0 and summary.overall.finished == 3
        assert {task_id: e.ended_at for task_id, e in again.items()} == {
            task_id: e.ended_at for task_id, e in scored.items()
        }


@needs_desktop_env
@pytest.mark.timeout(600)  # Ray's own processes, two actors and two runs of the real loop on a loaded 2-core machine
def test_on_ray_each_actor_drives_one_machine_and_a_rerun_resumes(
    stand_in: StandInModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench osworld-vm --backend ray --machines A,B`: a local Ray of 2 CPUs (its state in a temporary folder and HOME,
    auth off), one actor per machine, each task's end state on the machine of the environment that ran it, scored by
    OSWorld's getter there; the next run without --force runs only the task not finished yet, on one actor."""
    ray = pytest.importorskip("ray", reason="the Ray backend needs ray: pip install -e '.[dev]' installs it")
    tasks = task_folder(tmp_path)
    with stand_in_machines(2, tmp_path / "machines") as machines:
        agent = Planner({t.task_id: str(t.instruction) for t in OSWorldVmAdapter(tasks).list_tasks(TaskFilter())})
        agent.plans = {
            RENAME: in_xterm(
                "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2",
                on_some_machine(machines, "Desktop/todo_list_Jan_2"),
            ),
            NOTE: in_xterm("echo hello > ~/Desktop/note.txt", on_some_machine(machines, "Desktop/note.txt")),
        }
        stand_in.script(default=agent)
        settings = settings_for(stand_in)
        results = tmp_path / "results"
        home = tmp_path / "home"
        home.mkdir()
        for name, value in {"HOME": str(home), "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT)}.items():
            monkeypatch.setenv(name, value)  # the raylet inherits them, and the actors from it

        def on_ray(ids: tuple[str, ...] = ()) -> tuple[BenchSummary, dict[str, TaskEvaluation]]:
            urls = [machine.url for machine in machines]
            return bench_on_machines(
                "osworld-vm", {"tasks_dir": str(tasks), "network": False}, urls, settings, results,
                ids=ids, force=False, backend="ray",
            )  # fmt: skip

        ray_temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=ray_temp)
            first, scored = on_ray((RENAME, NOTE))
            rename, note = scored[RENAME], scored[NOTE]
            assert (rename.score, rename.failure, note.score, note.failure) == (1.0, None, 1.0, None), (rename, note)
            homes = {f"env-{i}": machine.home for i, machine in enumerate(machines)}
            assert rename.environment != note.environment
            assert (homes[rename.environment] / "Desktop/todo_list_Jan_2").is_dir()
            assert (homes[note.environment] / "Desktop/note.txt").read_text() == "hello\n"
            assert not (homes[rename.environment] / "Desktop/note.txt").exists()
            assert first.ran_now == 2 and first.scope.startswith("OSWorld on 2 machines")

            agent.plans = {}  # resume: only the task without an evaluation runs (its setup fails before the agent)
            again, scored = on_ray()
            assert (again.ran_now, again.overall.finished) == (1, 3)
            assert scored[BROKEN].failure == "setup_error" and scored[BROKEN].environment == "env-0"
            assert (scored[RENAME].ended_at, scored[NOTE].ended_at) == (rename.ended_at, note.ended_at)
        finally:
            ray.shutdown()
            shutil.rmtree(ray_temp, ignore_errors=True)
    assert not (home / ".ray").exists(), "Ray left its auth token in HOME"


def test_a_failing_reset_command_says_what_it_said(stand_in: StandInModel, tmp_path: Path) -> None:
    """No desktop needed: the reset fails before anything reaches the machine (the runner makes it a setup error)."""
    environment = machine_environment(
        3, "http://127.0.0.1:9", settings_for(stand_in), tmp_path, (), "sh -c 'echo no snapshot {index} >&2; exit 4'"
    )
    with pytest.raises(MachineResetError, match="exited with 4: 'no snapshot 3'"):
        reset_machine(environment, OSWorldVmAdapter().wait_for_machine)


def test_machines_and_reset_commands_are_checked() -> None:
    assert parse_machines(["http://10.0.0.5:5000/", "http://10.0.0.6:5000"]) == (
        "http://10.0.0.5:5000",
        "http://10.0.0.6:5000",
    )
    assert parse_machines(["ssh://admin@mac-mini.local:22"]) == ("ssh://admin@mac-mini.local:22",)
    with pytest.raises(SettingsError, match="URLs like"):
        parse_machines(["10.0.0.5:5000"])
    with pytest.raises(SettingsError, match="twice"):
        parse_machines(["http://a:5000", "http://a:5000/"])
    assert reset_argv("virsh snapshot-revert vm{index} init --running # {host}", "http://10.0.0.5:5000", 2) == [
        "virsh", "snapshot-revert", "vm2", "init", "--running", "#", "10.0.0.5",
    ]  # fmt: skip
    with pytest.raises(SettingsError, match="--machines"):
        BenchRequest("m:f", TaskFilter(), machine_reset="true")
    quiet = Console(file=io.StringIO())
    vm = adapter_spec("osworld-vm", None)
    with pytest.raises(SettingsError, match="osworld-vm runs on remote machines: give them with --machines http://"):
        run_bench(BenchRequest(vm, TaskFilter()), load_settings(), quiet)
    with pytest.raises(SettingsError, match="osworld-vm takes machines as http:// or https:// URLs"):
        run_bench(BenchRequest(vm, TaskFilter(), machines=("ssh://me@10.0.0.5:22",)), load_settings(), quiet)
    local = BenchRequest(adapter_spec("osworld", None), TaskFilter(), machines=("http://10.0.0.5:5000",))
    with pytest.raises(SettingsError, match="osworld runs on this host's displays"):
        run_bench(local, load_settings(), quiet)


def test_the_vm_listing_is_the_whole_set_with_what_the_machines_cannot_do(tmp_path: Path) -> None:
    """Machines have OSWorld's image: only steps this adapter does not run, and (without network) files missing from
    the cache and the live web, are reasons to skip."""
    everything = {t.task_id[:8]: t for t in OSWorldVmAdapter(TASKS).list_tasks(TaskFilter())}
    offline = {t.task_id[:8]: t for t in OSWorldVmAdapter(TASKS, network=False).list_tasks(TaskFilter())}
    assert {t.benchmark for t in everything.values()} == {"osworld-vm"}
    assert {t.domain for t in everything.values()} == {"chrome", "gimp", "os", "vlc"}  # not only the os default
    assert everything["e0df059f"].skip_reason is None  # sudo, GNOME-free: fine on OSWorld's image
    poster = "5ea617a3"  # downloads its input: fetched here with the network, needs the cache without
    assert everything[poster].skip_reason is None
    assert (
        offline[poster].skip_reason == "needs the network (a download step; offline: OSWorld's cache in OSWORLD_CACHE)"
    )
    (tmp_path / "os").mkdir()
    drive = [{"type": "googledrive", "parameters": {"settings_file": "settings.yml", "operation": ["delete"]}}]
    os_task(tmp_path, NOTE, "Read the file.", drive, "true", "")
    [listed] = OSWorldVmAdapter(tmp_path).list_tasks(TaskFilter())
    assert listed.skip_reason == "setup step 'googledrive' is not run on remote machines by this adapter"


@needs_desktop_env
@pytest.mark.timeout(300)
def test_chrome_tab_steps_act_on_the_machines_chrome_over_its_devtools_port(
    stand_in: StandInModel, tmp_path: Path
) -> None:
    """OSWorld's chrome_open_tabs / chrome_close_tabs through the machine's DevTools port (the adapter's
    chromium_port), after a launch step started Chromium there; scored by what the machine's Chrome lists."""
    port = free_port()
    first, second = "data:text/html,first", "data:text/html,second"
    pid_file = tmp_path / "chromium.pid"
    chromium = (
        f"echo $$ > {pid_file}; exec /usr/lib/chromium/chromium --remote-debugging-port={port} "
        f"--user-data-dir={tmp_path / 'profile'} --no-sandbox --disable-gpu --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync about:blank"
    )
    listing = (
        'python3 -c "import json, urllib.request; '
        f"print([p['url'] for p in json.load(urllib.request.urlopen('http://127.0.0.1:{port}/json')) "
        "if p['type'] == 'page'])\""
    )
    tasks = tmp_path / "tasks"
    (tasks / "os").mkdir(parents=True)
    config = [
        {"type": "launch", "parameters": {"command": ["sh", "-c", chromium]}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [first, second]}},
        {"type": "chrome_close_tabs", "parameters": {"urls_to_close": [first]}},
    ]
    os_task(tasks, NOTE, "Look at the open tab.", config, listing, f"{[second]}\n")
    stand_in.script(default=lambda request: act("done()"))
    settings = settings_for(stand_in)
    settings = settings.model_copy(
        update={"orchestrator": settings.orchestrator.model_copy(update={"results_dir": tmp_path / "results"})}
    )
    with stand_in_machines(1, tmp_path / "machines") as machines:
        request = BenchRequest(
            adapter_spec("osworld-vm", None),
            TaskFilter(),
            (("tasks_dir", str(tasks)), ("chromium_port", port)),
            quiet=True,
            machines=(machines[0].url,),
        )
        try:
            _, path = run_bench(request, settings, Console(file=io.StringIO()))
        finally:
            if pid_file.exists():
                stop_pid(int(pid_file.read_text()))
    evaluation = read_evaluation(path.parent / "os" / NOTE)
    assert evaluation is not None
    assert (evaluation.score, evaluation.failure) == (1.0, None), evaluation
    assert f"exact_match({f'{[second]}' + chr(10)!r}) = 1" in evaluation.detail, evaluation.detail


def stop_pid(pid: int) -> None:
    """End the Chromium the task's launch step started on the machine (by the pid it wrote)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: ended(pid), timeout=15)


def ended(pid: int) -> bool:
    """Gone, or a zombie its parent (the stand-in controller, which never waits for what it launches) has not reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True
