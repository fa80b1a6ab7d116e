"""Kill -9 a recording server at random points, many times: are answered steps on disk?

Each round starts a real `symphony-mcp serve` over stdio on its own virtual display (`--virtual-display
always`), starts a task, and drives it with a random mix of single actions and bursts of 2-5
concurrent ones (click, move_pointer, type) until, after a random delay, the server is killed with
SIGKILL. Then it compares what the client was answered with what is on disk:

- lost: steps whose answer reached the client but whose `traj.jsonl` line is not on disk (must be 0);
- in flight: lines on disk that were never answered (the kill cut the answer; allowed);
- torn: lines that do not parse (a last line cut mid-write is skipped by readers; any other must not be);
- missing screenshots: lines whose PNG was not written yet (allowed: it follows the line);
- orphans: the server's Xvfb / openbox still alive 10 s after the kill (must be 0).

All rounds share one trajectory directory, so each new server also ends the previous round's task
(left "running" by the kill); a last server lists the tasks and counts any still "running" (must
be 0). After it, every task folder must hold no half-written file (`*.tmp`) and no step line naming a
screenshot that is not there without saying it was lost (`screenshot_lost`): the restarted servers settle
what each kill left. Latencies: the client's round trip per answered action, and the `record_ms` each step line
carries (screen print and loop check inside `Task.record`; the line's write itself is
microseconds).

    python -m benchmarks.robustness.crash_durability
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.common import REPO, invocation, log, machine_facts, publish_report, table, verdict
from symphony_mcp.memory.layout import TRAJECTORY_FILE, step_screenshot
from symphony_mcp.memory.trajectory import TrajectoryStep, read_trajectory
from testkit.server_process import ServerProcess, wait_gone

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "crash_durability.md"
RESOLUTION = "1920x1080"


@dataclass
class Round:
    answered: set[int] = field(default_factory=set)
    on_disk: set[int] = field(default_factory=set)
    torn: int = 0  # lines that do not parse, the last line excepted
    torn_last: int = 0  # a last line cut mid-write: readers skip it
    missing_screenshots: int = 0
    orphans: int = 0
    delay_s: float = 0.0
    round_trips_ms: list[float] = field(default_factory=list)
    record_ms: list[float] = field(default_factory=list)
    bursts: int = 0
    singles: int = 0

    @property
    def lost(self) -> set[int]:
        return self.answered - self.on_disk

    @property
    def in_flight(self) -> set[int]:
        return self.on_disk - self.answered


async def act(client: Client, rng: random.Random, result: Round) -> None:
    """One random action; its step number is kept once the answer is back."""
    x, y = rng.randrange(50, 1800), rng.randrange(300, 1000)
    kind = rng.choice(["click", "move_pointer", "type"])
    arguments: dict[str, Any] = {"x": x, "y": y, "space": "screen"}
    if kind == "type":
        arguments["text"] = rng.choice("abcdefgh")
    started = time.perf_counter()
    answer = await client.call_tool(kind, arguments)
    if answer.is_error or answer.structured_content is None:
        raise RuntimeError(f"{kind} failed: {answer.content}")
    result.round_trips_ms.append((time.perf_counter() - started) * 1000)
    result.answered.add(int(answer.structured_content["task_step"]))


async def drive(client: Client, rng: random.Random, result: Round) -> None:
    """Actions until the connection dies: single ones and bursts of concurrent ones, at random."""
    try:
        while True:
            if rng.random() < 0.5:
                result.singles += 1
                await act(client, rng, result)
            else:
                result.bursts += 1
                async with anyio.create_task_group() as tg:
                    for _ in range(rng.randint(2, 5)):
                        tg.start_soon(act, client, rng, result)
    except Exception:  # the server was killed under a call (the error type depends on where it was cut)
        return


async def one_round(number: int, runs: Path, rng: random.Random, max_delay: float) -> Round:
    result = Round(delay_s=rng.uniform(0.05, max_delay))
    server = ServerProcess(
        "--virtual-display",
        "always",
        "--resolution",
        RESOLUTION,
        "--trajectory-dir",
        str(runs),
        stderr=subprocess.DEVNULL,
    )
    task_id = f"round-{number}"
    async with Client(server) as client:
        await client.call_tool("start_task", {"instruction": "act until killed", "task_id": task_id})
        display = server.children()
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive, client, rng, result)
            await anyio.sleep(result.delay_s)
            os.kill(server.pid, signal.SIGKILL)
            await server.wait(10)
            tg.cancel_scope.cancel()
    result.orphans = len(wait_gone(display, timeout=10))
    read_disk(runs / task_id, result)
    return result


def read_disk(directory: Path, result: Round) -> None:
    lines = (directory / TRAJECTORY_FILE).read_bytes().splitlines() if (directory / TRAJECTORY_FILE).exists() else []
    for number, line in enumerate(lines, 1):
        try:
            step = TrajectoryStep.model_validate_json(line)
        except ValueError:
            if number == len(lines):
                result.torn_last += 1
            else:
                result.torn += 1
            continue
        result.on_disk.add(step.step_num)
        result.record_ms.append(step.record_ms)
        if not (directory / step_screenshot(step.step_num)).exists():
            result.missing_screenshots += 1


@dataclass
class Settled:
    """What the task folders hold once a fresh server has found every killed server's task."""

    running: list[str]  # tasks a fresh server still lists as running
    leftovers: int  # half-written files (*.tmp) left in task folders
    unmarked: int  # step lines naming a screenshot that is not there, without screenshot_lost


async def after_restart(runs: Path) -> Settled:
    """A fresh server lists the tasks (it ends and settles orphaned ones when it starts); then the folders."""
    async with Client(
        ServerProcess("--virtual-display", "always", "--trajectory-dir", str(runs), stderr=subprocess.DEVNULL)
    ) as client:
        listed = await client.call_tool("list_tasks", {})
    assert listed.structured_content is not None
    tasks = [task for task in runs.iterdir() if task.is_dir()]
    return Settled(
        running=[t["task_id"] for t in listed.structured_content["result"] if t["status"] == "running"],
        leftovers=sum(len(list(task.glob("*.tmp"))) for task in tasks),
        unmarked=sum(
            not step.screenshot_lost and not (task / step_screenshot(step.step_num)).exists()
            for task in tasks
            for step in read_trajectory(task)
        ),
    )


async def run_benchmark(kills: int, seed: int, max_delay: float) -> tuple[list[Round], Settled]:
    rng = random.Random(seed)
    rounds = []
    with tempfile.TemporaryDirectory(prefix="symphony-crash-bench-") as tmp:
        runs = Path(tmp) / "runs"
        for number in range(1, kills + 1):
            result = await one_round(number, runs, rng, max_delay)
            rounds.append(result)
            log(
                f"kill {number}/{kills} after {result.delay_s:.2f} s: answered {len(result.answered)}, "
                f"on disk {len(result.on_disk)}, lost {len(result.lost)}, torn {result.torn + result.torn_last}, "
                f"orphans {result.orphans}"
            )
        settled = await after_restart(runs)
    return rounds, settled


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def render_report(rounds: list[Round], settled: Settled, command: str, facts: list[str], seed: int) -> str:
    def total(count: Callable[[Round], int]) -> int:
        return sum(count(r) for r in rounds)

    lost, torn, orphans = total(lambda r: len(r.lost)), total(lambda r: r.torn), total(lambda r: r.orphans)
    trips = [t for r in rounds for t in r.round_trips_ms]
    records = [t for r in rounds for t in r.record_ms]
    delays = [r.delay_s for r in rounds]
    rows = [
        ["answered steps lost (answer received, line not on disk)", str(lost), verdict(lost == 0)],
        ["torn lines before the last one", str(torn), verdict(torn == 0)],
        ["Xvfb / openbox left alive 10 s after a kill", str(orphans), verdict(orphans == 0)],
        ["tasks a restarted server lists as running", str(len(settled.running)), verdict(not settled.running)],
        ["half-written files (*.tmp) left after the restarts", str(settled.leftovers), verdict(not settled.leftovers)],
        [
            "step lines naming a missing screenshot, not marked lost, after the restarts",
            str(settled.unmarked),
            verdict(not settled.unmarked),
        ],
    ]
    figures = [
        ["kills", str(len(rounds))],
        ["kill delay after start_task (s)", f"{min(delays):.2f} .. {max(delays):.2f}"],
        [
            "single actions / concurrent bursts (2-5 actions)",
            f"{total(lambda r: r.singles)} / {total(lambda r: r.bursts)}",
        ],
        ["steps answered", str(total(lambda r: len(r.answered)))],
        ["lines on disk that were never answered (in flight at the kill)", str(total(lambda r: len(r.in_flight)))],
        ["lines whose screenshot was not written yet", str(total(lambda r: r.missing_screenshots))],
        ["torn last lines (cut mid-write; readers skip them)", str(total(lambda r: r.torn_last))],
        [
            "action round trip p50 / p99 (ms, client side)",
            f"{percentile(trips, 0.5):.1f} / {percentile(trips, 0.99):.1f}",
        ],
        [
            "step record_ms p50 / p99 (ms, in Task.record)",
            f"{percentile(records, 0.5):.2f} / {percentile(records, 0.99):.2f}",
        ],
    ]
    return "\n".join(
        [
            "# Crash durability benchmark",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *facts,
            f"- Each round: a server over stdio on its own Xvfb ({RESOLUTION}, openbox), a task, random actions "
            "(click / move_pointer / type; single or 2-5 concurrent) until SIGKILL after a random delay",
            f"- Command: `{command}` (seed {seed})",
            "",
            "## Promises",
            "",
            *table(["what", "count", "target"], rows),
            "",
            "## Figures",
            "",
            *table(["what", "value"], figures),
            "",
        ]
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=50, help="rounds, each ended by kill -9")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--max-delay", type=float, default=2.0, help="longest wait before the kill (s)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="markdown results file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = invocation()
    facts = machine_facts()
    rounds, settled = anyio.run(run_benchmark, args.kills, args.seed, args.max_delay)
    publish_report(render_report(rounds, settled, command, facts, args.seed), args.output)
    lost = sum(len(r.lost) for r in rounds)
    orphans = sum(r.orphans for r in rounds)
    honest = not (settled.running or settled.leftovers or settled.unmarked)
    return 0 if lost == 0 and orphans == 0 and honest else 1


if __name__ == "__main__":
    sys.exit(main())
