"""Runner throughput on OSWorld VMs: tasks per hour with 1, 2 and 4 machines (`bench osworld-vm --machines ...`).

The machines are stand-in OSWorld controllers served locally (testkit/osworld_machines.py: each its own Xvfb at
1920x1080 with openbox, its own home, the controller on a loopback port), so what is measured is the runner's side
of a run on VMs: per task OSWorld's setup steps through the machine's controller (an `execute` making a folder and
a file, a pyautogui click through `python -c`, a `sleep` of 0.5 s, as OSWorld's `os` tasks do), a
`symphony-mcp serve` spawned on the OSWorld backend at the machine's URL, a trivial scripted agent (a stand-in
planner that says done() at once: one step, one screenshot of the machine), then OSWorld's own getter
(`vm_command_line`, through its PythonController) and metric (`exact_match`). The same TASKS tasks each round
(a fresh results folder), scenarios rotated per round after an unmeasured warm-up. Run from the repository root:

    .venv/bin/python -m benchmarks.overhead.osworld_vm_throughput
"""

from __future__ import annotations

import argparse
import datetime
import json
import tempfile
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
from symphony_mcp.config import load_settings
from testkit.model_server import StandInModel
from testkit.osworld_controller.process import RunningController
from testkit.osworld_machines import stand_in_machines
from testkit.scripted_planner import PLANNER, act

TASKS = 8
MACHINES = (1, 2, 4)


def write_tasks(folder: Path) -> None:
    """TASKS `os` tasks in OSWorld's format that the setup itself solves (the agent only says done)."""
    (folder / "os").mkdir(parents=True)
    for number in range(TASKS):
        task_id = f"7a7a7a7a-0000-4000-8000-{number:012d}"
        task = setup_solved_task(task_id, "os", f"Desktop/t{number}")
        (folder / "os" / f"{task_id}.json").write_text(json.dumps(task), encoding="utf-8")


def one_round(stand_in: StandInModel, tasks: Path, machines: list[RunningController], root: Path) -> ThroughputRound:
    settings = load_settings(
        models={"orchestrator": {"base_url": stand_in.url, "model": PLANNER}},
        orchestrator={"max_steps": 3, "reflection": False},
        ocr={"warm_up": False},
    )
    options = {"tasks_dir": str(tasks), "network": False}
    return solved_round("osworld-vm", options, [m.url for m in machines], settings, root / "results")


def report(rounds: dict[int, list[ThroughputRound]], command: str) -> str:
    lines = [
        "# OSWorld on VMs: runner throughput with 1, 2 and 4 machines",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command, run from the repository root: `{command}`",
        f"- {TASKS} OSWorld-format `os` tasks per round through `run_bench` (what `symphony-mcp bench osworld-vm "
        "--machines ...` runs): setup through the machine's controller (execute, a pyautogui click, sleep 0.5 s), "
        "a `symphony-mcp serve` on the OSWorld backend per task, a stand-in planner saying done() at once, "
        "OSWorld's vm_command_line getter and exact_match metric; every task scored 1 (asserted)",
        "- Machines: stand-in OSWorld controllers on this host, each on its own Xvfb 1920x1080 with openbox; the "
        "runner, the agents' servers and all the machines share this host's 2 cores (see the load average), so "
        "the scaling is this host's, not a VM farm's",
        "",
        *throughput_table(rounds),
        "",
        "Wall time is the first task's start to the last task's end; tasks per hour = tasks / wall. reset is "
        "OSWorld's setup steps through the controller (0.5 s of it the task's own sleep); run is run_task: "
        "spawning the task's `symphony-mcp serve` (a Python process that imports the server), connecting over "
        "stdio, one planner step with a screenshot of the machine, stopping it; evaluate is OSWorld's getter "
        "through its PythonController and its metric. With real VMs and a real model, a task takes minutes (the "
        "model and OSWorld's own waits), so these figures are the runner's ceiling, not a run's expected pace.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per scenario (default 3)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/osworld_vm_throughput.md")
    args = parser.parse_args()
    stand_in = StandInModel().start()
    stand_in.script(default=lambda request: act("done()", "The state is there."))
    rounds: dict[int, list[ThroughputRound]] = {count: [] for count in MACHINES}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-osworld-vm-") as temp:
            root = Path(temp)
            write_tasks(root / "tasks")
            with stand_in_machines(max(MACHINES), root / "machines") as machines:
                log("warm-up round")
                one_round(stand_in, root / "tasks", machines[:2], root / "warm-up")
                for number in range(args.rounds):
                    order = MACHINES[number % len(MACHINES) :] + MACHINES[: number % len(MACHINES)]
                    for count in order:
                        log(f"round {number + 1}, {count} machines")
                        where = root / f"r{number}-{count}"
                        rounds[count].append(one_round(stand_in, root / "tasks", machines[:count], where))
    finally:
        stand_in.stop()
    command = f"{interpreter()} -m benchmarks.overhead.osworld_vm_throughput" + (
        f" --rounds {args.rounds}" if args.rounds != 3 else ""
    )
    publish_report(report(rounds, command), args.output)


if __name__ == "__main__":
    main()
