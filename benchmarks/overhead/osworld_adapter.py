"""OSWorld offline: the adapter's overhead per `os` task outside the agent (listing, reset, evaluation).

The bundled os tasks (tests/data/osworld, OSWorld's own JSONs) that run on this machine, each in a fresh
environment (its own namespaces, network with an address of its own, and its own Xvfb at 1920x1080, OSWorld's
screen, with openbox and the accessibility bus, inside as the task user), as the task account `user`
(`symphony-mcp osworld-user`; created for the run and removed after when it did not exist; needs root), with two
more tasks run from an offline copy of OSWorld's download cache made as its harness leaves it
(testkit/osworld_cache.py offline_cache: small images under OSWorld's names). Per task and round: list_tasks
(loading and classifying the 31 os tasks; the first call in the process also imports the metric modules), reset
(the previous environment ended, a fresh one started, then the task's setup steps; the setup's own waits, e.g.
the pyautogui one-liners' `time.sleep(0.5)`, are part of OSWorld's task and included), and evaluate (postconfig,
getters, OSWorld's metric) for an agent run that said done. No agent runs: the agent's time is the orchestrator
benchmarks'; the runner's own bookkeeping is benchmarks/overhead/runner_overhead.py's. Besides, the environment
alone: start (sandbox, network, desktop ready) and end (every process gone, its network and display reservation
removed), measured on their own. Run from the repository root, as root:

    .venv/bin/python -m benchmarks.overhead.osworld_adapter
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, Stats, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.osworld.account import TaskUser, find_task_user
from symphony_mcp.bench.osworld.sandbox import Sandbox
from symphony_mcp.bench.osworld.tasks import load_tasks
from symphony_mcp.bench.types import Environment, TaskFilter
from symphony_mcp.orchestrator.connection import SpawnServer
from testkit.osworld_cache import PHOTOS, TRASH, offline_cache
from testkit.osworld_scoring import said_done

TASKS = REPO / "tests" / "data" / "osworld"
ACCOUNT = [sys.executable, "-m", "symphony_mcp", "osworld-user"]  # the shipped script, through the CLI


def environment_lifecycle(user: TaskUser, count: int) -> tuple[list[float], list[float]]:
    """Seconds to start a ready environment and to end it, `count` times (after one warm-up)."""
    starts: list[float] = []
    ends: list[float] = []
    for number in range(count + 1):
        started = time.perf_counter()
        sandbox = Sandbox.start(user)
        sandbox.wait_ready()
        ready = time.perf_counter()
        sandbox.stop()
        ended = time.perf_counter()
        if number:
            starts.append(ready - started)
            ends.append(ended - ready)
    return starts, ends


async def measure(rounds: int, workdir: Path) -> tuple[dict[str, dict[str, list[float]]], list[float], int]:
    cache = offline_cache(workdir / "cache", TASKS / "os" / f"{TRASH}.json", TASKS / "os" / f"{PHOTOS}.json")
    adapter = OSWorldAdapter(TASKS, cache=cache)
    listing: list[float] = []
    started = time.perf_counter()
    tasks = adapter.list_tasks(TaskFilter())
    listing.append(time.perf_counter() - started)
    runnable = [t for t in tasks if t.skip_reason is None]
    user = find_task_user("user", "password")
    assert not isinstance(user, str), user
    phases = ("reset", "evaluate")
    samples: dict[str, dict[str, list[float]]] = {t.task_id: {k: [] for k in phases} for t in runnable}
    try:
        # The adapter runs each environment's display inside it: the runner's display is not used.
        environment = Environment("env-0", "", workdir, SpawnServer())
        await adapter.setup(environment)
        for number in range(rounds + 1):  # round 0 warms up (imports, first window manager connection)
            started = time.perf_counter()
            adapter.list_tasks(TaskFilter())
            if number:
                listing.append(time.perf_counter() - started)
            for task in runnable:
                started = time.perf_counter()
                await adapter.reset(environment, task)
                reset = time.perf_counter() - started
                started = time.perf_counter()
                score = await adapter.evaluate(environment, task, said_done(task, workdir))
                evaluate = time.perf_counter() - started
                log(f"round {number} {task.task_id[:8]}: reset {reset:.3f} s, evaluate {evaluate:.3f} s, {score}")
                if number:
                    samples[task.task_id]["reset"].append(reset)
                    samples[task.task_id]["evaluate"].append(evaluate)
        await adapter.teardown(environment)
    finally:
        await adapter.close()
    starts, ends = environment_lifecycle(user, rounds * 2)
    samples["environment"] = {"start": starts, "end": ends}
    return samples, listing, len(tasks)


def report(samples: dict[str, dict[str, list[float]]], listing: list[float], listed: int, command: str) -> str:
    data = {t["id"]: t for t in load_tasks(TASKS)}
    rows = []
    lifecycle = samples.pop("environment")
    for task_id, phases in samples.items():
        config = data[task_id].get("config", [])
        evaluator = data[task_id]["evaluator"]
        reset, evaluate = (Stats(tuple(v * 1000 for v in phases[k])) for k in ("reset", "evaluate"))
        rows.append(
            [
                task_id[:8],
                str(evaluator["func"]),
                ", ".join(s["type"] for s in config) or "none",
                f"{reset.median:.0f} (p90 {reset.p90:.0f})",
                f"{evaluate.median:.1f} (p90 {evaluate.p90:.1f})",
            ]
        )
    first, rest = listing[0] * 1000, Stats(tuple(v * 1000 for v in listing[1:]))
    rounds = len(next(iter(samples.values()))["reset"])
    every_reset = Stats(tuple(v * 1000 for phases in samples.values() for v in phases["reset"]))
    start, end = (Stats(tuple(v * 1000 for v in lifecycle[k])) for k in ("start", "end"))
    lines = [
        "# OSWorld offline: the adapter's overhead per os task outside the agent",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command, run from the repository root, as root: `{command}`",
        f"- Tasks: the {len(samples)} of the {listed} bundled os tasks that run on this machine (tests/data/osworld, "
        "OSWorld's own JSONs), 5ea617a3 and 23393935 with their downloads from an offline copy of OSWorld's cache; "
        f"{rounds} measured rounds after one warm-up round; each environment with its own Xvfb 1920x1080, openbox "
        "and accessibility bus inside, and its own network namespace; task account `user` from "
        "symphony-mcp osworld-user; evaluate as after an agent run that said done",
        "",
        *table(
            [
                "task",
                "metric",
                "setup steps",
                "reset ms (median, p90)",
                "evaluate ms (median, p90)",
            ],
            rows,
        ),
        "",
        f"Reset over every task and round ({len(every_reset.samples)}): median {every_reset.median:.0f} ms, "
        f"p90 {every_reset.p90:.0f} ms.",
        "",
        f"The environment alone ({len(start.samples)} times, after one warm-up): start to ready (namespaces, overlay, "
        f"veth pair and addresses, Xvfb, session and accessibility buses, openbox announced) median "
        f"{start.median:.0f} ms (p90 {start.p90:.0f}); end (PID 1 killed, every process reaped, the host's end of "
        f"the link and the display's reservation removed) median {end.median:.0f} ms (p90 {end.p90:.0f}).",
        "",
        f"list_tasks (load and classify the {listed} os tasks): first call in the process {first:.0f} ms "
        f"(imports OSWorld's metric modules general + utils + basic_os), then median {rest.median:.1f} ms "
        f"(p90 {rest.p90:.1f}).",
        "",
        "Reset is a fresh environment (bench/osworld/sandbox.py: the previous one ended, a new one started with its "
        "network and desktop, the start and end above) plus the task's setup steps run inside as the task user. "
        "Most of it is the setup itself: "
        'each `python -c "import pyautogui; ... time.sleep(0.5)"` step imports pyautogui in a new interpreter and '
        "sleeps as OSWorld's task says, and `sudo -S` costs a PAM round. Evaluate runs the getter's command as the "
        "task user (a shell) and OSWorld's metric, or nothing but the verdict for infeasible tasks. The runner's "
        "own per-task overhead (results files, queue) is in runner_overhead.md.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "osworld_adapter.md")
    args = parser.parse_args()
    status = subprocess.run([*ACCOUNT, "status"], capture_output=True, text=True).stdout
    made_here = "does not exist" in status
    if made_here:
        subprocess.run([*ACCOUNT, "create"], check=True, capture_output=True)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            samples, listing, listed = asyncio.run(measure(args.rounds, Path(workdir)))
    finally:
        if made_here:
            subprocess.run([*ACCOUNT, "remove"], check=True, capture_output=True)
    command = f"{interpreter()} -m benchmarks.overhead.osworld_adapter" + (
        f" --rounds {args.rounds}" if args.rounds != 5 else ""
    )
    publish_report(report(samples, listing, listed, command), args.output)


if __name__ == "__main__":
    main()
