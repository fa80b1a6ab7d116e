"""A static HTML report of a results directory: `index.html` plus one page per task, viewable offline.

The report reads what runs left behind (`run.json`, `result.txt`, and the server's `traj.jsonl` with
its `step_N.png`) and never changes it. Screenshots are linked by relative paths, not copied, so the
report directory must stay next to the task directories (the default `results_dir/report/` does).
All run text (instructions, model answers, tool outputs) is untrusted: the templates autoescape it,
and the pages carry no script at all.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from PIL import Image
from pydantic import ValidationError

from symphony_mcp.memory.judgements import Reflection, StepVerdict
from symphony_mcp.memory.layout import TASK_FILE, TRAJECTORY_FILE, TaskInfo, step_screenshot
from symphony_mcp.memory.trajectory import TrajectoryStep, read_trajectory
from symphony_mcp.models.usage import RoleUsage
from symphony_mcp.orchestrator.records import RESULT_FILE, RUN_FILE, RunRecord, RunStep, StepTimings, Transition

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
REPORT_DIR = "report"
INDEX_FILE = "index.html"
MAX_TOOL_RESULT_CHARS = 20_000
OUTCOMES = ("success", "unverified", "fail", "error", "unfinished")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
# An earlier attempt moved aside by symphony_mcp.orchestrator.task_folders.set_aside: listed, never counted.
_ATTEMPT = re.compile(r"^(?P<task>.+)\.attempt-\d{8}-\d{6}(-\d+)?$")


@dataclass
class Marker:
    """A screen point acted on, placed over the screenshot in % of the screen size."""

    x: int
    y: int
    left: float
    top: float
    label: str


@dataclass
class Shot:
    """A screenshot file of the task, as the report links it."""

    url: str
    name: str
    size: tuple[int, int] | None = None


@dataclass
class StepView:
    """One block of a task's timeline: a run step joined with its trajectory step, or a bare trajectory step."""

    number: int
    name: str
    trajectory_step: int | None = None
    before: Shot | None = None
    before_is_latest: bool = False  # no trajectory step of its own: the latest screen recorded before it
    after: Shot | None = None
    marks: Shot | None = None  # the screen with numbered elements the planner saw (dual grounding)
    elements: str | None = None  # the element list it was given
    markers: list[Marker] = field(default_factory=list)
    summary: str | None = None
    action_error: str | None = None
    code: str | None = None
    arguments: str | None = None
    plan: str | None = None
    model_output: str | None = None
    rejected_outputs: list[str] = field(default_factory=list)
    reflection: Reflection | None = None
    verdict: StepVerdict | None = None
    tool_result: str | None = None
    tool_error: str | None = None
    verification: str | None = None
    timings: list[tuple[str, str]] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    milestone: bool = False
    loop: bool = False


@dataclass
class TaskView:
    name: str
    page: str
    task_id: str
    instruction: str
    outcome: str
    message: str | None = None
    server_status: str | None = None
    steps_used: int = 0
    max_steps: int | None = None
    usage: list[tuple[str, RoleUsage]] = field(default_factory=list)
    started: str | None = None
    duration: str | None = None
    transitions: list[Transition] = field(default_factory=list)
    steps: list[StepView] = field(default_factory=list)
    final_screen: Shot | None = None
    problems: list[str] = field(default_factory=list)
    attempt_of: str | None = None  # set-aside earlier attempt of this task directory
    claimed: str | None = None  # the run's own outcome, when a Verdict is shown instead

    def judged(self, verdict: Verdict) -> None:
        self.claimed, self.outcome, self.message = self.outcome, verdict.outcome, verdict.message

    @property
    def href(self) -> str:
        return quote(self.page)


@dataclass(frozen=True)
class Verdict:
    """Someone else's judgement of a task that the report shows instead of the run's own outcome (a benchmark's
    score): `outcome` one of OUTCOMES or "partial", `message` why."""

    outcome: str
    message: str


@dataclass
class Summary:
    total: int
    counts: dict[str, int]
    finished: int
    success_rate: float | None  # of finished tasks
    overall_rate: float | None  # of all tasks


@dataclass(frozen=True)
class WrittenReport:
    index: Path
    pages: dict[str, Path]  # task directory name -> its page


def write_report(results_dir: Path, output: Path | None = None) -> Path:
    """Write `index.html` and one `<task>.html` per task directory into `output`; return the index path."""
    return write_report_pages(results_dir, output).index


def write_report_pages(
    results_dir: Path, output: Path | None = None, verdicts: Mapping[str, Verdict] | None = None
) -> WrittenReport:
    """`write_report`, also saying which page shows which task directory (pages that link to them); `verdicts`
    (by task directory name) replace the runs' own outcomes where a judge such as a benchmark has the last word."""
    results_dir = results_dir.absolute()
    if not results_dir.is_dir():
        raise FileNotFoundError(f"no results directory {results_dir}")
    if output is None:
        output = results_dir / REPORT_DIR
        if (output / RUN_FILE).exists() or (output / TRAJECTORY_FILE).exists():  # a task is named "report"
            output = results_dir / f"_{REPORT_DIR}"
    output = output.absolute()
    output.mkdir(parents=True, exist_ok=True)
    env = template_environment()
    tasks = _collect(results_dir, output)
    for task in tasks:
        if task.attempt_of is None and (verdict := (verdicts or {}).get(task.name)) is not None:
            task.judged(verdict)
    generated = now_text()
    task_page = env.get_template("task.html")
    for task in tasks:
        html = task_page.render(task=task, generated=generated, index=INDEX_FILE)
        (output / task.page).write_text(html, encoding="utf-8")
    index = output / INDEX_FILE
    counted = [t for t in tasks if t.attempt_of is None]
    html = env.get_template("index.html").render(
        tasks=counted,
        attempts=[t for t in tasks if t.attempt_of is not None],
        summary=_summarise(counted),
        results_dir=str(results_dir),
        generated=generated,
    )
    index.write_text(html, encoding="utf-8")
    return WrittenReport(index, {task.name: output / task.page for task in tasks})


def now_text() -> str:
    """When a page was generated, as its footer says."""
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def report_command(results_dir: Path) -> int:
    """`symphony-mcp report DIR`: write the report, print the index path; 0 on success, 2 on a bad DIR."""
    try:
        index = write_report(results_dir)
    except FileNotFoundError as exc:
        print(f"symphony-mcp report: {exc}", file=sys.stderr)
        return 2
    print(index)
    return 0


# --- reading a task directory -------------------------------------------------------------------


def _collect(results_dir: Path, output: Path) -> list[TaskView]:
    tasks: list[TaskView] = []
    pages = {INDEX_FILE}
    for directory in sorted(results_dir.iterdir(), key=lambda p: p.name):
        if not directory.is_dir() or directory.absolute() == output:
            continue
        if not (directory / RUN_FILE).exists() and not (directory / TRAJECTORY_FILE).exists():
            continue
        page = _page_name(directory.name, pages)
        pages.add(page)
        tasks.append(_task(directory, page, output))
    return tasks


def _page_name(name: str, taken: set[str]) -> str:
    base = _UNSAFE_NAME.sub("_", name) or "task"
    page, n = f"{base}.html", 1
    while page.lower() in {p.lower() for p in taken}:
        n += 1
        page = f"{base}-{n}.html"
    return page


def _task(directory: Path, page: str, output: Path) -> TaskView:
    problems: list[str] = []
    run: RunRecord | None = None
    if (directory / RUN_FILE).exists():
        try:
            run = RunRecord.model_validate_json((directory / RUN_FILE).read_bytes())
        except (OSError, ValidationError) as exc:
            problems.append(f"{RUN_FILE} is unreadable: {_first_line(exc)}")
    try:
        trajectory = {step.step_num: step for step in read_trajectory(directory)}
    except (OSError, ValidationError) as exc:
        problems.append(f"{TRAJECTORY_FILE} is unreadable: {_first_line(exc)}")
        trajectory = {}
    server = _server_task(directory)
    result = _result(directory)
    shots = _Shots(directory, output, trajectory)

    if run is None:
        view = TaskView(
            name=directory.name,
            page=page,
            task_id=server.task_id if server else directory.name,
            instruction=server.instruction if server else "",
            outcome="unfinished",
            server_status=server.status if server else None,
            steps_used=len(trajectory),
            started=_when(server.started_at) if server else None,
            duration=_duration(server.started_at, server.ended_at) if server else None,
            steps=[_trajectory_step_view(step, shots) for step in trajectory.values()],
            problems=problems,
        )
    else:
        outcome = run.outcome or ({"1": "success", "0": "fail"}.get(result or "", "unfinished"))
        view = TaskView(
            name=directory.name,
            page=page,
            task_id=run.task_id,
            instruction=run.instruction,
            outcome=outcome,
            message=run.message,
            server_status=server.status if server else None,
            steps_used=len(run.steps),
            max_steps=run.max_steps,
            usage=sorted(run.usage.items()),
            started=_when(run.started_at),
            duration=_duration(run.started_at, run.ended_at),
            transitions=run.transitions,
            steps=_run_step_views(run, trajectory, shots),
            problems=problems,
        )
    view.final_screen = shots.get(max(trajectory, default=0))
    if attempt := _ATTEMPT.match(directory.name):
        view.attempt_of = attempt["task"]
    return view


def _server_task(directory: Path) -> TaskInfo | None:
    """The server's task record, if it is there and readable (a report shows what it can)."""
    try:
        return TaskInfo.model_validate_json((directory / TASK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _result(directory: Path) -> str | None:
    """'1' or '0' from result.txt (1.0 / 0.0), None when absent or unreadable."""
    try:
        value = float((directory / RESULT_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return "1" if value >= 1.0 else "0"


class _Shots:
    """The task's screenshot files, as relative URLs from the report directory (None when missing)."""

    def __init__(self, directory: Path, output: Path, trajectory: dict[int, TrajectoryStep]) -> None:
        self.directory = directory
        self.output = output
        self.trajectory = trajectory
        self._cache: dict[str, Shot | None] = {}

    def get(self, step: int) -> Shot | None:
        """The screen after trajectory step `step` (0 = before the first action)."""
        recorded = self.trajectory.get(step)
        name = recorded.screenshot_file if recorded and recorded.screenshot_file else step_screenshot(step)
        return self.file(name)

    def file(self, name: str) -> Shot | None:
        """A picture of the task folder by its name there (None when missing)."""
        if name not in self._cache:
            path = self.directory / name
            self._cache[name] = (
                Shot(_relative_url(path, self.output), name, _image_size(path)) if path.is_file() else None
            )
        return self._cache[name]


def _relative_url(target: Path, start: Path) -> str:
    try:
        return quote(Path(os.path.relpath(target, start)).as_posix())
    except ValueError:  # another drive (Windows): no relative path exists
        return target.absolute().as_uri()


def _image_size(path: Path) -> tuple[int, int] | None:
    try:
        with Image.open(path) as image:  # reads the header only
            return image.size
    except (OSError, ValueError):
        return None


# --- building the timeline ----------------------------------------------------------------------


def _run_step_views(run: RunRecord, trajectory: dict[int, TrajectoryStep], shots: _Shots) -> list[StepView]:
    views = []
    latest = 0  # the newest trajectory step so far: the screen a step without its own action looked at
    for step in run.steps:
        recorded = trajectory.get(step.trajectory_step) if step.trajectory_step is not None else None
        view = _run_step_view(step, recorded, run.screen_size, shots, latest)
        view.transitions = [t for t in run.transitions if t.step == step.step]
        views.append(view)
        if step.trajectory_step is not None:
            latest = max(latest, step.trajectory_step)
    return views


def _run_step_view(
    step: RunStep,
    recorded: TrajectoryStep | None,
    screen_size: tuple[int, int] | None,
    shots: _Shots,
    latest: int,
) -> StepView:
    k = step.trajectory_step
    view = StepView(
        number=step.step,
        name=step.action.name if step.action else (recorded.action if recorded else "no action"),
        trajectory_step=k,
        before=shots.get(k - 1) if k is not None else shots.get(latest),
        before_is_latest=k is None,
        after=shots.get(k) if k is not None else None,
        marks=shots.file(step.marks_file) if step.marks_file else None,
        elements=step.elements,
        code=step.action.code if step.action else None,
        arguments=_json(step.action.arguments) if step.action and step.action.arguments else None,
        plan=step.plan,
        model_output=step.model_output or None,
        rejected_outputs=step.rejected_outputs,
        reflection=step.reflection,
        tool_result=_tool_result(step.tool_result),
        tool_error=step.tool_error,
        verification=step.verification,
        timings=_timings(step.timings),
    )
    points = list(step.screen_points)
    if recorded is not None:
        view.summary = recorded.record.summary
        view.action_error = recorded.record.error
        view.verdict = recorded.verdict
        view.milestone = recorded.milestone
        view.loop = recorded.loop
        if not points:
            points = [(p.x, p.y) for p in recorded.record.screen_points]
    if step.reflection is not None:
        view.milestone = view.milestone or step.reflection.is_milestone
    view.markers = _markers(points, screen_size or (view.before.size if view.before else None))
    return view


def _trajectory_step_view(step: TrajectoryStep, shots: _Shots) -> StepView:
    """A step of a task without run.json: only what the server recorded."""
    record = step.record
    before = shots.get(step.step_num - 1)
    return StepView(
        number=step.step_num,
        name=step.action,
        trajectory_step=step.step_num,
        before=before,
        after=shots.get(step.step_num),
        markers=_markers([(p.x, p.y) for p in record.screen_points], before.size if before else None),
        summary=step.summary,
        action_error=record.error,
        arguments=_json(record.arguments) if record.arguments else None,
        plan=step.plan,
        model_output=step.thought,
        reflection=step.reflection,
        verdict=step.verdict,
        tool_result=step.tool_output,
        timings=[("action", _ms(record.duration_ms)), ("record", _ms(step.record_ms))],
        milestone=step.milestone,
        loop=step.loop,
    )


def _markers(points: list[tuple[int, int]], size: tuple[int, int] | None) -> list[Marker]:
    if not points or size is None or size[0] <= 0 or size[1] <= 0:
        return []
    width, height = size
    markers = []
    for n, (x, y) in enumerate(points, 1):
        left = min(max(x / width * 100, 0.0), 100.0)
        top = min(max(y / height * 100, 0.0), 100.0)
        label = str(n) if len(points) > 1 else ""
        markers.append(Marker(x=x, y=y, left=round(left, 3), top=round(top, 3), label=label))
    return markers


def _timings(timings: StepTimings) -> list[tuple[str, str]]:
    return [
        (name.removesuffix("_ms"), _ms(value))
        for name, value in timings.model_dump().items()
        if isinstance(value, int | float) and value
    ]


def _tool_result(result: dict[str, Any] | None) -> str | None:
    if result is None:
        return None
    text = _json(result)
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + f"\n… ({len(text) - MAX_TOOL_RESULT_CHARS} more characters)"
    return text


# --- formatting ---------------------------------------------------------------------------------


def _summarise(tasks: list[TaskView]) -> Summary:
    shown = [*OUTCOMES, *sorted({t.outcome for t in tasks} - set(OUTCOMES))]  # a judge's own words too (partial)
    counts = {outcome: sum(t.outcome == outcome for t in tasks) for outcome in shown}
    finished = len(tasks) - counts["unfinished"]  # an unverified done is finished, never a success
    return Summary(
        total=len(tasks),
        counts=counts,
        finished=finished,
        success_rate=counts["success"] / finished if finished else None,
        overall_rate=counts["success"] / len(tasks) if tasks else None,
    )


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _when(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def _duration(started: float | None, ended: float | None) -> str | None:
    if started is None or ended is None:
        return None
    seconds = max(ended - started, 0.0)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _thousands(value: int) -> str:
    return f"{value:,}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def template_environment(*extra: Path) -> Environment:
    """The report's templates and filters; `extra` template folders (searched first) may extend base.html."""
    env = Environment(
        loader=FileSystemLoader([*extra, TEMPLATES]),
        autoescape=True,  # every template is HTML, and all run text is untrusted
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["thousands"] = _thousands
    env.filters["ms"] = _ms
    env.filters["percent"] = _percent
    return env
