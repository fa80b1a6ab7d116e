"""Benchmark runner: its overhead per task outside the agent, and the parallel speed-up with 2 environments.

Runs the runner test's small real benchmark (`testkit/file_tasks.py`: FileTasks, "type a text into a new
Tk editor on FILE and save it", scored by reading the file) through `symphony_mcp.bench.command.run_bench`
(the local backend, as `symphony-mcp bench` does): per environment its own Xvfb at 1280x800 with openbox and
a `symphony-mcp serve` spawned over stdio per task; a stand-in planner (testkit/model_server.py, real HTTP
on 127.0.0.1, in this process, answering at once) opens the editor, types, saves, says done: 4 steps a task,
reflection off, `--reset` on.

Scenarios: the local backend with --parallel 1 and 2, and the Ray backend with 2 actors on a local Ray
cluster of 2 CPUs (started once, its start timed apart), over the same 6 tasks (fresh results folder each),
rotated per round, after an unmeasured warm-up round per backend. Per task, from its evaluation.json:
the time in the task outside run_task (its started_at to ended_at minus run seconds: reset, evaluate, the
runner's bookkeeping) and the gap to the next task on the same environment (writing result.txt and
evaluation.json, the queue); run_task's own time (server start, the agent loop, server stop). Per round:
wall time (first task started to last ended) and the time outside the tasks (the whole run_bench call
minus that: planning, the environments' or actors' start and stop, the summary). Run from the repository
root:

    .venv/bin/python -m benchmarks.overhead.runner_overhead
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

from rich.console import Console

from benchmarks.common import REPO, Stats, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.request import Backend, BenchRequest
from symphony_mcp.bench.results_layout import read_evaluation, write_evaluation
from symphony_mcp.bench.summary import BenchSummary
from symphony_mcp.bench.types import TaskEvaluation, TaskFilter
from symphony_mcp.config import load_settings
from testkit.file_tasks import ADAPTER, FILES_VARIABLE, TASKS, Planner
from testkit.model_server import StandInModel
from testkit.scripted_planner import MEMORYER, PLANNER

Round = tuple[BenchSummary, list[TaskEvaluation], float]
SCENARIOS: tuple[tuple[Backend, int], ...] = (("local", 1), ("local", 2), ("ray", 2))


def one_round(stand_in: StandInModel, backend: Backend, parallel: int, root: Path) -> Round:
    results = root / "results"
    settings = load_settings(
        models={
            "orchestrator": {"base_url": stand_in.url, "model": PLANNER},
            "memoryer": {"base_url": stand_in.url, "model": MEMORYER},
        },
        orchestrator={"results_dir": str(results), "max_steps": 6, "reflection": False, "reset": True},
        display={"resolution": "1280x800"},
    )
    request = BenchRequest(ADAPTER, TaskFilter(task_ids=TASKS), parallel=parallel, backend=backend, quiet=True)
    start = time.monotonic()
    summary, _ = run_bench(request, settings, Console(file=io.StringIO()))
    whole = time.monotonic() - start
    evaluations = [read_evaluation(results / "files" / row.domain / row.task_id) for row in summary.tasks]
    found = [e for e in evaluations if e is not None]
    assert len(found) == len(TASKS) and all(e.score == 1.0 for e in found), summary.overall
    return summary, found, whole


def gaps(evaluations: list[TaskEvaluation]) -> list[float]:
    """Seconds from one task's end to the next task's start on the same environment."""
    found = []
    for environment in {e.environment for e in evaluations}:
        mine = sorted((e for e in evaluations if e.environment == environment), key=lambda e: e.started_at)
        found += [later.started_at - earlier.ended_at for earlier, later in pairwise(mine)]
    return found


def write_times(evaluation: TaskEvaluation, folder: Path, count: int = 50) -> Stats:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        write_evaluation(folder, evaluation)
        samples.append((time.perf_counter() - start) * 1000)
    return Stats(tuple(samples))


def report(rounds: dict[tuple[Backend, int], list[Round]], writes: Stats, ray_start: float, command: str) -> str:
    def stats(values: list[float]) -> Stats:
        return Stats(tuple(values))

    def wall(summary: BenchSummary, evaluations: list[TaskEvaluation]) -> float:
        return max(e.ended_at for e in evaluations) - min(e.started_at for e in evaluations)

    rows = []
    walls: dict[tuple[Backend, int], float] = {}
    for (backend, parallel), measured in rounds.items():
        tasks = [e for _, evaluations, _ in measured for e in evaluations]
        overhead = stats([(e.ended_at - e.started_at - e.run_seconds) * 1000 for e in tasks])
        gap = stats([g * 1000 for _, evaluations, _ in measured for g in gaps(evaluations)])
        walls[(backend, parallel)] = statistics.median(wall(s, e) for s, e, _ in measured)
        environments = statistics.median(whole - wall(s, e) for s, e, whole in measured)
        rows.append(
            [
                backend,
                str(parallel),
                str(len(measured)),
                f"{overhead.median:.1f} (p90 {overhead.p90:.1f})",
                f"{gap.median:.1f} (p90 {gap.p90:.1f})",
                f"{statistics.median(e.run_seconds for e in tasks):.2f}",
                f"{walls[(backend, parallel)]:.2f}",
                f"{environments:.2f}",
            ]
        )
    one, two, ray_two = walls[("local", 1)], walls[("local", 2)], walls[("ray", 2)]
    lines = [
        "# Benchmark runner: overhead per task outside the agent, and parallel speed-up",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command, run from the repository root: `{command}`",
        f"- Tasks: the runner test's FileTasks ({len(TASKS)} tasks, 4 planner steps each: open a Tk editor, type, "
        "ctrl+s, done), local backend, displays 1280x800 with openbox, stand-in planner answering at once, "
        "reflection off, `--reset`; scenarios local --parallel 1, local --parallel 2 and Ray with 2 actors "
        "(one local Ray cluster of 2 CPUs for the whole run), rotated per round, after an unmeasured warm-up "
        "round per backend",
        "- The machine's 2 cores are shared with other work (see the load average): the speed-up is what this "
        "machine gave, not a bound",
        "",
        *table(
            [
                "backend",
                "parallel",
                "rounds",
                "in the task outside run_task, ms (median, p90)",
                "between two tasks of an environment, ms (median, p90)",
                "run_task s (median)",
                "wall s for 6 tasks (median)",
                "outside the tasks (plan, environments or actors start and stop, summary) s",
            ],
            rows,
        ),
        "",
        f"**Parallel speed-up with 2 environments on 2 cores: {one:.2f} s / {two:.2f} s = {one / two:.2f}x** "
        f"(local backend, median wall time of the same 6 tasks, this run); through Ray with 2 actors "
        f"{one:.2f} s / {ray_two:.2f} s = {one / ray_two:.2f}x. Starting the local Ray cluster (`ray.init`, "
        f"2 CPUs) took {ray_start:.2f} s once, outside the rounds; each Ray run also starts its actors (a "
        "worker process each, which imports the package and starts its display): the last column.",
        "",
        f"Writing a task's result.txt and evaluation.json (each to a temporary file, fsync, rename), measured "
        f"alone {len(writes.samples)} times: median {writes.median:.2f} ms, p90 {writes.p90:.2f} ms.",
        "",
        "The runner's overhead per task outside the agent is the sum of the two middle columns: in the task, its "
        "wall time (the evaluation's started_at to ended_at: adapter reset, run_task, adapter evaluate and the "
        "runner's bookkeeping) minus run_task's own time; between tasks, from one task's end to the next task's "
        "start on the same environment (writing result.txt and evaluation.json, the queue, the progress "
        "observer). run_task itself includes spawning and stopping the task's `symphony-mcp serve` (the agent "
        "side). The test adapter's reset and evaluate are file operations: a real benchmark's setup (a browser "
        "page, OSWorld's setup steps) adds its own time on top.",
        "",
    ]
    return "\n".join(lines)


def start_ray(temp: Path) -> tuple[float, Callable[[], None]]:
    """A local Ray of 2 CPUs, its state in `temp`, auth off; returns its start time and how to stop it."""
    import ray

    started = time.monotonic()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(temp),
        runtime_env={"env_vars": {"PYTHONPATH": str(REPO), FILES_VARIABLE: os.environ[FILES_VARIABLE]}},
    )
    return time.monotonic() - started, ray.shutdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per scenario (default 3)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/runner_overhead.md")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # no token written under ~/.ray
    stand_in = StandInModel().start()
    stand_in.script(default=Planner())
    rounds: dict[tuple[Backend, int], list[Round]] = {scenario: [] for scenario in SCENARIOS}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-runner-") as temp:
            os.environ[FILES_VARIABLE] = str(Path(temp) / "files")
            ray_temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths are bounded
            ray_start, stop_ray = start_ray(ray_temp)
            try:
                log("warm-up rounds")
                for backend in ("local", "ray"):
                    one_round(stand_in, backend, 2, Path(temp) / f"warm-up-{backend}")
                for number in range(args.rounds):
                    order = SCENARIOS[number % len(SCENARIOS) :] + SCENARIOS[: number % len(SCENARIOS)]
                    for backend, parallel in order:
                        log(f"round {number + 1}, {backend} --parallel {parallel}")
                        where = Path(temp) / f"r{number}-{backend}-{parallel}"
                        rounds[(backend, parallel)].append(one_round(stand_in, backend, parallel, where))
            finally:
                stop_ray()
                shutil.rmtree(ray_temp, ignore_errors=True)
            writes = write_times(rounds[("local", 1)][0][1][0], Path(temp) / "writes")
    finally:
        stand_in.stop()
    command = f"{interpreter()} -m benchmarks.overhead.runner_overhead" + (
        f" --rounds {args.rounds}" if args.rounds != 3 else ""
    )
    publish_report(report(rounds, writes, ray_start, command), args.output)


if __name__ == "__main__":
    main()
