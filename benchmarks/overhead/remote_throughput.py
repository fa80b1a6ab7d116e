"""Runner throughput on WindowsAgentArena and MacOSArena machines: tasks per hour with 1, 2 and 4 machines
(`bench waa --machines ...`, `bench macosarena --machines ...`), both benchmarks in one run, interleaved.

The machines are served on this host. WAA: stand-ins of WAA's server (testkit/waa_server), each on its own Xvfb at
1920x1080 with openbox and its own home (testkit/osworld_machines). MacOSArena: the ports of one local sshd
(testkit/sshd.py, as the SSH tests run it: one test account, one home, one Xvfb its agent drives), each port a
machine to the runner. Per task, what the runner does on a real run: the machine's reset (WAA's close-all, probe and
Downloads clean-up; none for MacOSArena, as without --machine-reset), the task's setup on the machine (WAA: `execute`
making a folder and a file, a pyautogui click through `python -c`, a `sleep` of 0.5 s; MacOSArena: the same as `cmd`
steps over SSH), a `symphony-mcp serve` on the `waa` or `ssh` backend at the machine, a stand-in planner that says
done() at once (one step, one screenshot of the machine), then the benchmark's own check (WAA: OSWorld's
`exact_match` over WAA's `vm_command_line` getter; MacOSArena: its `terminal_check_files_in_directory` over SSH).
TASKS tasks per round, the scenarios rotated per round after an unmeasured warm-up. Run from the repository root,
as root (sshd logs the test account in only then):

    .venv/bin/python -m benchmarks.overhead.remote_throughput
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import (
    REPO,
    ThroughputRound,
    interpreter,
    log,
    machine_facts,
    publish_report,
    setup_solved_task,
    solved_round,
    throughput_table,
)
from symphony_mcp.config import DisplaySettings, load_settings
from symphony_mcp.desktop.virtual_display import start_virtual_display
from testkit.display import SCREEN
from testkit.model_server import StandInModel
from testkit.osworld_machines import stand_in_machines
from testkit.scripted_planner import PLANNER, act
from testkit.sshd import running_sshd, sshd_unavailable
from testkit.waa_server.process import running_waa_server

TASKS = 4
MACHINES = (1, 2, 4)
BENCHMARKS = ("waa", "macosarena")
TITLES = {"waa": "WindowsAgentArena (`bench waa`)", "macosarena": "MacOSArena (`bench macosarena`)"}
Scenario = tuple[str, int]  # the benchmark, how many machines


def write_waa_tasks(root: Path) -> Path:
    """TASKS Notepad-domain tasks in WAA's format that the setup itself solves; `examples` with test_all.json."""
    examples = root / "examples"
    (examples / "notepad").mkdir(parents=True)
    ids = []
    for number in range(TASKS):
        task_id = f"throughput-{number}-WOS"
        task = setup_solved_task(task_id, "notepad", f"Documents/t{number}")
        (examples / "notepad" / f"{task_id}.json").write_text(json.dumps(task), encoding="utf-8")
        ids.append(task_id)
    (root / "test_all.json").write_text(json.dumps({"notepad": ids}), encoding="utf-8")
    return examples


def write_arena_tasks(root: Path, folder: str) -> Path:
    """TASKS terminal tasks in MacOSArena's format on the account's ~/`folder` that the setup itself solves."""
    (root / "terminal").mkdir(parents=True)
    for number in range(TASKS):
        made = f"~/{folder}/t{number}"
        task = {
            "id": f"terminal_{number}",
            "system_img": "default",
            "instruction": f"Check that the folder t{number} in ~/{folder} holds its state file.",
            "config": [
                {"type": "cmd", "parameters": {"command": [f"mkdir -p {made} && echo ok > {made}/state", "sleep 0.5"]}}
            ],
            "related_apps": ["terminal"],
            "evaluator": {
                "func": ["terminal_check_files_in_directory"],
                "conj": "and",
                "parameters": [{"folder_path": made, "required_files": ["state"]}],
                "expected": [{"type": "common", "rules": {"func": "is_true", "parameters": []}}],
            },
        }
        (root / "terminal" / f"{number}.json").write_text(json.dumps(task), encoding="utf-8")
    return root


def report(rounds: dict[Scenario, list[ThroughputRound]], command: str, facts: list[str], load_at_end: str) -> str:
    lines = [
        "# WindowsAgentArena and MacOSArena machines: runner throughput with 1, 2 and 4 machines",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *facts,
        f"- Load average at the end: {load_at_end}",
        f"- Command, run from the repository root: `{command}`",
        f"- {TASKS} tasks per round and benchmark through `run_bench` (what `symphony-mcp bench waa|macosarena "
        "--machines ...` runs): the machine's reset, the task's setup on the machine (a folder and a file made, "
        "for WAA a pyautogui click through `python -c` too, a 0.5 s sleep), a `symphony-mcp serve` on the `waa` or "
        "`ssh` backend per task, a stand-in planner saying done() at once, the benchmark's own check; every task "
        "scored 1 (asserted). Scenarios interleaved: each round runs every benchmark and machine count, in an "
        "order rotated per round",
        "- Machines: WAA stand-in servers on this host, each on its own Xvfb 1920x1080 with openbox and its own "
        "home; MacOSArena machines are the ports of one local sshd logging one test account in (one home, one Xvfb "
        "1920x1080). The runner, the agents' servers and all the machines share this host's 2 cores (see the load "
        "average), so the scaling is this host's, not a farm of Windows VMs or Macs",
        "",
    ]
    for benchmark in BENCHMARKS:
        measured = {count: rounds[(benchmark, count)] for count in MACHINES}
        lines += [f"## {TITLES[benchmark]}", "", *throughput_table(measured), ""]
    lines += [
        "Wall time is the first task's start to the last task's end; tasks per hour = tasks / wall. reset is the "
        "machine's reset and the task's setup steps (0.5 s of it the task's own sleep); run is run_task: spawning "
        "the task's `symphony-mcp serve` (a Python process that imports the server; on MacOSArena it logs in over "
        "SSH and starts its agent there), connecting over stdio, one planner step with a screenshot of the machine, "
        "stopping it; evaluate is the benchmark's check. With real machines and a real model a task takes minutes "
        "(the model, the apps), so these figures are the runner's ceiling, not a run's expected pace.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds per scenario (default 2)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/remote_throughput.md")
    args = parser.parse_args()
    if reason := sshd_unavailable():
        raise SystemExit(f"MacOSArena's machines need a local sshd: {reason}")
    facts = machine_facts()  # the load average at the start
    stand_in = StandInModel().start()
    stand_in.script(default=lambda request: act("done()", "The state is there."))
    settings = load_settings(
        models={"orchestrator": {"base_url": stand_in.url, "model": PLANNER}},
        orchestrator={"max_steps": 3, "reflection": False},
        ocr={"warm_up": False},
    )
    rounds: dict[Scenario, list[ThroughputRound]] = {(b, count): [] for b in BENCHMARKS for count in MACHINES}
    scenarios = list(rounds)
    try:
        with contextlib.ExitStack() as stack:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-remote-throughput-")))
            waa_machines = stack.enter_context(stand_in_machines(max(MACHINES), root / "waa", running_waa_server))
            display = start_virtual_display(
                DisplaySettings(resolution=f"{SCREEN[0]}x{SCREEN[1]}", window_manager="openbox")
            )
            stack.callback(display.stop)
            sshd = stack.enter_context(running_sshd(port_count=max(MACHINES)))
            folder = f"remote-throughput-{os.getpid()}"
            stack.callback(shutil.rmtree, sshd.home / folder, True)
            waa_options = {"tasks_dir": str(write_waa_tasks(root / "waa-tasks"))}
            arena_options = {
                "tasks_dir": str(write_arena_tasks(root / "arena-tasks", folder)),
                "key_file": str(sshd.key_file),
                "known_hosts": str(sshd.known_hosts),
                "python": "/usr/bin/python3",  # the machine's: python3-xlib, nothing of this repository
                "display": display.name,
            }
            runs: dict[str, Callable[[int, Path], ThroughputRound]] = {
                "waa": lambda count, where: solved_round(
                    "waa", waa_options, [m.url for m in waa_machines[:count]], settings, where
                ),
                "macosarena": lambda count, where: solved_round(
                    "macosarena", arena_options, sshd.urls[:count], settings, where
                ),
            }
            for benchmark in BENCHMARKS:
                log(f"warm-up round, {benchmark}")
                runs[benchmark](2, root / f"warm-up-{benchmark}")
            for number in range(args.rounds):
                order = scenarios[number % len(scenarios) :] + scenarios[: number % len(scenarios)]
                for benchmark, count in order:
                    log(f"round {number + 1}, {benchmark}, {count} machines")
                    where = root / f"r{number}-{benchmark}-{count}"
                    rounds[(benchmark, count)].append(runs[benchmark](count, where))
    finally:
        stand_in.stop()
    load_at_end = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    command = f"{interpreter()} -m benchmarks.overhead.remote_throughput" + (
        f" --rounds {args.rounds}" if args.rounds != 2 else ""
    )
    publish_report(report(rounds, command, facts, load_at_end), args.output)


if __name__ == "__main__":
    main()
