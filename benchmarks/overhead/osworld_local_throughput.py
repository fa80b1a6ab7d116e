"""OSWorld on this machine: tasks per hour with 1 and 2 local environments (`bench osworld --parallel 1|2`).

A fixed sample of 12 of OSWorld's own tasks bundled in tests/data/osworld (their JSONs unchanged), all runnable on a
machine set up by `scripts/install.sh --dev`: 3 Chrome settings tasks (one with Chrome's history written by the
setup), 2 GIMP, 2 VLC and 5 os tasks (GNOME settings through dconf, PulseAudio, a shell check, one infeasible), run
through `run_bench` as `symphony-mcp bench osworld --parallel N` runs them: per task a fresh environment (its own
namespaces, overlay root, network, Xvfb 1920x1080 with openbox and the accessibility bus, inside as the task user),
what OSWorld's image holds, the task's setup steps, a `symphony-mcp serve` for the agent, a stand-in planner that
says done() at once (one step, one screenshot: a do-nothing agent), then OSWorld's own getters and metric. Every
task must score 0 (doing nothing passes none; asserted). One unmeasured warm-up run of two tasks, then the
scenarios alternate per round (1 then 2, 2 then 1, ...). Run from the repository root, as root (the task account
`user` is created for the run and removed after when it did not exist):

    .venv/bin/python -m benchmarks.overhead.osworld_local_throughput
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from benchmarks.common import REPO, Stats, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.registry import adapter_spec
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.results_layout import read_evaluation
from symphony_mcp.bench.types import TaskEvaluation, TaskFilter
from symphony_mcp.config import load_settings
from testkit.model_server import StandInModel
from testkit.scripted_planner import PLANNER, act

TASKS = REPO / "tests" / "data" / "osworld"
ACCOUNT = [sys.executable, "-m", "symphony_mcp", "osworld-user"]  # the shipped script, through the CLI
SAMPLE = {  # task id -> domain
    "030eeff7-b492-4218-b312-701ec99ee0cc": "chrome",
    "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938": "chrome",
    "bb5e4c0d-f964-439c-97b6-bdb9747de3f4": "chrome",
    "7767eef2-56a3-4cea-8c9f-48c070c7d65b": "gimp",
    "7b7617bd-57cc-468e-9c91-40c4ec2bcb3d": "gimp",
    "8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89": "vlc",
    "9195653c-f4aa-453d-aa95-787f6ccfaae9": "vlc",
    "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2": "os",
    "3ce045a0-877b-42aa-8d2c-b4a863336ab8": "os",
    "a4d98375-215b-4a4d-aee9-3d4370fccc41": "os",
    "e0df059f-28a6-4169-924f-b9623e7184cc": "os",
    "4783cc41-c03c-4e1b-89b4-50658f642bd5": "os",  # infeasible
}
WARM_UP = ("030eeff7-b492-4218-b312-701ec99ee0cc", "7767eef2-56a3-4cea-8c9f-48c070c7d65b")
PARALLEL = (1, 2)
Run = tuple[float, list[TaskEvaluation], tuple[float, float]]  # run_bench's seconds, evaluations, load before/after


def one_run(stand_in: StandInModel, ids: tuple[str, ...], parallel: int, root: Path) -> Run:
    results = root / "results"
    settings = load_settings(
        models={"orchestrator": {"base_url": stand_in.url, "model": PLANNER}},
        orchestrator={"results_dir": str(results), "max_steps": 3, "reflection": False},
        ocr={"warm_up": False},
    )
    request = BenchRequest(
        adapter_spec("osworld", None),
        TaskFilter(task_ids=ids),
        (("tasks_dir", str(TASKS)),),
        parallel=parallel,
        force=True,
        quiet=True,
    )
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    run_bench(request, settings, Console(file=io.StringIO()))
    whole = time.monotonic() - start
    found = [read_evaluation(results / "osworld" / SAMPLE[task_id] / task_id) for task_id in ids]
    evaluations = [e for e in found if e is not None]
    assert len(evaluations) == len(ids), f"{len(evaluations)} of {len(ids)} tasks have an evaluation"
    assert all(e.score == 0.0 and e.failure == "scored_zero" for e in evaluations), [
        (e.task_id[:8], e.score, e.failure, e.message or e.detail[:200]) for e in evaluations
    ]
    return whole, evaluations, (load_before, os.getloadavg()[0])


def wall(evaluations: list[TaskEvaluation]) -> float:
    return max(e.ended_at for e in evaluations) - min(e.started_at for e in evaluations)


def report(runs: dict[int, list[Run]], command: str) -> str:
    rows = []
    rates: dict[int, float] = {}
    for parallel, measured in runs.items():
        tasks = [e for _, evaluations, _ in measured for e in evaluations]
        walls = [wall(evaluations) for _, evaluations, _ in measured]
        rates[parallel] = len(SAMPLE) / statistics.median(walls) * 3600
        reset, run, evaluate = (
            Stats(tuple(getattr(e, f"{phase}_seconds") for e in tasks)) for phase in ("reset", "run", "evaluate")
        )
        loads = ", ".join(f"{before:.1f} -> {after:.1f}" for _, _, (before, after) in measured)
        rows.append(
            [
                str(parallel),
                str(len(measured)),
                f"{statistics.median(walls):.1f}",
                f"{rates[parallel]:.0f}",
                f"{rates[parallel] / rates[PARALLEL[0]]:.2f}x",
                f"{reset.median:.1f} / {reset.p90:.1f}",
                f"{run.median:.1f} / {run.p90:.1f}",
                f"{evaluate.median:.1f} / {evaluate.p90:.1f}",
                loads,
            ]
        )
    lines = [
        "# OSWorld on this machine: tasks per hour with 1 and 2 local environments",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command, run from the repository root, as root: `{command}`",
        f"- {len(SAMPLE)} of OSWorld's own tasks (tests/data/osworld: 3 chrome, 2 gimp, 2 vlc, 5 os of which 1 "
        "infeasible) per run through `run_bench`, as `symphony-mcp bench osworld --parallel N` runs them: a fresh "
        "environment per task (sandbox, network, Xvfb 1920x1080, openbox, accessibility bus, as the task user `user`), "
        "the image's state, the task's setup, a `symphony-mcp serve` per task, a stand-in planner saying done() at "
        "once (a do-nothing agent), OSWorld's own getters and metrics; every task scored 0 (asserted). One warm-up "
        "run of 2 tasks, then the scenarios alternate per round",
        "",
        *table(
            [
                "environments",
                "runs",
                f"wall s for {len(SAMPLE)} tasks (median)",
                "tasks per hour",
                "vs 1",
                "reset s median / p90",
                "run s median / p90",
                "evaluate s median / p90",
                "load average (1 min) before -> after each run",
            ],
            rows,
        ),
        "",
        "Wall time is the first task's start to the last task's end; tasks per hour = tasks / wall. reset is the "
        "environment's start (the previous one ended) plus the image's state (a first Chrome run in the background, "
        "VLC's settings, GNOME's, PulseAudio) and OSWorld's setup steps (their own sleeps included); run is the "
        "agent's side: spawning the task's `symphony-mcp serve`, connecting over stdio, one planner step with a "
        "screenshot; evaluate is the postconfig (e.g. `pkill chrome`, Chrome writing its profile back), OSWorld's "
        "getters through the in-VM server stand-in, and its metric. Everything shares this host's 2 cores with other "
        "work (see the load), so the scaling is this host's; with a real model a task takes minutes, and the "
        "environments' share of the time shrinks accordingly.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="measured runs per scenario (default 1)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/osworld_local_throughput.md")
    args = parser.parse_args()
    status = subprocess.run([*ACCOUNT, "status"], capture_output=True, text=True).stdout
    made_here = "does not exist" in status
    if made_here:
        subprocess.run([*ACCOUNT, "create"], check=True, capture_output=True)
    stand_in = StandInModel().start()
    stand_in.script(default=lambda request: act("done()", "Nothing to do."))
    runs: dict[int, list[Run]] = {parallel: [] for parallel in PARALLEL}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-osworld-local-") as temp:
            root = Path(temp)
            log("warm-up run")
            one_run(stand_in, WARM_UP, 2, root / "warm-up")
            for number in range(args.rounds):
                order = PARALLEL if number % 2 == 0 else PARALLEL[::-1]
                for parallel in order:
                    log(f"round {number + 1}, {parallel} environments")
                    runs[parallel].append(one_run(stand_in, tuple(SAMPLE), parallel, root / f"r{number}-{parallel}"))
    finally:
        stand_in.stop()
        if made_here:
            subprocess.run([*ACCOUNT, "remove"], check=True, capture_output=True)
    command = f"{interpreter()} -m benchmarks.overhead.osworld_local_throughput" + (
        f" --rounds {args.rounds}" if args.rounds != 1 else ""
    )
    publish_report(report(runs, command), args.output)


if __name__ == "__main__":
    main()
