"""Trajectory recording cost per step as a task grows to 500 steps, side by side with a screenshot.

On its own 1920x1080 Xvfb with text-filled xterms (see common.py), in this process,
two trajectories of --steps steps each are recorded through the package's `Task` (what the server
does after every action of a running task):

- "changing screen": each step types one character into a bash prompt, so every screen differs;
- "static screen": each step moves the pointer (mss frames do not show it), so every screen is the
  same: the worst case for the pHash index, where every earlier step is a hash candidate.

Per step it times the capture of the screen after the action, `Task.record` (screen print, loop
check, writing the step's line, queueing its PNG for the writer thread), the loop check alone, the
line write alone (the same step written again to a scratch file), what an fsync of such a line
would add, and, in the same loop, a default
`screenshot` (grab + JPEG) for comparison. Medians per window of 100 steps.

    python -m benchmarks.overhead.memory_steps
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from benchmarks.common import (
    INPUT_TARGET,
    REPO,
    RESOLUTION,
    Stats,
    elapsed_ms,
    log,
    output_parser,
    publish_desktop_benchmark,
    table,
    verdict,
)
from symphony_mcp.config import load_settings
from symphony_mcp.desktop.actions import DesktopActions
from symphony_mcp.desktop.frames import CallerSpace
from symphony_mcp.desktop.records import ActionRecord, Target
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.imaging.geometry import Point
from symphony_mcp.memory.layout import TaskInfo
from symphony_mcp.memory.task import Task
from symphony_mcp.memory.trajectory import TrajectoryWriter
from symphony_mcp.server import build_server

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "memory_steps.md"
TARGET_MS = 20.0
WINDOW = 100
# Pointer positions for the static scenario: 40 points 60 px apart (more than 2% of the diagonal).
POINTER_PATH = [(200 + 60 * (i % 20), 300 + 200 * (i // 20)) for i in range(40)]


@dataclass
class Samples:
    capture: list[float] = field(default_factory=list)
    record: list[float] = field(default_factory=list)
    step: list[float] = field(default_factory=list)  # capture + record: the cost on the action's path
    check: list[float] = field(default_factory=list)
    line: list[float] = field(default_factory=list)
    fsync: list[float] = field(default_factory=list)
    screenshot: list[float] = field(default_factory=list)
    flush_ms: float = 0.0
    loops: int = 0


async def run_scenario(screen: Screen, actions: DesktopActions, kind: str, steps: int, root: Path) -> Samples:
    whole_screen = await screen.screen_rect()
    info = TaskInfo(task_id=kind, instruction=f"benchmark: {kind}", directory=str(root / kind), started_at=time.time())
    task = Task(info, load_settings().memory, whole_screen, await screen.capture())
    samples = Samples()
    lines = TrajectoryWriter(root / f"{kind} lines")  # the same lines again, to time the write alone
    synced = os.open(root / f"{kind} synced.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)  # and what fsync adds
    screen_space = await screen.caller_space("screen")
    if kind == "changing screen":
        await actions.click(Target(INPUT_TARGET), screen_space)
    for n in range(steps):
        record = await act(actions, screen_space, kind, n)
        started = time.perf_counter()
        frame = await screen.capture()
        captured = time.perf_counter()
        step = await task.record(record, frame)
        recorded = time.perf_counter()
        samples.capture.append((captured - started) * 1000)
        samples.record.append((recorded - captured) * 1000)
        samples.step.append((recorded - started) * 1000)
        samples.loops += step.loop
        started = time.perf_counter()
        task.loops.check()
        samples.check.append(elapsed_ms(started))
        started = time.perf_counter()
        lines.append(step, None)
        samples.line.append(elapsed_ms(started))
        os.write(synced, step.model_dump_json().encode() + b"\n")
        started = time.perf_counter()
        os.fsync(synced)
        samples.fsync.append(elapsed_ms(started))
        started = time.perf_counter()
        await screen.screenshot(screen_space)
        samples.screenshot.append(elapsed_ms(started))
        if (n + 1) % WINDOW == 0:
            log(f"{kind}: {n + 1} steps")
    started = time.perf_counter()
    task.close("abandoned", "benchmark")
    samples.flush_ms = elapsed_ms(started)
    lines.close()
    os.close(synced)
    return samples


async def act(actions: DesktopActions, screen_space: CallerSpace, kind: str, n: int) -> ActionRecord:
    if kind == "changing screen":
        return await actions.type_text("abcdefghijklmnopqrstuvwxyz"[n % 26], screen_space)
    x, y = POINTER_PATH[n % len(POINTER_PATH)]
    return await actions.move(Target(Point(x=x, y=y)), screen_space)


async def run_benchmark(steps: int) -> dict[str, Samples]:
    server = build_server(load_settings())
    try:
        with tempfile.TemporaryDirectory(prefix="symphony-memory-bench-") as tmp:
            screen, actions = server.screen, server.desktop_actions
            return {kind: await run_scenario(screen, actions, kind, steps, Path(tmp)) for kind in KINDS}
    finally:
        server.close()


KINDS = ("changing screen", "static screen")


def windows(values: list[float]) -> list[tuple[str, Stats]]:
    return [
        (f"{start + 1}-{start + WINDOW}", Stats(tuple(values[start : start + WINDOW])))
        for start in range(0, len(values) - WINDOW + 1, WINDOW)
    ]


def scenario_section(kind: str, samples: Samples) -> list[str]:
    rows = []
    for (label, step), (_, capture), (_, record), (_, check), (_, line), (_, fsync), (_, shot) in zip(
        windows(samples.step),
        windows(samples.capture),
        windows(samples.record),
        windows(samples.check),
        windows(samples.line),
        windows(samples.fsync),
        windows(samples.screenshot),
        strict=True,
    ):
        rows.append(
            [
                label,
                f"{capture.median:.2f}",
                f"{record.median:.2f}",
                f"**{step.median:.2f}**",
                f"{check.median:.3f}",
                f"{line.median:.3f} / {line.p99:.3f}",
                f"{fsync.median:.3f} / {fsync.p99:.3f}",
                f"{shot.median:.2f}",
                f"{step.median / shot.median:.2f}",
            ]
        )
    header = [
        "steps",
        "capture",
        "record",
        "step total",
        "loop check alone",
        "line write alone (median / p99)",
        "fsync it would add (median / p99)",
        "screenshot",
        "step / screenshot",
    ]
    return [
        f"### {kind}",
        "",
        *table(header, rows),
        "",
        f"Loops flagged: {samples.loops}. Writing the rest of the PNG queue at the end took {samples.flush_ms:.0f} ms.",
    ]


def summary_section(results: dict[str, Samples]) -> list[str]:
    rows = []
    for kind, samples in results.items():
        steps = windows(samples.step)
        first, last = steps[0][1].median, steps[-1][1].median
        checks = windows(samples.check)
        growth = last / first
        rows.append(
            [
                kind,
                f"{first:.2f}",
                f"{last:.2f}",
                f"{growth:.2f}",
                f"{checks[0][1].median:.3f} -> {checks[-1][1].median:.3f}",
                verdict(last < TARGET_MS and growth < 1.5),
            ]
        )
    header = ["scenario", "first 100 steps", f"last {WINDOW} steps", "growth", "loop check", "target"]
    return [
        f"## Targets: step recording under {TARGET_MS:g} ms at 500 steps, flat growth (last / first window < 1.5)",
        "",
        *table(header, rows),
    ]


def render_report(results: dict[str, Samples], steps: int, command: str, facts: list[str]) -> str:
    lines = [
        "# Trajectory recording benchmark",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *facts,
        f"- Display: own Xvfb at {RESOLUTION}x24 with openbox and three text-filled xterms",
        f"- Command: `{command}`",
        f"- {steps} steps per scenario; medians per window of {WINDOW} steps; times in ms",
        "- capture: grab of the screen after the action (full resolution, the desktop thread); record: "
        "`Task.record` (pHash + 320 px grey print, loop check, writing the line, queueing the PNG for the writer "
        "thread); "
        "screenshot: the `screenshot` tool's work (grab + JPEG 1280x720) in the same loop",
        "",
        *summary_section(results),
        "",
    ]
    for kind, samples in results.items():
        lines += [*scenario_section(kind, samples), ""]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = output_parser(__doc__, DEFAULT_OUTPUT)
    parser.add_argument("--steps", type=int, default=500, help="steps per scenario (a multiple of 100)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return publish_desktop_benchmark(
        lambda _display: anyio.run(run_benchmark, args.steps),
        lambda results, command, facts: render_report(results, args.steps, command, facts),
        args.output,
    )


if __name__ == "__main__":
    sys.exit(main())
