"""OSWorld offline: every task of OSWorld's task set that runs on this machine, scored for an agent doing nothing.

A feasible task must score 0 when nothing is done (else doing nothing would pass it); an infeasible one scores 0 too
unless the agent says fail. Per task: reset (a fresh sandbox, what OSWorld's image holds, the task's setup steps)
and evaluate (postconfig, OSWorld's own getters through the stand-in env, OSWorld's metric) for a run that said
done at once, on the environment's own Xvfb at 1920x1080 with openbox, as the task account `user` (created for
the run and removed after when it did not exist; needs root). Also the runnable tasks per domain, from the same
listing. No agent runs.
Run from the repository root, as root, with OSWorld's examples folder (its test_all.json beside it):

    .venv/bin/python -m benchmarks.accuracy.osworld_do_nothing --tasks .../evaluation_examples/examples

With --test-made-cache the adapter takes OSWorld's files from the cache the tests make (testkit/osworld_files.py:
stand-in files for the tasks it knows, tier C of RESEARCH-NEXT §7), so those tasks run too (results:
--output benchmarks/results/osworld_test_cache.md). With --task-ids only those runnable tasks are reset and scored
(the listing still covers every task), for tasks that became runnable since the last whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import REPO, Stats, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.orchestrator.connection import SpawnServer
from testkit.osworld_files import stand_in_cache
from testkit.osworld_scoring import said_done

ACCOUNT = [sys.executable, "-m", "symphony_mcp", "osworld-user"]  # the shipped script, through the CLI
Row = tuple[BenchTask, Score | str, float, float]  # task, score (or why it could not run), reset s, evaluate s


async def measure(
    tasks_dir: Path, workdir: Path, cache: Path | None, only: tuple[str, ...] = ()
) -> tuple[list[BenchTask], list[Row]]:
    """Every task listed; the runnable ones (or those of them named in `only`) reset and evaluated."""
    adapter = OSWorldAdapter(tasks_dir, cache=cache)
    listed = adapter.list_tasks(TaskFilter(everything=True))
    rows: list[Row] = []
    try:
        # The adapter runs each environment's display inside it (brings_own_display): no runner's display.
        environment = Environment("env-0", "", workdir, SpawnServer())
        await adapter.setup(environment)
        for task in (t for t in listed if t.skip_reason is None and (not only or t.task_id in only)):
            started = time.perf_counter()
            try:
                await adapter.reset(environment, task)
            except Exception as exc:  # a setup that fails here is a finding of the run, not the end of it
                rows.append((task, f"reset failed: {exc}", time.perf_counter() - started, 0.0))
                continue
            reset = time.perf_counter() - started
            started = time.perf_counter()
            try:
                score: Score | str = await adapter.evaluate(environment, task, said_done(task, workdir))
            except Exception as exc:
                score = f"evaluate failed: {type(exc).__name__}: {exc}"
            rows.append((task, score, reset, time.perf_counter() - started))
            log(f"{task.domain}/{task.task_id[:8]}: {score}")
        await adapter.teardown(environment)
    finally:
        await adapter.close()
    return listed, rows


def report(listed: list[BenchTask], rows: list[Row], command: str, files: str) -> str:
    domains = sorted({t.domain for t in listed})
    total, runnable = Counter(t.domain for t in listed), Counter(t.domain for t in listed if t.skip_reason is None)
    infeasible = Counter(t.domain for t in listed if t.skip_reason is None and t.infeasible)
    per_domain = [[d, str(total[d]), str(runnable[d]), str(infeasible[d])] for d in domains]
    per_domain.append(["all", str(len(listed)), str(sum(runnable.values())), str(sum(infeasible.values()))])
    task_rows = []
    for task, score, reset, evaluate in rows:
        value = f"{score.value:g}" if isinstance(score, Score) else "-"
        detail = score.detail if isinstance(score, Score) else score
        detail = detail if len(detail) <= 110 else detail[:107] + "..."
        task_rows.append(
            [f"{task.domain}/{task.task_id[:8]}", "yes" if task.infeasible else "", value, f"{reset * 1000:.0f}",
             f"{evaluate * 1000:.0f}", detail.replace("|", "\\|")]
        )  # fmt: skip
    scored = [s for _, s, _, _ in rows if isinstance(s, Score)]
    nonzero = [f"{t.domain}/{t.task_id[:8]}" for t, s, _, _ in rows if isinstance(s, Score) and s.value != 0.0]
    failed = [f"{t.domain}/{t.task_id[:8]}" for t, s, _, _ in rows if not isinstance(s, Score)]
    resets = Stats(tuple(r * 1000 for _, _, r, _ in rows))
    evaluations = Stats(tuple(e * 1000 for _, s, _, e in rows if isinstance(s, Score)))
    lines = [
        "# OSWorld offline: the runnable tasks and what doing nothing scores",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command, run from the repository root, as root: `{command}`",
        "- Tasks: OSWorld's own task set (the tasks test_all.json names), classified on this machine after "
        f"`scripts/install.sh --dev`, {files}; each runnable one reset and evaluated once "
        "for a run that said done at once; Xvfb 1920x1080 with openbox; task account `user`",
        "",
        "## Runnable tasks per domain",
        "",
        *table(["domain", "tasks", "runnable here", "of them infeasible"], per_domain),
        "",
        "## Doing nothing",
        "",
        f"{len(scored)} of {len(rows)} runnable tasks scored; not 0 for doing nothing: {', '.join(nonzero) or 'none'}; "
        f"could not be set up or scored: {', '.join(failed) or 'none'}. Reset {_spread(resets)}, "
        f"evaluate {_spread(evaluations)}.",
        "",
        *table(["task", "infeasible", "score", "reset ms", "evaluate ms", "detail"], task_rows),
    ]
    return "\n".join(lines) + "\n"


def _spread(stats: Stats) -> str:
    """Median and p90 in ms (the median alone for one sample)."""
    if len(stats.samples) < 2:
        return f"{stats.median:.0f} ms" if stats.samples else "not measured"
    return f"median {stats.median:.0f} ms (p90 {stats.p90:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path, required=True, help="OSWorld's evaluation_examples/examples folder")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "osworld_do_nothing.md")
    parser.add_argument("--test-made-cache", action="store_true", help="OSWorld's files from the tests' stand-in cache")
    parser.add_argument("--task-ids", default="", help="comma-separated: run only these runnable tasks (all listed)")
    args = parser.parse_args()
    status = subprocess.run([*ACCOUNT, "status"], capture_output=True, text=True).stdout
    made_here = "does not exist" in status
    if made_here:
        subprocess.run([*ACCOUNT, "create"], check=True, capture_output=True)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            cache = stand_in_cache(Path(workdir) / "osworld-files") if args.test_made_cache else None
            only = tuple(filter(None, args.task_ids.split(",")))
            listed, rows = asyncio.run(measure(args.tasks, Path(workdir), cache, only))
    finally:
        if made_here:
            subprocess.run([*ACCOUNT, "remove"], check=True, capture_output=True)
    command = f"{interpreter()} -m benchmarks.accuracy.osworld_do_nothing --tasks {args.tasks}"
    files = "without a copy of OSWorld's files"
    if args.task_ids:
        command += f" --task-ids {args.task_ids} --output {args.output}"
    if args.test_made_cache:
        command += f" --test-made-cache --output {args.output.resolve().relative_to(REPO)}"
        files = (
            "with the cache the tests make (testkit/osworld_files.py: stand-in files generated from each task's "
            "instruction and metric, not OSWorld's own, for the 8 tasks of tests/data/osworld_files)"
        )
    publish_report(report(listed, rows, command, files), args.output)


if __name__ == "__main__":
    main()
