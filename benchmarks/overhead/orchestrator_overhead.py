"""Orchestrator overhead: what the bundled OS-Symphony loop costs per step besides the model calls.

Starts its own Xvfb at 1920x1080 with openbox and three text-filled xterms (`common.benchmark_desktop`)
and a stand-in model (`testkit/model_server.py`: a real OpenAI-compatible chat-completions server over HTTP on
127.0.0.1, in this process) that answers every request at once. Then runs whole tasks through `run_task`
with its default connection (`symphony-mcp serve` spawned over stdio, as `symphony-mcp run` does), results
in a temporary directory, `max_steps` 50:

- the planner answers, in the required format, `move_pointer(x=..., y=..., space="screen")` to a new spot
  of bare root window on every step (no side effects; each of the 60 spots is new, so no loop is flagged
  within 61 steps) and `done()` on the last step, where only done/fail are allowed;
- the memoryer answers the step check with `{"success": true, ...}` and the audit with On-track.

Scenarios: A reflection on (the server's `reflect` before each plan: step check + audit) and B reflection
off, each with the server's settle pause after a GUI action at 0 and at the default 50 ms
(`SYMPHONY_INPUT__SETTLE_SECONDS`), interleaved over --runs rounds after one short unmeasured warm-up run.

Per step it reads `RunStep.timings` from the returned record (observe, reflect, plan, execute, record,
model_ms, overhead_ms = the loop's step time minus model_ms) and adds its own measures: the step's period
(the Observe event of one step to the next one's, which also covers writing `run.json` after the step,
outside the loop's timings), the `run.json` write itself, the planner's `ChatClient.complete` calls
(`save_record` and `ChatClient.complete` are wrapped in this process for the run), this process's gen-2
garbage collections, and the stand-in's own handling time and request size per model call. Medians per
window of 10 steps; growth = last window / first window. Afterwards, in process, `save_record` for records
of 50 to 500 steps made from a measured run. Prints a markdown report and writes it to --output (--samples
also writes every step's numbers as JSON). Run from the repository root:

    .venv/bin/python -m benchmarks.overhead.orchestrator_overhead
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import json
import logging
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse

from benchmarks.common import (
    REPO,
    RESOLUTION,
    benchmark_desktop,
    invocation,
    log,
    machine_facts,
    publish_report,
    table,
    verdict,
)
from symphony_mcp.config import Settings, load_settings
from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.models.client import ChatClient
from symphony_mcp.orchestrator import api
from symphony_mcp.orchestrator.api import TaskOutcome, run_task
from symphony_mcp.orchestrator.loop import RunEvent
from symphony_mcp.orchestrator.records import RunRecord, State
from symphony_mcp.orchestrator.task_folders import save_record
from testkit.model_server import ModelRequest, StandInModel
from testkit.scripted_planner import MEMORYER, PLANNER, act, is_step_check, on_track

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "orchestrator_overhead.md"
TARGET_MS = 150.0
GROWTH_LIMIT = 1.5
WINDOW = 10
INSTRUCTION = "Move the pointer over the desktop background, one spot per step, then say done"
DEFAULT_SETTLE = Settings().input.settle_seconds
SAVE_LENGTHS = (50, 100, 200, 500)  # record lengths for the run.json write (max_steps allows up to 500)


def background_spots() -> list[tuple[int, int]]:
    """Bare root window of the benchmark desktop (see `common.XTERMS`), spots >= 50 px apart
    (more than the loop check's 2% of the diagonal): the gap between the left and right xterms, the strip
    between the two right ones, and the strip right of them."""
    column = [(949, y) for y in range(30, 1051, 50)]
    row = [(x, 614) for x in range(1000, 1851, 50)]
    edge = [(1910, y) for y in range(30, 1051, 50)]
    return column + row + edge


SPOTS = background_spots()


def check_spots_are_background() -> None:
    """Every spot must be bare root window (a uniform patch), not an xterm that could react."""
    with contextlib.closing(ScreenCapturer()) as capturer:
        image = capturer.grab(capturer.monitor_rect(1))
    for x, y in SPOTS:
        colours = image.crop((x - 5, y - 5, x + 6, y + 6)).getcolors()
        if colours is None or len(colours) != 1:
            raise RuntimeError(f"({x}, {y}) is not bare background on the benchmark desktop; did the layout change?")


STEP_CHECK = json.dumps({"success": True, "summary": "The pointer moved to the spot."})
NEXT_SPOT = "Move the pointer to the next spot."


def step_of(request: ModelRequest) -> tuple[int, int]:
    """(step, max_steps) the planner is asked about."""
    for text in reversed(request.texts()):
        if match := re.search(r"Step (\d+) of (\d+)\.", text):
            return int(match.group(1)), int(match.group(2))
    raise RuntimeError("no step number in the planner request")


def answer(request: ModelRequest) -> str:
    if request.body["model"] == MEMORYER:
        return STEP_CHECK if is_step_check(request) else on_track()
    step, max_steps = step_of(request)
    if step >= max_steps:
        return act("done()", NEXT_SPOT)
    x, y = SPOTS[(step - 1) % len(SPOTS)]
    return act(f'move_pointer(x={x}, y={y}, space="screen")', NEXT_SPOT)


# --- instrumentation -----------------------------------------------------------------------------
@dataclass
class Probe:
    """What this process sees of one run, by orchestrator step (the step whose Observe event came last)."""

    step: int = 0
    starts: dict[int, float] = field(default_factory=dict)  # perf_counter of each step's Observe event
    last_event: float = 0.0
    planner: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # (complete() wall, elapsed_ms)
    saves: dict[int, list[float]] = field(default_factory=dict)  # `save_record` ms; the first is the step's own
    collections: dict[int, list[float]] = field(default_factory=dict)  # this process's gen-2 GC pauses, ms
    stand_in: dict[int, list[tuple[str, float, int]]] = field(default_factory=dict)  # (model, handler ms, bytes)

    def on_event(self, event: RunEvent) -> None:
        now = time.perf_counter()
        if event.state == State.OBSERVE and event.step not in self.starts:
            self.starts[event.step] = now
            self.step = event.step
        self.last_event = now


class TimedStandIn(StandInModel):
    """The stand-in, also noting how long its handler took for each request and how big the request was."""

    def __init__(self) -> None:
        super().__init__()
        self.probe = Probe()

    async def _chat(self, request: Request) -> JSONResponse:
        started = time.perf_counter()
        response = await super()._chat(request)
        took = (time.perf_counter() - started) * 1000
        size = len(await request.body())  # cached by starlette
        model = self.requests[-1].body["model"] if self.requests else "?"
        self.requests.clear()  # it keeps every request otherwise (each holds the images)
        self.probe.stand_in.setdefault(self.probe.step, []).append((model, took, size))
        return response


@contextlib.contextmanager
def instrumented(stand_in: TimedStandIn) -> Iterator[None]:
    """Wrap the planner's `ChatClient.complete` and `run_task`'s `save_record` (in this process only)."""
    complete, save_record = ChatClient.complete, api.save_record

    async def timed_complete(self: ChatClient, messages: Any, **options: Any) -> Any:
        started = time.perf_counter()
        completion = await complete(self, messages, **options)
        probe = stand_in.probe
        probe.planner.setdefault(probe.step, []).append(((time.perf_counter() - started) * 1000, completion.elapsed_ms))
        return completion

    def timed_save(task_dir: Path, record: RunRecord) -> None:
        started = time.perf_counter()
        save_record(task_dir, record)
        probe = stand_in.probe
        probe.saves.setdefault(probe.step, []).append((time.perf_counter() - started) * 1000)

    collecting = [0.0]

    def on_collection(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            collecting[0] = time.perf_counter()
        else:
            probe = stand_in.probe
            probe.collections.setdefault(probe.step, []).append((time.perf_counter() - collecting[0]) * 1000)

    ChatClient.complete = timed_complete  # type: ignore[method-assign]
    api.save_record = timed_save
    gc.callbacks.append(on_collection)
    try:
        yield
    finally:
        ChatClient.complete = complete  # type: ignore[method-assign]
        api.save_record = save_record
        gc.callbacks.remove(on_collection)


# --- samples -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSample:
    step: int
    observe: float
    reflect: float
    plan: float
    execute: float
    record: float
    model: float
    overhead: float  # RunStep.timings.overhead_ms
    planner_model: float  # Completion.elapsed_ms of the step's planner calls
    planner_call: float  # ChatClient.complete wall time of those calls
    save: float  # run.json after the step (not in the loop's timings)
    period: float  # this step's Observe event to the next step's
    planner_handler: float
    memoryer_handler: float
    planner_bytes: int
    memoryer_bytes: int
    collections: list[float]  # this process's gen-2 GC pauses during the step, ms

    @property
    def memoryer_model(self) -> float:
        return self.model - self.planner_model

    @property
    def full(self) -> float:
        """Everything but model calls: the step's period minus model_ms."""
        return self.period - self.model

    @property
    def reflect_work(self) -> float:
        return self.reflect - self.memoryer_model

    @property
    def plan_work(self) -> float:
        return self.plan - self.planner_model

    @property
    def action(self) -> float:
        return self.execute - self.record

    @property
    def other(self) -> float:
        return self.period - (self.observe + self.reflect + self.plan + self.execute + self.save)


@dataclass(frozen=True)
class Scenario:
    key: str
    reflection: bool
    settle: float

    @property
    def label(self) -> str:
        settle = f"settle {self.settle * 1000:g} ms" + (" (default)" if self.settle == DEFAULT_SETTLE else "")
        return f"{'A: reflection on' if self.reflection else 'B: reflection off'}, {settle}"


SCENARIOS = (
    Scenario("A-settle0", True, 0.0),
    Scenario("B-settle0", False, 0.0),
    Scenario("A-settle50", True, DEFAULT_SETTLE),
    Scenario("B-settle50", False, DEFAULT_SETTLE),
)


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    index: int
    steps: list[StepSample]  # the action steps (1 .. max_steps - 1)
    final: StepSample | None  # the last step: done(), no action (its period ends at the Success event)
    setup_ms: float  # run_task called -> step 1's Observe (spawn, initialize, list_tools, start_task)
    teardown_ms: float  # the Success event -> run_task returned (end_task, usage, saves, server exit)
    run_json_bytes: int
    traj_bytes: int
    off_track: int
    loops: int  # trajectory steps the server flagged as a loop
    record: RunRecord


def settings_for(url: str, results: Path, scenario: Scenario, max_steps: int) -> Settings:
    endpoint = {"base_url": url, "backoff_seconds": 0.05, "max_retries": 1}
    return load_settings(
        models={"orchestrator": {**endpoint, "model": PLANNER}, "memoryer": {**endpoint, "model": MEMORYER}},
        orchestrator={"results_dir": str(results), "max_steps": max_steps, "reflection": scenario.reflection},
        input={"settle_seconds": scenario.settle},
    )


def check_outcome(outcome: TaskOutcome, scenario: Scenario, max_steps: int) -> int:
    """The run did what was scripted; returns how many reflections were not On-track."""
    record = outcome.record
    if outcome.outcome != "unverified" or len(record.steps) != max_steps:  # done() without a checker
        raise RuntimeError(f"{outcome.task_id}: {outcome.outcome} after {len(record.steps)} steps: {record.message}")
    for step in record.steps[:-1]:
        if step.action is None or step.action.name != "move_pointer" or step.tool_error or step.rejected_outputs:
            raise RuntimeError(f"{outcome.task_id} step {step.step}: not a clean move_pointer: {step.model_dump()}")
        if step.trajectory_step != step.step:
            raise RuntimeError(f"{outcome.task_id} step {step.step} became trajectory step {step.trajectory_step}")
    if len(outcome.trajectory) != max_steps - 1:
        raise RuntimeError(f"{outcome.task_id}: {len(outcome.trajectory)} trajectory steps, {max_steps - 1} expected")
    reflections = [s.reflection for s in record.steps[1:]]
    if scenario.reflection and any(r is None for r in reflections):
        raise RuntimeError(f"{outcome.task_id}: a step after the first has no reflection")
    if not scenario.reflection and any(r is not None for r in reflections):
        raise RuntimeError(f"{outcome.task_id}: reflections with reflection off")
    return sum(r is not None and r.status != "On-track" for r in reflections)


def samples_of(record: RunRecord, probe: Probe) -> list[StepSample]:
    samples = []
    for step in record.steps:
        n, timings = step.step, step.timings
        planner = probe.planner.get(n, [])
        calls = probe.stand_in.get(n, [])
        end = probe.starts.get(n + 1, probe.last_event)
        samples.append(
            StepSample(
                step=n,
                observe=timings.observe_ms,
                reflect=timings.reflect_ms,
                plan=timings.plan_ms,
                execute=timings.execute_ms,
                record=timings.record_ms,
                model=timings.model_ms,
                overhead=timings.overhead_ms,
                planner_model=sum(elapsed for _, elapsed in planner),
                planner_call=sum(wall for wall, _ in planner),
                save=probe.saves.get(n, [0.0])[0],
                period=(end - probe.starts[n]) * 1000,
                planner_handler=sum(ms for model, ms, _ in calls if model == PLANNER),
                memoryer_handler=sum(ms for model, ms, _ in calls if model == MEMORYER),
                planner_bytes=sum(size for model, _, size in calls if model == PLANNER),
                memoryer_bytes=sum(size for model, _, size in calls if model == MEMORYER),
                collections=probe.collections.get(n, []),
            )
        )
    return samples


async def run_once(
    stand_in: TimedStandIn, scenario: Scenario, results: Path, max_steps: int, task_id: str, index: int
) -> RunResult:
    stand_in.probe = probe = Probe()
    stand_in.script(default=answer)
    settings = settings_for(stand_in.url, results, scenario, max_steps)
    started = time.perf_counter()
    outcome = await run_task(INSTRUCTION, settings=settings, task_id=task_id, on_event=probe.on_event)
    returned = time.perf_counter()
    off_track = check_outcome(outcome, scenario, max_steps)
    samples = samples_of(outcome.record, probe)
    return RunResult(
        scenario=scenario,
        index=index,
        steps=samples[:-1],
        final=samples[-1],
        setup_ms=(probe.starts[1] - started) * 1000,
        teardown_ms=(returned - probe.last_event) * 1000,
        run_json_bytes=(outcome.directory / "run.json").stat().st_size,
        traj_bytes=(outcome.directory / "traj.jsonl").stat().st_size,
        off_track=off_track,
        loops=sum(step.loop for step in outcome.trajectory),
        record=outcome.record,
    )


async def run_benchmark(args: argparse.Namespace) -> list[RunResult]:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    stand_in = TimedStandIn()
    stand_in.start()
    results: list[RunResult] = []
    try:
        with instrumented(stand_in), tempfile.TemporaryDirectory(prefix="symphony-orchestrator-bench-") as tmp:
            root = Path(tmp)
            if args.warmup_steps:
                log(f"warm-up run ({args.warmup_steps} steps, not measured)")
                await run_once(stand_in, args.scenarios[0], root, args.warmup_steps, "warm-up", 0)
            for index in range(args.runs):
                shift = index % len(args.scenarios)
                for scenario in args.scenarios[shift:] + args.scenarios[:shift]:
                    started = time.perf_counter()
                    result = await run_once(stand_in, scenario, root, args.steps, f"{scenario.key}-r{index + 1}", index)
                    results.append(result)
                    full = statistics.median(s.full for s in result.steps)
                    log(
                        f"round {index + 1}/{args.runs} {scenario.label}: {time.perf_counter() - started:.1f} s, "
                        f"median step overhead {full:.1f} ms"
                    )
    finally:
        stand_in.stop()
    return results


# --- the report ----------------------------------------------------------------------------------
def median(samples: list[StepSample], metric: Callable[[StepSample], float]) -> float:
    return statistics.median(metric(s) for s in samples)


def windows(steps: int) -> list[tuple[int, int]]:
    """Windows of WINDOW action steps over 1 .. steps - 1 (the last step is done())."""
    last = steps - 1
    return [(start, min(start + WINDOW - 1, last)) for start in range(1, last + 1, WINDOW)]


def in_window(runs: list[RunResult], window: tuple[int, int]) -> list[StepSample]:
    return [s for run in runs for s in run.steps if window[0] <= s.step <= window[1]]


def label(window: tuple[int, int]) -> str:
    return f"{window[0]}-{window[1]}"


@dataclass(frozen=True)
class Summary:
    scenario: Scenario
    runs: list[RunResult]
    windows: list[tuple[int, int]]

    def series(self, metric: Callable[[StepSample], float]) -> list[float]:
        return [median(in_window(self.runs, window), metric) for window in self.windows]

    def growth(self, metric: Callable[[StepSample], float], first: int = 0) -> float:
        values = self.series(metric)
        return values[-1] / values[first]

    def trend(self, metric: Callable[[StepSample], float]) -> float:
        """Least-squares slope per WINDOW steps over every sample after the first window."""
        samples = [s for run in self.runs for s in run.steps if s.step > WINDOW]
        fit = statistics.linear_regression([s.step for s in samples], [metric(s) for s in samples])
        return fit.slope * WINDOW

    @property
    def worst_full(self) -> float:
        return max(self.series(lambda s: s.full))

    @property
    def settle_ms(self) -> float:
        return self.scenario.settle * 1000

    @property
    def passed(self) -> bool:
        return self.worst_full - self.settle_ms < TARGET_MS and self.growth(lambda s: s.full) < GROWTH_LIMIT


def targets_section(summaries: list[Summary]) -> list[str]:
    body = []
    for summary in summaries:
        full = summary.series(lambda s: s.full)
        recorded = summary.series(lambda s: s.overhead)
        settle = summary.settle_ms
        body.append(
            [
                summary.scenario.label,
                f"{full[0]:.1f} -> {full[-1]:.1f}",
                f"{settle:g}",
                f"**{summary.worst_full - settle:.1f}**",
                f"{summary.growth(lambda s: s.full):.2f} (after warm-up: {summary.growth(lambda s: s.full, 1):.2f})",
                f"{recorded[0]:.1f} -> {recorded[-1]:.1f} ({summary.growth(lambda s: s.overhead):.2f})",
                verdict(summary.passed),
            ]
        )
    header = [
        "scenario",
        "step overhead, first -> last window",
        "of which settle",
        "worst window without settle",
        "growth last / first window (last / second)",
        "`overhead_ms` as recorded, first -> last (growth)",
        f"< {TARGET_MS:g} ms and growth < {GROWTH_LIMIT:g}",
    ]
    return [
        f"## Targets: orchestrator overhead < {TARGET_MS:g} ms per step at 1080p, flat over 50 steps "
        f"(growth < {GROWTH_LIMIT:g})",
        "",
        *table(header, body),
        "",
        "Step overhead = the step's period (its Observe event to the next step's) minus the model time the loop",
        "records (`model_ms`: the planner's calls and the memoryer's inside `reflect`): everything the orchestrator",
        "and the server do in a step but wait for a model, including writing `run.json`, which happens after the",
        "loop's own step timing. The verdict uses it, minus the settle pause (the application's time, not the",
        "orchestrator's), on the window medians; `overhead_ms` as recorded leaves the `run.json` write out.",
    ]


def window_section(summary: Summary) -> list[str]:
    rows: list[tuple[str, Callable[[StepSample], float]]] = [
        ("**step overhead (period - model)**", lambda s: s.full),
        ("`overhead_ms` as recorded", lambda s: s.overhead),
        ("observe (`screenshot`)", lambda s: s.observe),
        ("reflect without model (`reflect` call)", lambda s: s.reflect_work),
        ("plan without model (prompt, request body, parse)", lambda s: s.plan_work),
        ("  of which prompt building and parsing", lambda s: s.plan - s.planner_call),
        ("execute: the action (`move_pointer`, settle, trajectory recording)", lambda s: s.action),
        ("execute: record (`record_step`)", lambda s: s.record),
        ("`run.json` write (after the step, not in `overhead_ms`)", lambda s: s.save),
        ("other (between phases)", lambda s: s.other),
        ("model_ms (instant stand-in)", lambda s: s.model),
        ("  planner (`Completion.elapsed_ms`)", lambda s: s.planner_model),
        ("  memoryer (inside `reflect`)", lambda s: s.memoryer_model),
        ("step period (wall)", lambda s: s.period),
    ]
    if not summary.scenario.reflection:
        rows = [row for row in rows if "reflect" not in row[0] and "memoryer" not in row[0]]
    body = [
        [name, *(f"{value:.1f}" for value in summary.series(metric)), f"{summary.trend(metric):+.2f}"]
        for name, metric in rows
    ]
    runs = len(summary.runs)
    last = summary.windows[-1]
    after = f"{WINDOW + 1}-{last[1]}"
    header = ["median per step (ms)", *(f"steps {label(w)}" for w in summary.windows), f"trend per {WINDOW} steps"]
    return [
        f"### {summary.scenario.label}",
        "",
        *table(header, body),
        "",
        f"{runs} run(s), {runs * WINDOW} steps per window ({runs * (last[1] - last[0] + 1)}"
        f" in the last). Trend: least-squares slope over every step {after} (after the planner's image history has"
        " filled), in ms per 10 steps. Medians of the parts do not add up to the median of the whole.",
    ]


def payload_section(summaries: list[Summary]) -> list[str]:
    body = []
    for summary in summaries:
        reflection = summary.scenario.reflection
        cells = [
            ("planner request KiB", lambda s: s.planner_bytes / 1024),
            ("planner model_ms", lambda s: s.planner_model),
            ("stand-in handling, planner", lambda s: s.planner_handler),
        ]
        if reflection:
            cells += [
                ("memoryer requests KiB (step check + audit)", lambda s: s.memoryer_bytes / 1024),
                ("memoryer model_ms", lambda s: s.memoryer_model),
                ("stand-in handling, memoryer", lambda s: s.memoryer_handler),
            ]
        for name, metric in cells:
            values = summary.series(metric)
            body.append([summary.scenario.label, name, *(f"{v:.1f}" for v in values)])
    windows_ = summaries[0].windows
    return [
        "## Model calls with an instant model (medians per step)",
        "",
        *table(["scenario", "", *(f"steps {label(w)}" for w in windows_)], body),
        "",
        "The stand-in answers at once; its handling (parsing the JSON request with its base64 images, building the",
        "answer) runs in this process on uvicorn's thread while the caller waits. The rest of `model_ms` is the",
        "client's side: serialising the request body, the loopback HTTP exchange and reading the answer. A real",
        "endpoint pays that upload too. The planner's history keeps at most `max_images` (8) screenshots, so its",
        "request grows over the first 8 steps and then only by the earlier answers' text.",
    ]


def runs_section(runs: list[RunResult], scenarios: list[Scenario]) -> list[str]:
    body = []
    for run in sorted(runs, key=lambda r: (scenarios.index(r.scenario), r.index)):
        first = [s for s in run.steps if s.step <= WINDOW]
        last = [s for s in run.steps if s.step > run.steps[-1].step - WINDOW]
        final = run.final
        pauses = [(s.step, ms) for s in run.steps for ms in s.collections]
        slowest = max(pauses, key=lambda p: p[1], default=None)
        body.append(
            [
                run.scenario.label,
                str(run.index + 1),
                f"{run.setup_ms:.0f}",
                f"{median(run.steps, lambda s: s.full):.1f}",
                f"{run.steps[0].full:.1f}",
                f"{median(first, lambda s: s.full):.1f} / {median(last, lambda s: s.full):.1f}",
                f"{final.period - final.model:.1f}" if final else "-",
                f"{run.teardown_ms:.0f}",
                f"{run.run_json_bytes / 1024:.0f}",
                f"{run.traj_bytes / 1024:.0f}",
                str(run.off_track),
                str(run.loops),
                f"{len(pauses)}, {sum(ms for _, ms in pauses):.0f} ms"
                + (f" (max {slowest[1]:.0f} at step {slowest[0]})" if slowest else ""),
            ]
        )
    header = [
        "scenario",
        "run",
        "setup: spawn + initialize + start_task",
        "step overhead, median of the run",
        "step 1",
        "first / last 10 action steps",
        "last step (`done()`)",
        "teardown: end_task .. server exit",
        "run.json KiB at the end",
        "traj.jsonl KiB",
        "reflections not On-track",
        "loops flagged",
        "gen-2 GCs in this process during action steps",
    ]
    return ["## Runs (ms)", "", *table(header, body)]


@dataclass(frozen=True)
class SaveRow:
    steps: int
    size: int
    save: float  # `save_record` (what the loop calls after every step), median
    dump: float  # of which `RunRecord.model_dump_json`, median
    reencode: float  # of which `json.loads` + `json.dumps(indent=2)` of that JSON, median
    direct: float  # the same file from `model_dump_json(indent=2)`, written and renamed, median


def save_scaling(runs: list[RunResult], repeats: int = 7) -> list[SaveRow]:
    """`save_record` for records of growing length, made by repeating a measured run's action steps (in process)."""
    source = next((r for r in runs if r.scenario.reflection), runs[0]).record
    actions = source.steps[:-1]
    per_step = len(source.transitions) / len(source.steps)
    rows = []
    with tempfile.TemporaryDirectory(prefix="symphony-orchestrator-save-") as tmp:
        for length in SAVE_LENGTHS:
            copies = -(-length // len(actions))
            steps = [s.model_copy(update={"step": i + 1}) for i, s in enumerate((actions * copies)[:length])]
            transitions = (source.transitions * (copies + 1))[: round(per_step * length)]
            record = source.model_copy(update={"steps": steps, "transitions": transitions})
            samples: dict[str, list[float]] = {"save": [], "dump": [], "reencode": [], "direct": []}
            for _ in range(repeats):
                started = time.perf_counter()
                save_record(Path(tmp), record)
                samples["save"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                dumped = record.model_dump_json()
                samples["dump"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                json.dumps(json.loads(dumped), indent=2, ensure_ascii=False)
                samples["reencode"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                direct = Path(tmp) / "direct.json"
                direct.with_suffix(".tmp").write_text(record.model_dump_json(indent=2), encoding="utf-8")
                direct.with_suffix(".tmp").replace(direct)
                samples["direct"].append((time.perf_counter() - started) * 1000)
            size = (Path(tmp) / "run.json").stat().st_size
            medians = {key: statistics.median(values) for key, values in samples.items()}
            rows.append(SaveRow(length, size, **medians))
    return rows


def save_section(rows: list[SaveRow]) -> list[str]:
    body = [
        [
            str(row.steps),
            f"{row.size / 1024:.0f}",
            f"**{row.save:.1f}**",
            f"{row.save / row.steps:.3f}",
            f"{row.dump:.1f}",
            f"{row.reencode:.1f}",
            f"{row.direct:.1f}",
        ]
        for row in rows
    ]
    header = [
        "steps in the record",
        "run.json KiB",
        "`save_record`",
        "ms per step in the record",
        "of which `model_dump_json`",
        "of which `json.loads` + `json.dumps(indent=2)`",
        "for comparison: `model_dump_json(indent=2)`, write, rename",
    ]
    return [
        "## `run.json` write vs task length (in process, after the runs)",
        "",
        *table(header, body),
        "",
        "The loop rewrites the whole `run.json` after every step (`save_record`: `model_dump_json`, `json.loads`,",
        "`json.dumps(indent=2)`, write and rename), so its cost grows with the steps so far. Records of each length",
        "are made by repeating the action steps (and transitions) of a measured reflection-on run; `max_steps` allows",
        "up to 500. Medians of 7 writes each.",
    ]


def render_report(runs: list[RunResult], args: argparse.Namespace, command: str, facts: list[str], display: str) -> str:
    summaries = [Summary(s, [r for r in runs if r.scenario == s], windows(args.steps)) for s in args.scenarios]
    packages = ", ".join(f"{name} {version(name)}" for name in ("httpx", "uvicorn", "starlette", "pydantic"))
    lines = [
        "# Orchestrator overhead benchmark",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *facts,
        f"- Also: {packages}",
        f"- Display: own Xvfb {display} at {RESOLUTION}x24 with openbox and three text-filled xterms",
        f"- Command, run from {'the repository root' if Path.cwd() == REPO else Path.cwd()}: `{command}`",
        f"- Runs: `run_task` with the default connection (`symphony-mcp serve` spawned over stdio), "
        f"`max_steps` {args.steps}: {args.steps - 1} `move_pointer` steps to new spots of bare root window, then "
        f"`done()`; {args.runs} run(s) per scenario, scenarios interleaved and rotated per round, after one "
        f"{args.warmup_steps}-step warm-up run; server defaults otherwise (screenshots JPEG q80 1280x720, model "
        "images JPEG q90 at full size, planner history of 8 screenshots)",
        "- Stand-in models: `testkit/model_server.py` (uvicorn + Starlette, OpenAI chat-completions wire) on "
        "127.0.0.1 in this process, answering at once: planner in the required format, memoryer step check "
        "`success: true`, audit On-track, no milestone, no facts",
        "- Instrumented in this process only: `run_task`'s `save_record` and `ChatClient.complete` (the planner) "
        "are wrapped with timers, a `gc` callback times full collections; the spawned server is untouched",
        f"- Windows: action steps {', '.join(label(w) for w in windows(args.steps))}; step {args.steps} "
        "(`done()`, no action) is shown per run only. Times in ms",
        "",
        *targets_section(summaries),
        "",
        "## Per window: where a step's time goes",
        "",
        "observe, reflect, plan, execute and record are the loop's own `RunStep.timings` (record is part of",
        "execute, so the action row is execute - record); model time is taken out of reflect and plan. The action",
        "row is the whole `move_pointer` tool call over stdio: the move, the settle pause, the pointer and active",
        "window query, and the server's trajectory recording (capture of the screen after it, loop check).",
        "",
    ]
    for summary in summaries:
        lines += [*window_section(summary), ""]
    lines += [*payload_section(summaries), "", *runs_section(runs, args.scenarios), ""]
    lines += save_section(save_scaling(runs))
    return "\n".join(lines) + "\n"


def samples_json(run: RunResult) -> dict[str, Any]:
    derived = ("full", "memoryer_model", "reflect_work", "plan_work", "action", "other")
    steps = [*run.steps, *([run.final] if run.final else [])]
    return {
        "scenario": run.scenario.key,
        "run": run.index + 1,
        "steps": [dataclasses.asdict(s) | {name: getattr(s, name) for name in derived} for s in steps],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="markdown results file")
    parser.add_argument(
        "--steps",
        type=int,
        default=50,
        help="max_steps per task (the last one says done); past 61 the spots repeat and the server flags loops",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario, interleaved")
    parser.add_argument("--warmup-steps", type=int, default=5, help="steps of the unmeasured warm-up run (0: none)")
    parser.add_argument(
        "--scenarios",
        default=",".join(s.key for s in SCENARIOS),
        help=f"comma-separated subset of {', '.join(s.key for s in SCENARIOS)}",
    )
    parser.add_argument("--samples", type=Path, help="also write every step's samples as JSON here")
    args = parser.parse_args(argv)
    known = {s.key: s for s in SCENARIOS}
    keys = [key.strip() for key in args.scenarios.split(",") if key.strip()]
    if not keys or any(key not in known for key in keys):
        parser.error(f"--scenarios: choose from {', '.join(known)}")
    args.scenarios = [known[key] for key in keys]
    if args.steps < 2 * WINDOW + 1:
        parser.error(f"--steps must be at least {2 * WINDOW + 1} (two windows of {WINDOW} action steps)")
    if args.warmup_steps == 1:
        parser.error("--warmup-steps must be 0 or at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = invocation()
    facts = machine_facts()
    with benchmark_desktop() as display:
        log(f"benchmark display {display}")
        check_spots_are_background()
        runs = anyio.run(run_benchmark, args)
        report = render_report(runs, args, command, facts, display)
    if args.samples is not None:
        args.samples.write_text(json.dumps([samples_json(run) for run in runs], indent=1))
        log(f"wrote {args.samples}")
    publish_report(report, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
