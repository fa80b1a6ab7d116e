"""MacOSArena through the runner over a real OpenSSH server (testkit/sshd.py): sshd on a loopback port with throwaway
keys logs in a test user whose python3 runs the SSH backend's agent on the tests' Xvfb, so "the machine" is another
account. Task JSONs are written here in MacOSArena's shape (tasks/<app>/<n>.json: id, instruction, config of `cmd`
steps, related_apps, evaluator func/conj/parameters/expected). The stand-in planner solves a task with open_app,
which the task's server on the SSH backend starts on the machine as its user; the tasks' own shell-level checks then
run over SSH: 1 when the machine's files say solved, 0 when not.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pwd
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from symphony_mcp.bench.command import list_tasks, run_bench
from symphony_mcp.bench.machines import MachineResetError, machine_environment, reset_machine
from symphony_mcp.bench.macosarena import getters
from symphony_mcp.bench.macosarena.adapter import MacOSArenaAdapter
from symphony_mcp.bench.macosarena.machine import ArenaMachine, MachineAccess
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.runner import NoEnvironmentError
from symphony_mcp.bench.summary import read_summary
from symphony_mcp.bench.types import EVALUATION_FILE, TaskFilter
from symphony_mcp.config import load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.errors import InvalidInputError, SettingsError
from symphony_mcp.orchestrator.api import TaskOutcome
from testkit.model_server import ModelRequest, StandInModel
from testkit.scripted_planner import MEMORYER, PLANNER, act, is_step_check, on_track, step_checked, step_of
from testkit.sshd import RunningSshd, running_sshd, sshd_unavailable
from testkit.waiting import wait_for

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=str(sshd_unavailable()))

SPEC = "symphony_mcp.bench.macosarena:MacOSArenaAdapter"
MARK = re.compile(r"\[(m\d)\]")


@pytest.fixture
def sshd(xdisplay: VirtualDisplay) -> Iterator[RunningSshd]:
    with running_sshd() as server:
        yield server


def arena_task(
    task_id: str,
    instruction: str,
    commands: list[str],
    checks: list[tuple[str, dict[str, Any], str, Any]],
    related_apps: tuple[str, ...] = ("terminal",),
) -> dict[str, Any]:
    """A task JSON as MacOSArena writes it; checks are (getter, its parameters, metric, the metric's parameters)."""
    return {
        "id": task_id,
        "system_img": "default",
        "instruction": instruction,
        "config": [{"type": "cmd", "parameters": {"command": commands}}],
        "related_apps": list(related_apps),
        "evaluator": {
            "func": [getter for getter, _, _, _ in checks],
            "conj": "and",
            "parameters": [parameters for _, parameters, _, _ in checks],
            "expected": [{"type": "common", "rules": {"func": m, "parameters": p}} for _, _, m, p in checks],
        },
    }


def write_tasks(root: Path, folder: str) -> None:
    """Tasks on the machine's folder ~/<folder>: two solved by the agent, one not, one whose setup fails, one whose
    getter reads macOS app state (skipped)."""
    tasks = {
        "terminal/1.json": arena_task(
            "terminal_1",
            f"[m1] In the Terminal, create a new file at ~/{folder}/1.txt",
            [f"mkdir -p ~/{folder}", f"rm -f ~/{folder}/1.txt"],
            [
                (
                    "terminal_check_files_in_directory",
                    {"folder_path": f"~/{folder}", "required_files": ["1.txt"]},
                    "is_true",
                    [],
                )
            ],
        ),
        "terminal/2.json": arena_task(
            "terminal_2",
            f"[m2] In the Terminal, create a new file at ~/{folder}/2.txt",
            [f"mkdir -p ~/{folder}", f"rm -f ~/{folder}/2.txt"],
            [("finder_check_file_exists", {"file_path": f"~/{folder}/2.txt"}, "is_true", [])],
        ),
        "multi_app/terminal_multi_3.json": arena_task(
            "multiapp_3",
            f"[m3] Check the contents of path.txt, and delete files in ~/{folder}/docs that are not listed in it",
            [
                f"mkdir -p ~/{folder}/docs && cd ~/{folder}/docs && touch test1.txt test2.txt test3.txt",
                f'printf "%s\\n" ~/{folder}/docs/test1.txt ~/{folder}/docs/test2.txt > ~/{folder}/path.txt',
            ],
            [
                (
                    "terminal_check_files_in_directory",
                    {"folder_path": f"~/{folder}/docs", "required_files": ["test1.txt", "test2.txt"]},
                    "is_true",
                    [],
                ),
                (
                    "terminal_check_files_in_directory",
                    {"folder_path": f"~/{folder}/docs", "required_files": ["test3.txt"]},
                    "is_false",
                    [],
                ),
                (
                    "finder_read_file_contents",
                    {"file_path": f"~/{folder}/path.txt"},
                    "find_str_in_list",
                    [["docs/test1.txt", "docs/test2.txt"]],
                ),
            ],
            related_apps=("finder", "terminal"),
        ),
        "finder/1.json": arena_task(
            "finder_1",
            "[m4] Rename the folder",
            [f"ls ~/{folder}/no-such-fixture"],  # a setup command that fails
            [("finder_check_folder_exists", {"folder_path": f"~/{folder}/renamed"}, "is_true", [])],
        ),
        "notes/1.json": arena_task(
            "notes_1",
            "[m5] Write a note",
            ["open -a Notes"],
            [("notes_get_note_plaintext_by_name", {"name": "x", "folder": None}, "find_str_in_list", ["x"])],
            related_apps=("notes",),
        ),
    }
    for name, task in tasks.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(task, indent=1), encoding="utf-8")


class Agent:
    """The planner solves m1 and m3 with a command open_app starts on the machine (then waits, as a model reading the
    screen would, until it has run: the test sees the machine's files); m2 it calls done at once."""

    def __init__(self, home: Path, folder: str) -> None:
        self.commands = {"m1": f"touch ~/{folder}/1.txt", "m3": f"rm ~/{folder}/docs/test3.txt"}
        self.ran = {
            "m1": lambda: (home / folder / "1.txt").exists(),
            "m3": lambda: not (home / folder / "docs" / "test3.txt").exists(),
        }
        self.planned: list[str] = []

    def __call__(self, request: ModelRequest) -> str:
        if request.body["model"] == MEMORYER:
            return step_checked() if is_step_check(request) else on_track()
        mark = next(m[1] for text in request.texts() if (m := MARK.search(text)))
        self.planned.append(mark)
        if mark in self.commands and step_of(request) == 1:
            return act(f"open_app(target={f'sh -c {shlex.quote(self.commands[mark])}'!r})", "A command does it.")
        if mark in self.ran:
            wait_for(self.ran[mark], timeout=30)
        return act("done()", "Finished.")


def options(tasks: Path, sshd: RunningSshd, display: str) -> tuple[tuple[str, object], ...]:
    return (
        ("tasks_dir", str(tasks)),
        ("key_file", str(sshd.key_file)),
        ("known_hosts", str(sshd.known_hosts)),
        ("python", "/usr/bin/python3"),  # the machine's: python3-xlib, nothing of this repository
        ("display", display),
    )


def test_tasks_run_on_the_machine_and_are_scored_by_their_shell_checks(
    sshd: RunningSshd, xdisplay: VirtualDisplay, stand_in: StandInModel, tmp_path: Path
) -> None:
    folder = f"arena-{tmp_path.name}"
    tasks, results = tmp_path / "tasks", tmp_path / "results"
    write_tasks(tasks, folder)
    agent = Agent(sshd.home, folder)
    stand_in.script(default=agent)
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 0}
    settings = load_settings(
        models={
            "orchestrator": {**endpoint, "model": PLANNER},
            "memoryer": {**endpoint, "model": MEMORYER},
        },
        orchestrator={"results_dir": str(results), "max_steps": 4},
        display={"resolution": "1280x800"},
    )
    request = BenchRequest(SPEC, TaskFilter(), options(tasks, sshd, xdisplay.name), quiet=True, machines=(sshd.url,))
    try:
        summary, written = run_bench(request, settings, Console(file=io.StringIO()))
        by_id = {row.task_id: row for row in summary.tasks}
        assert set(by_id) == {"terminal_1", "terminal_2", "multi_app_terminal_multi_3", "finder_1"}
        assert (by_id["terminal_1"].score, by_id["terminal_1"].failure) == (1.0, None)
        assert (by_id["multi_app_terminal_multi_3"].score, by_id["multi_app_terminal_multi_3"].failure) == (1.0, None)
        assert (by_id["terminal_2"].score, by_id["terminal_2"].failure) == (0.0, "scored_zero")
        assert "finder_check_file_exists" in by_id["terminal_2"].message  # the check and its value, as the reason
        assert by_id["finder_1"].failure == "setup_error" and "exited with 2" in by_id["finder_1"].message
        assert "m4" not in agent.planned  # a task set up halfway is never handed to the agent
        made = sshd.home / folder
        assert (made / "1.txt").exists() and sorted(p.name for p in (made / "docs").iterdir()) == [
            "test1.txt",
            "test2.txt",
        ]  # the commands ran on the machine, as its user
        assert (made / "1.txt").stat().st_uid == sshd.home.stat().st_uid
        [skipped] = summary.skipped
        assert skipped.task_id == "notes_1" and "notes_get_note_plaintext_by_name reads macOS application" in (
            skipped.reason
        )
        assert summary.scope == (
            "MacOSArena on 1 machine: 4 of 5 tasks, 0 infeasible (the tasks whose checks are shell commands; machines "
            "NOT reset between tasks: a task starts where the last one left; not MacOSArena's score)"
        )
        assert read_summary(written.parent).overall.successes == 2
        evaluation = json.loads((results / "macosarena" / "terminal" / "terminal_1" / EVALUATION_FILE).read_text())
        assert "terminal_check_files_in_directory" in evaluation["detail"] and "-> True" in evaluation["detail"]
        assert "Terminal not restarted before the checks" in evaluation["detail"]  # said on a Linux machine

        agent.planned.clear()  # resume: finished tasks are not run again, the one that failed setup is
        summary, _ = run_bench(request, settings, Console(file=io.StringIO()))
        assert agent.planned == [] and summary.ran_now == 0 and summary.overall.successes == 2
    finally:
        shutil.rmtree(sshd.home / folder, ignore_errors=True)


def test_the_listing_says_which_tasks_run_and_why_the_others_do_not(tmp_path: Path) -> None:
    write_tasks(tmp_path, "arena")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "1.json").write_text('{"id": "b", "instruction": "x"}')
    lines = list_tasks(SPEC, TaskFilter(), (("tasks_dir", str(tmp_path)),))
    assert "terminal/terminal_1" in lines and "multi_app/multi_app_terminal_multi_3" in lines
    [notes] = [line for line in lines if line.startswith("notes/notes_1")]
    assert "SKIPPED: the getter notes_get_note_plaintext_by_name reads macOS application state" in notes
    [broken] = [line for line in lines if line.startswith("broken/broken_1")]
    assert "SKIPPED: not a MacOSArena task JSON" in broken
    assert "# 4 of 6 selected tasks runnable here, 0 of them infeasible" in lines
    assert any(line.startswith("# tasks from") and "4 of 6 with shell-level checks" in line for line in lines)


def test_machines_are_given_with_bench_machines_as_ssh_urls(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks", "arena")
    settings, quiet = (
        load_settings(orchestrator={"results_dir": str(tmp_path / "results")}),
        Console(file=io.StringIO()),
    )
    given = (("tasks_dir", str(tmp_path / "tasks")),)
    with pytest.raises(SettingsError, match="macosarena runs on remote machines: give them with --machines ssh://"):
        run_bench(BenchRequest(SPEC, TaskFilter(), given), settings, quiet)
    with pytest.raises(SettingsError, match="macosarena takes machines as ssh:// URLs"):
        run_bench(BenchRequest(SPEC, TaskFilter(), given, machines=("http://10.0.0.5:5000",)), settings, quiet)
    with pytest.raises(SettingsError, match="does not take these options"):  # machines and reset_command are gone
        run_bench(BenchRequest(SPEC, TaskFilter(), (*given, ("reset_command", "true"))), settings, quiet)
    no_user = BenchRequest(SPEC, TaskFilter(), given, machines=("ssh://mac-mini.local:22",))
    with pytest.raises(NoEnvironmentError, match=r"env-0: .*ssh://user@host\[:port\]"):  # the SSH backend's check
        run_bench(no_user, settings, quiet)
    adapter = MacOSArenaAdapter(tasks_dir=tmp_path / "none")
    with pytest.raises(InvalidInputError, match="no MacOSArena task folder"):
        adapter.list_tasks(TaskFilter())


def adapter_for(tasks: Path, sshd: RunningSshd, display: str) -> MacOSArenaAdapter:
    return MacOSArenaAdapter(
        tasks_dir=tasks,
        key_file=sshd.key_file,
        known_hosts=sshd.known_hosts,
        python="/usr/bin/python3",
        display=display,
    )


@pytest.mark.anyio
async def test_the_reset_command_runs_on_this_host_before_each_task_and_a_failing_one_stops_it(
    sshd: RunningSshd, xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    """The runner's path per task (runner.run_one): the --machine-reset command, the adapter's wait for the machine
    (a new SSH login), then the adapter's reset (the task's own steps)."""
    folder = f"arena-{tmp_path.name}"
    tasks, resets = tmp_path / "tasks", tmp_path / "resets.txt"
    write_tasks(tasks, folder)
    reset = f"sh -c {shlex.quote(f'echo {{index}} {{url}} >> {resets}')}"
    adapter = adapter_for(tasks, sshd, xdisplay.name)
    environment = machine_environment(0, sshd.url, load_settings(), tmp_path / "env-0", (), reset)
    [task] = adapter.list_tasks(TaskFilter(task_ids=("terminal_1",)))
    no_outcome = cast(TaskOutcome, None)  # the checks read the machine, never the agent's outcome
    await adapter.setup(environment)
    try:
        await asyncio.to_thread(reset_machine, environment, adapter.wait_for_machine)
        assert "[m1]" in await adapter.reset(environment, task)
        assert resets.read_text() == f"0 {sshd.url}\n" and (sshd.home / folder).is_dir()  # reset, then the steps
        score = await adapter.evaluate(environment, task, no_outcome)
        assert score.value == 0.0 and "-> False" in score.detail
        (sshd.home / folder / "1.txt").write_text("")
        assert (await adapter.evaluate(environment, task, no_outcome)).value == 1.0
        await asyncio.to_thread(reset_machine, environment, adapter.wait_for_machine)
        await adapter.reset(environment, task)  # the task's own steps remove it again
        assert resets.read_text().count(sshd.url) == 2 and not (sshd.home / folder / "1.txt").exists()
        failing = replace(environment, machine_reset="sh -c 'echo no VM left >&2; exit 3'")
        with pytest.raises(MachineResetError, match=r"exited with 3: .*no VM left"):
            await asyncio.to_thread(reset_machine, failing, adapter.wait_for_machine)
    finally:
        await adapter.close()
        shutil.rmtree(sshd.home / folder, ignore_errors=True)


def test_the_shell_getters_read_the_machine_as_upstreams_do(
    sshd: RunningSshd, xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    """Each shell-level getter over SSH on files made for it in the user's home, true and false."""
    folder = sshd.home / f"arena-{tmp_path.name}"
    base = f"~/{folder.name}"
    uid = pwd.getpwnam(sshd.user).pw_uid
    machine = ArenaMachine(MachineAccess(sshd.url, sshd.known_hosts, sshd.key_file, "/usr/bin/python3", xdisplay.name))
    history = sshd.home / ".bash_history"
    kept_history = history.read_bytes() if history.exists() else None
    try:
        folder.mkdir()
        script = folder / ".my_echo_macos.sh"
        script.write_text("echo 'macOS task complete'\n")
        script.chmod(0o700)
        os.chown(folder, uid, -1)
        os.chown(script, uid, -1)
        assert getters.terminal_check_echo_macos_script(machine, base)
        script.chmod(0o744)  # others may read it: refused, as upstream's modes say
        assert not getters.terminal_check_echo_macos_script(machine, base)
        script.chmod(0o700)
        (folder / ".other_echo_macos").write_text("echo x\n")  # two matches: refused
        assert not getters.terminal_check_echo_macos_script(machine, base)

        history.write_text("ls\ndu . | sort -nr | head -n10\n")
        assert getters.terminal_check_command_in_history(machine, "du . | sort -nr | head -n10")
        assert not getters.terminal_check_command_in_history(machine, "rm -rf /")
        assert getters.finder_read_file_contents(machine, f"{base}/.my_echo_macos.sh") == "echo 'macOS task complete'"
        assert getters.finder_read_file_contents(machine, f"{base}/missing.txt") == ""
        assert getters.finder_check_folder_exists(machine, base) and not getters.finder_check_file_exists(machine, base)
        assert not getters.terminal_check_package_in_conda_env(machine, "macos_eval", "spotify")  # no conda here
        assert not getters.terminal_check_archive_validity_count_name_mod(machine, base)  # no archive
        quoted = f"{base}/x'; touch {base}/injected; '"  # a task's value is data, never shell
        assert not getters.finder_check_file_exists(machine, quoted) and not (folder / "injected").exists()
    finally:
        machine.close()
        shutil.rmtree(folder, ignore_errors=True)
        if kept_history is None:
            history.unlink(missing_ok=True)
        else:
            history.write_bytes(kept_history)
