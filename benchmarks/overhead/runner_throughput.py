"""The runner's throughput: tasks per hour of `symphony-mcp bench NAME` over 1, 2, 4 ... environments or machines.

Every named benchmark runs through `run_bench` (what `symphony-mcp bench` runs) with a stand-in planner that says
done() at once (one step, one screenshot: what is measured is the runner's side of a task), on what this host can
serve in place of the benchmark's machines:

- `osworld`: local environments (`--parallel N`), a fixed sample of OSWorld's own tasks bundled in tests/data/osworld
  (chrome, gimp, vlc, os; their JSONs unchanged), each in a fresh sandbox with OSWorld's image state and the task's
  setup, scored by OSWorld's getters and metrics; a do-nothing agent scores 0 on each (asserted). Needs root and the
  apps of `scripts/install.sh --dev`; the task account `user` is made for the run and removed after when it did
  not exist.
- `osworld-vm`: stand-in OSWorld controllers (testkit/osworld_machines.py, each its own Xvfb and home) as the
  machines (`--machines URL,...`); `os` tasks whose setup solves them (an `execute`, a pyautogui click through
  `python -c`, a 0.5 s sleep), scored by OSWorld's `exact_match` over `vm_command_line` (each scores 1, asserted).
- `waa`: stand-ins of WAA's server (testkit/waa_server) as the machines, the same kind of tasks in WAA's format.
- `macosarena`: the ports of one local sshd (testkit/sshd.py: one test account and home, one Xvfb) as the machines;
  terminal tasks made by `cmd` setup steps over SSH, scored by `terminal_check_files_in_directory`. Needs root and
  openssh-server.

Scenarios (benchmark, count) rotate per round after one unmeasured warm-up round per benchmark (2 tasks on 2
machines). Each run is added at the top of the results file, which keeps the earlier runs below it; a run with fewer
tasks or rounds than the defaults is headed as a smoke run. Run from the repository root, e.g.:

    .venv/bin/python -m benchmarks.overhead.runner_throughput osworld-vm waa macosarena
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, invocation, log, machine_facts, table
from symphony_mcp.bench.types import TaskEvaluation
from symphony_mcp.config import DisplaySettings, Settings, load_settings
from symphony_mcp.desktop.virtual_display import start_virtual_display
from testkit.display import SCREEN
from testkit.model_server import StandInModel
from testkit.osworld_machines import stand_in_machines
from testkit.osworld_runs import bench_on_machines
from testkit.scripted_planner import PLANNER, act
from testkit.sshd import running_sshd, sshd_unavailable
from testkit.waa_server.process import running_waa_server

OUTPUT = REPO / "benchmarks/results/runner_throughput.md"
DEFAULT_ROUNDS = 2
WARM_UP = 2  # tasks, on as many machines
OSWORLD_TASKS = REPO / "tests" / "data" / "osworld"
OSWORLD_SAMPLE = (  # (domain, task id): OSWorld tasks a do-nothing agent fails here, the domains taking turns
    ("os", "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2"),
    ("chrome", "030eeff7-b492-4218-b312-701ec99ee0cc"),
    ("gimp", "7767eef2-56a3-4cea-8c9f-48c070c7d65b"),
    ("vlc", "8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89"),
    ("os", "3ce045a0-877b-42aa-8d2c-b4a863336ab8"),
    ("chrome", "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938"),
    ("gimp", "7b7617bd-57cc-468e-9c91-40c4ec2bcb3d"),
    ("vlc", "9195653c-f4aa-453d-aa95-787f6ccfaae9"),
    ("os", "a4d98375-215b-4a4d-aee9-3d4370fccc41"),
    ("chrome", "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"),  # Chrome's history written by the setup
    ("os", "e0df059f-28a6-4169-924f-b9623e7184cc"),
    ("os", "4783cc41-c03c-4e1b-89b4-50658f642bd5"),  # infeasible
)
ACCOUNT = [sys.executable, "-m", "symphony_mcp", "osworld-user"]  # the shipped script, through the CLI


@dataclass(frozen=True)
class Target:
    """What one benchmark's rounds run against: the runner's options, the machines' URLs (none: local environments,
    `--parallel N`) and the tasks' ids."""

    options: Mapping[str, object]
    machines: Sequence[str]
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Workload:
    """A benchmark as this module runs it: how to serve its machines and write its tasks, and what a task scores."""

    title: str
    tasks: int  # per round, by default
    counts: tuple[int, ...]  # environments or machines, by default
    unit: str
    scored: Callable[[TaskEvaluation], bool]  # what the stand-in agent's every task must come to
    setup: str  # the report's line on the tasks, machines and phases
    start: Callable[[contextlib.ExitStack, Path, int, int], Target]  # (stack, folder, most machines, tasks)


@dataclass(frozen=True)
class Round:
    seconds: float  # the run_bench call's
    evaluations: list[TaskEvaluation]
    load: tuple[float, float]  # the 1-minute load average before and after

    @property
    def wall(self) -> float:
        """The first task's start to the last task's end."""
        return max(e.ended_at for e in self.evaluations) - min(e.started_at for e in self.evaluations)


# --- the benchmarks' machines and tasks ---------------------------------------------------------------------------
def setup_solved_task(task_id: str, snapshot: str, folder: str) -> dict[str, Any]:
    """A task in OSWorld's schema (WAA's is the same) that its setup solves, so the agent only says done: `execute`
    makes `folder` (under ~) holding a state file, a pyautogui click through `python -c`, a 0.5 s sleep; scored by
    `exact_match` over `vm_command_line` reading the file back."""
    return {
        "id": task_id,
        "snapshot": snapshot,
        "instruction": f"Check that the folder ~/{folder} holds its state file.",
        "config": [
            {
                "type": "execute",
                "parameters": {"command": f"mkdir -p ~/{folder} && echo ok > ~/{folder}/state", "shell": True},
            },
            {
                "type": "execute",
                "parameters": {"command": ["python", "-c", "import pyautogui; pyautogui.click(960, 540)"]},
            },
            {"type": "sleep", "parameters": {"seconds": 0.5}},
        ],
        "related_apps": [snapshot],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": f"cat ~/{folder}/state", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": "ok\n"}},
        },
    }


def write_solved_tasks(folder: Path, domain: str, ids: Sequence[str], under: str) -> None:
    (folder / domain).mkdir(parents=True)
    for number, task_id in enumerate(ids):
        task = setup_solved_task(task_id, domain, f"{under}/t{number}")
        (folder / domain / f"{task_id}.json").write_text(json.dumps(task), encoding="utf-8")


def start_osworld(stack: contextlib.ExitStack, root: Path, most: int, tasks: int) -> Target:
    if tasks > len(OSWORLD_SAMPLE):
        raise SystemExit(f"osworld runs at most {len(OSWORLD_SAMPLE)} tasks (its sample), not {tasks}")
    status = subprocess.run([*ACCOUNT, "status"], capture_output=True, text=True).stdout
    if "does not exist" in status:
        subprocess.run([*ACCOUNT, "create"], check=True, capture_output=True)
        stack.callback(subprocess.run, [*ACCOUNT, "remove"], check=True, capture_output=True)
    return Target({"tasks_dir": str(OSWORLD_TASKS)}, (), tuple(task for _, task in OSWORLD_SAMPLE[:tasks]))


def start_osworld_vm(stack: contextlib.ExitStack, root: Path, most: int, tasks: int) -> Target:
    ids = tuple(f"7a7a7a7a-0000-4000-8000-{number:012d}" for number in range(tasks))
    write_solved_tasks(root / "tasks", "os", ids, "Desktop")
    machines = stack.enter_context(stand_in_machines(most, root / "machines"))
    return Target({"tasks_dir": str(root / "tasks"), "network": False}, [m.url for m in machines], ids)


def start_waa(stack: contextlib.ExitStack, root: Path, most: int, tasks: int) -> Target:
    """Notepad-domain tasks in WAA's layout (`examples/<domain>/`, test_all.json beside it) on WAA server stand-ins."""
    ids = tuple(f"throughput-{number}-WOS" for number in range(tasks))
    write_solved_tasks(root / "tasks" / "examples", "notepad", ids, "Documents")
    (root / "tasks" / "test_all.json").write_text(json.dumps({"notepad": list(ids)}), encoding="utf-8")
    machines = stack.enter_context(stand_in_machines(most, root / "machines", running_waa_server))
    return Target({"tasks_dir": str(root / "tasks" / "examples")}, [m.url for m in machines], ids)


def start_macosarena(stack: contextlib.ExitStack, root: Path, most: int, tasks: int) -> Target:
    """Terminal tasks in MacOSArena's format, made on the sshd account's ~/<folder> by their setup."""
    if reason := sshd_unavailable():
        raise SystemExit(f"MacOSArena's machines need a local sshd: {reason}")
    display = start_virtual_display(DisplaySettings(resolution=f"{SCREEN[0]}x{SCREEN[1]}", window_manager="openbox"))
    stack.callback(display.stop)
    sshd = stack.enter_context(running_sshd(port_count=most))
    folder = f"runner-throughput-{os.getpid()}"
    stack.callback(shutil.rmtree, sshd.home / folder, True)
    (root / "tasks" / "terminal").mkdir(parents=True)
    for number in range(tasks):
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
        (root / "tasks" / "terminal" / f"{number}.json").write_text(json.dumps(task), encoding="utf-8")
    options = {
        "tasks_dir": str(root / "tasks"),
        "key_file": str(sshd.key_file),
        "known_hosts": str(sshd.known_hosts),
        "python": "/usr/bin/python3",  # the machine's: python3-xlib, nothing of this repository
        "display": display.name,
    }
    return Target(options, sshd.urls, tuple(f"terminal_{number}" for number in range(tasks)))


def scored_one(evaluation: TaskEvaluation) -> bool:
    return evaluation.score == 1.0


def scored_zero(evaluation: TaskEvaluation) -> bool:
    return evaluation.score == 0.0 and evaluation.failure == "scored_zero"


SOLVED_PHASES = (
    "run is run_task: spawning the task's `symphony-mcp serve`, connecting over stdio, one planner step with a "
    "screenshot of the machine, stopping it; evaluate is the benchmark's check"
)
WORKLOADS: dict[str, Workload] = {
    "osworld": Workload(
        "OSWorld in local environments (`bench osworld --parallel N`)",
        12,
        (1, 2),
        "environments",
        scored_zero,
        "OSWorld's own tasks from tests/data/osworld (the domains taking turns: os, chrome, gimp, vlc; one os task "
        "infeasible), each in a fresh environment (sandbox, network, Xvfb 1920x1080, openbox, accessibility bus, as "
        "the task user `user`); every task scored 0 (a do-nothing agent; asserted). reset is the environment's "
        "start plus the image's state (a first Chrome run, VLC's, GNOME's, PulseAudio) and OSWorld's setup steps "
        "(their own sleeps included); run is the task's `symphony-mcp serve` spawned inside, connecting over stdio, "
        "one planner step with a screenshot; evaluate is the postconfig, OSWorld's getters and its metric",
        start_osworld,
    ),
    "osworld-vm": Workload(
        "OSWorld on machines (`bench osworld-vm --machines ...`)",
        8,
        (1, 2, 4),
        "machines",
        scored_one,
        "OSWorld-format `os` tasks solved by their setup through the machine's controller (an `execute` making a "
        "folder and a file, a pyautogui click through `python -c`, a 0.5 s sleep), scored by OSWorld's "
        "`vm_command_line` getter and `exact_match` (every task 1; asserted); the machines are stand-in OSWorld "
        "controllers on this host, each its own Xvfb 1920x1080 with openbox and its own home. reset is the setup "
        f"steps; {SOLVED_PHASES} (OSWorld's getter through its PythonController and its metric)",
        start_osworld_vm,
    ),
    "waa": Workload(
        "WindowsAgentArena (`bench waa --machines ...`)",
        4,
        (1, 2, 4),
        "machines",
        scored_one,
        "Notepad-domain tasks in WAA's format solved by their setup (the same steps as osworld-vm's), scored by "
        "`exact_match` over WAA's `vm_command_line` (every task 1; asserted); the machines are stand-ins of WAA's "
        "server on this host, each its own Xvfb 1920x1080 with openbox and its own home. reset is WAA's machine "
        f"reset (close-all, probe, Downloads clean-up) and the setup steps; {SOLVED_PHASES}",
        start_waa,
    ),
    "macosarena": Workload(
        "MacOSArena (`bench macosarena --machines ...`)",
        4,
        (1, 2, 4),
        "machines",
        scored_one,
        "terminal tasks in MacOSArena's format solved by their `cmd` setup steps over SSH (a folder and a file, a "
        "0.5 s sleep), scored by `terminal_check_files_in_directory` (every task 1; asserted); the machines are "
        "the ports of one local sshd logging one test account in (one home, one Xvfb 1920x1080). reset is the "
        "setup steps (no machine reset, as without --machine-reset); the task's server logs in over SSH and starts "
        f"its agent there; {SOLVED_PHASES}",
        start_macosarena,
    ),
}


# --- the rounds -----------------------------------------------------------------------------------------------------
def one_round(name: str, target: Target, count: int, settings: Settings, results: Path, ids: Sequence[str]) -> Round:
    """One timed `bench NAME` of `ids` over `count` machines (or local environments); each task must score as the
    workload says."""
    machines = target.machines[:count]
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    _, found = bench_on_machines(
        name, target.options, machines, settings, results, ids=ids, parallel=1 if machines else count
    )
    seconds = time.monotonic() - start
    evaluations = list(found.values())
    assert len(evaluations) == len(ids), f"{name}: {len(evaluations)} of {len(ids)} tasks have an evaluation"
    assert all(WORKLOADS[name].scored(e) for e in evaluations), [
        (e.task_id[:12], e.score, e.failure, e.message or e.detail[:200]) for e in evaluations
    ]
    return Round(seconds, evaluations, (load_before, os.getloadavg()[0]))


def measure(
    plan: Mapping[str, tuple[int, tuple[int, ...]]], rounds: int, settings: Settings
) -> dict[tuple[str, int], list[Round]]:
    """Every (benchmark, count) scenario once per round, their order rotated per round, after a warm-up round per
    benchmark. `plan`: per benchmark its tasks per round and its counts."""
    measured: dict[tuple[str, int], list[Round]] = {(n, c): [] for n, (_, counts) in plan.items() for c in counts}
    scenarios = list(measured)
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-runner-throughput-")))
        targets = {}
        for name, (tasks, counts) in plan.items():
            targets[name] = WORKLOADS[name].start(stack, root / name, max(counts), tasks)
            log(f"warm-up round, {name}")
            warm = min(WARM_UP, max(counts))
            one_round(name, targets[name], warm, settings, root / f"warm-up-{name}", targets[name].ids[:WARM_UP])
        for number in range(rounds):
            shift = number % len(scenarios)
            for name, count in scenarios[shift:] + scenarios[:shift]:
                log(f"round {number + 1}, {name}, {count} {WORKLOADS[name].unit}")
                target = targets[name]
                where = root / f"r{number}-{name}-{count}"
                measured[(name, count)].append(one_round(name, target, count, settings, where, target.ids))
    return measured


# --- the report -----------------------------------------------------------------------------------------------------
PREAMBLE = [
    "# The runner's throughput: tasks per hour over 1, 2, 4 environments or machines",
    "",
    "Written by `benchmarks/overhead/runner_throughput.py`; each run is added at the top, earlier runs stay below it, "
    "each with its command, machine, load and tables (a smoke run: fewer tasks or rounds than the defaults, for "
    "checking the module, not for quoting). Wall time is the first task's start to the last task's end; tasks per "
    "hour = tasks / wall; reset, run and evaluate are the medians over every task of the scenario's rounds; "
    "outside the tasks is the run_bench call's time beyond the wall (plan, environments, summary). The runner, the "
    "agents' servers and all the machines share this host's 2 cores with other work (see the load), so the scaling "
    "is this host's, not a farm's; with a real model a task takes minutes, so these figures are the runner's "
    "ceiling, not a run's expected pace. The last runs, by the three modules this one replaced, keep their old "
    "commands (those modules are gone).",
    "",
]


def throughput_table(unit: str, rounds: Mapping[int, list[Round]]) -> list[str]:
    """Per count: wall time for the round's tasks, tasks per hour and the ratio to the fewest, the median reset, run
    and evaluate seconds per task, the time outside the tasks and the load around each round."""
    rows = []
    rates: dict[int, float] = {}
    fewest = min(rounds)
    for count, measured in rounds.items():
        tasks = [e for r in measured for e in r.evaluations]
        wall = statistics.median(r.wall for r in measured)
        rates[count] = len(measured[0].evaluations) / wall * 3600
        rows.append(
            [
                str(count),
                str(len(measured)),
                f"{wall:.2f}",
                f"{rates[count]:.0f}",
                f"{rates[count] / rates[fewest]:.2f}x",
                f"{statistics.median(e.reset_seconds for e in tasks):.2f}",
                f"{statistics.median(e.run_seconds for e in tasks):.2f}",
                f"{statistics.median(e.evaluate_seconds for e in tasks):.2f}",
                f"{statistics.median(r.seconds - r.wall for r in measured):.2f}",
                ", ".join(f"{before:.1f} -> {after:.1f}" for before, after in (r.load for r in measured)),
            ]
        )
    header = [
        unit,
        "rounds",
        f"wall s for {len(next(iter(rounds.values()))[0].evaluations)} tasks (median)",
        "tasks per hour",
        f"vs {fewest}",
        "reset s (median per task)",
        "run s (median)",
        "evaluate s (median)",
        "outside the tasks s (median)",
        "load (1 min) before -> after each round",
    ]
    return table(header, rows)


def run_section(
    measured: Mapping[tuple[str, int], list[Round]], plan: Mapping[str, tuple[int, tuple[int, ...]]], header: list[str]
) -> list[str]:
    lines = [*header, ""]
    for name, (tasks, counts) in plan.items():
        workload = WORKLOADS[name]
        lines += [
            f"### {workload.title}",
            "",
            f"{tasks} tasks per round: {workload.setup}.",
            "",
            *throughput_table(workload.unit, {count: measured[(name, count)] for count in counts}),
            "",
        ]
    return lines


def publish(section: list[str], output: Path) -> None:
    """Print the run's section and write it at the top of the results file, above the runs already there."""
    print("\n".join(section))
    earlier = output.read_text().split("\n## ", 1)[1:] if output.exists() else []
    text = "\n".join([*PREAMBLE, *section]) + "".join(f"\n## {runs}" for runs in earlier)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text.rstrip("\n") + "\n")
    log(f"wrote {output}")


def counts_option(text: str) -> tuple[int, ...]:
    parts = text.split(",")
    if not all(part.strip().isdigit() and int(part) >= 1 for part in parts):
        raise argparse.ArgumentTypeError(f"machine counts are whole numbers from 1, comma-separated, not {text!r}")
    return tuple(sorted({int(part) for part in parts}))


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number from 1, not {text!r}")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("benchmarks", nargs="+", choices=list(WORKLOADS), help="the runner's benchmarks to measure")
    parser.add_argument("--machines", type=counts_option, help="counts, e.g. 1,2 (default: osworld 1,2, others 1,2,4)")
    parser.add_argument("--tasks", type=positive, help="tasks per round (default: osworld 12, osworld-vm 8, others 4)")
    parser.add_argument("--rounds", type=positive, default=DEFAULT_ROUNDS, help="measured rounds per scenario")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="markdown results file (runs are added on top)")
    args = parser.parse_args()
    command = invocation()
    plan = {
        name: (args.tasks or WORKLOADS[name].tasks, args.machines or WORKLOADS[name].counts)
        for name in dict.fromkeys(args.benchmarks)
    }
    smoke = args.rounds < DEFAULT_ROUNDS or any(tasks < WORKLOADS[name].tasks for name, (tasks, _) in plan.items())
    started = datetime.datetime.now(datetime.UTC)
    facts = machine_facts()  # the load average at the start
    stand_in = StandInModel().start()
    stand_in.script(default=lambda request: act("done()", "Nothing to do."))
    try:
        settings = load_settings(
            models={"orchestrator": {"base_url": stand_in.url, "model": PLANNER}},
            orchestrator={"max_steps": 3, "reflection": False},
            ocr={"warm_up": False},
        )
        measured = measure(plan, args.rounds, settings)
    finally:
        stand_in.stop()
    header = [
        f"## {'Smoke run' if smoke else 'Run'} of {started:%Y-%m-%d %H:%M} UTC: {', '.join(plan)}",
        "",
        f"- Command, run from the repository root as root: `{command}`",
        *facts,
        f"- Load average at the end: {', '.join(f'{value:.2f}' for value in os.getloadavg())}",
        f"- {args.rounds} measured round(s) per scenario after a warm-up round per benchmark ({WARM_UP} tasks on "
        f"{WARM_UP} environments or machines, at most); scenarios rotated per round",
    ]
    publish(run_section(measured, plan, header), args.output)


if __name__ == "__main__":
    main()
