"""Tasks per MCP session: start, end, list, and automatic recording of the server's own actions.

Each session has at most one running task (`server.session_scope` says what a session is); the
actions a session performs while its task runs become that task's steps. The session comes from a
context variable the server sets per request (`current_session`), so the desktop core stays
unaware of MCP.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from contextvars import ContextVar
from pathlib import Path

from symphony_mcp.config import MemorySettings
from symphony_mcp.desktop.recorder import ActionRecorder
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.limits import MAX_INSTRUCTION
from symphony_mcp.memory.layout import (
    TASK_FILE,
    TRAJECTORY_FILE,
    EndStatus,
    TaskInfo,
    check_task_id,
    new_task_id,
    step_screenshot_path,
)
from symphony_mcp.memory.owner import this_process
from symphony_mcp.memory.result_schemas import ReflectOutcome
from symphony_mcp.memory.task import Task
from symphony_mcp.memory.trajectory import read_trajectory, settle_after_crash, write_json_atomically
from symphony_mcp.models.registry import ModelRegistry

log = logging.getLogger(__name__)
DEFAULT_SESSION = "default"
current_session: ContextVar[str] = ContextVar("symphony_session", default=DEFAULT_SESSION)
RUN_PATTERN = r"run-[0-9]{1,9}"  # a tool agent's run folder inside a task: run-1, run-2, ...
_RUN = re.compile(RUN_PATTERN)


class TaskManager:
    def __init__(
        self, screen: Screen, recorder: ActionRecorder, models: ModelRegistry, settings: MemorySettings
    ) -> None:
        self.screen = screen
        self.models = models
        self.settings = settings
        self._running: dict[str, Task] = {}
        recorder.add_action_listener(self._record)
        self.list()  # ends the tasks earlier servers left running when they were killed

    @property
    def root(self) -> Path:
        return self.settings.trajectory_dir.expanduser()

    async def start(self, instruction: str, task_id: str | None = None) -> TaskInfo:
        session = current_session.get()
        if session in self._running:
            running = self._running[session].info.task_id
            raise InvalidInputError(f"task {running!r} is still running in this session; end_task it first")
        instruction = instruction.strip()
        if not instruction or len(instruction) > MAX_INSTRUCTION:
            raise InvalidInputError(f"instruction must be 1..{MAX_INSTRUCTION} characters of task description")
        task_id = new_task_id() if task_id is None else task_id
        check_task_id(task_id)
        directory = self.root / task_id
        if (directory / TRAJECTORY_FILE).exists() or (directory / TASK_FILE).exists():
            raise InvalidInputError(f"a trajectory for task {task_id!r} already exists in {directory}; give another id")
        first = await self.screen.capture()
        screen = await self.screen.screen_rect()
        info = TaskInfo(
            task_id=task_id,
            instruction=instruction,
            directory=str(directory),
            started_at=time.time(),
            owner=this_process(),
        )
        task = Task(info, self.settings, screen, first)
        self._running[session] = task
        return self._shown(task.info)

    def end(self, status: EndStatus, note: str | None = None) -> TaskInfo:
        task = self.task()
        del self._running[current_session.get()]
        return task.close(status, note)

    def running(self) -> Task | None:
        """The caller's running task, if any."""
        return self._running.get(current_session.get())

    def task(self) -> Task:
        """The caller's running task."""
        task = self._running.get(current_session.get())
        if task is None:
            raise InvalidInputError("no task is running in this session: call start_task first")
        return task

    def list(self) -> list[TaskInfo]:
        """Tasks on disk (running ones first as they are now), newest first; orphans are ended on the way."""
        running = {t.info.task_id: t for t in self._running.values()}
        found = [self._shown(t.info) for t in running.values()]
        for path in self.root.glob(f"*/{TASK_FILE}") if self.root.exists() else []:
            if path.parent.name in running:
                continue
            try:
                found.append(
                    _end_if_orphaned(TaskInfo.model_validate(json.loads(path.read_text(encoding="utf-8"))), path)
                )
            except (OSError, ValueError) as exc:
                log.warning("skipping unreadable task file %s: %s", path, exc)
        return sorted(found, key=lambda info: info.started_at, reverse=True)

    def directory(self, task_id: str) -> Path:
        """The directory of an existing task (any session's), for reading its trajectory."""
        check_task_id(task_id)
        directory = self.root / task_id
        if not (directory / TASK_FILE).exists():
            raise InvalidInputError(f"no task {task_id!r} in {self.root}; list_tasks shows the ids")
        return directory

    def new_run_folder(self, kind: str) -> tuple[str, Path]:
        """A fresh `<task>/<kind>/run-N` folder for a tool agent's run (the Coder's, the searcher's): in the
        session's running task, else in a task id of its own (`<kind>-<time>-<hex>`). Returns (task id, folder)."""
        running = self.running()
        if running is not None:
            task_id, base = running.info.task_id, Path(running.info.directory)
        else:
            task_id = f"{kind}-{new_task_id()}"
            base = self.root / task_id
        runs = base / kind
        runs.mkdir(parents=True, exist_ok=True)
        number = 1 + max((int(p.name[4:]) for p in runs.glob("run-*") if _RUN.fullmatch(p.name)), default=0)
        while True:
            directory = runs / f"run-{number}"
            try:
                directory.mkdir()
                return task_id, directory
            except FileExistsError:  # another call took it meanwhile
                number += 1

    def run_file(self, task_id: str, kind: str, run: str, name: str) -> Path:
        """A file of a tool agent's run (its transcript), for a resource; ids are checked before they become
        a path."""
        check_task_id(task_id)
        if not _RUN.fullmatch(run):
            raise InvalidInputError(f"run must look like run-1, got {clip(run)}")
        path = self.root / task_id / kind / run / name
        if not path.exists():
            raise InvalidInputError(f"no {kind} run {run!r} in task {task_id!r}; the tool's result names its resource")
        return path

    async def screenshot(self, task_id: str, step: int) -> Path:
        """A step's screenshot file. It is written after the step's line: while the task runs here,
        this waits for the writer; a step recorded just before a server died can lack it for good."""
        path = step_screenshot_path(self.directory(task_id), step)
        running = next((t for t in self._running.values() if t.info.task_id == task_id), None)
        if not path.exists() and running is not None:
            await asyncio.to_thread(running.writer.flush)
        if not path.exists():
            raise InvalidInputError(
                f"task {task_id!r} has no screenshot for step {step}: no such step, or the server stopped "
                "before writing it (a step's line is written first, its screenshot just after; such a step "
                "says screenshot_lost)"
            )
        return path

    async def reflect(self) -> ReflectOutcome:
        task = self.task()
        task.require_steps()
        return await task.reflect(self.models.client("memoryer"))

    def close(self, note: str = "the server stopped") -> None:
        """End every running task as abandoned (server shutdown); what was recorded stays on disk."""
        for session, task in list(self._running.items()):
            del self._running[session]
            task.close("abandoned", note)

    def _shown(self, info: TaskInfo) -> TaskInfo:
        mine = self._running.get(current_session.get())
        return info.model_copy(update={"active_here": mine is not None and mine.info.task_id == info.task_id})

    async def _record(self, record: ActionRecord) -> None:
        task = self._running.get(current_session.get())
        if task is None:
            return
        frame = await self.screen.capture()
        await task.record(record, frame)


def _end_if_orphaned(info: TaskInfo, path: Path) -> TaskInfo:
    """A task still "running" on disk whose server is gone (killed, crashed): end it as abandoned, saying so."""
    if info.status != "running" or info.owner is None or not info.owner.gone():
        return info
    lines = path.parent / TRAJECTORY_FILE
    ended = lines.stat().st_mtime if lines.exists() else info.started_at
    try:
        lost = settle_after_crash(path.parent)
    except (OSError, ValueError) as exc:  # an unreadable trajectory stays as it is; the task still ends
        log.warning("cannot settle the trajectory in %s: %s", path.parent, exc)
        lost = []
    owner = info.owner
    info = info.model_copy(
        update={
            "status": "abandoned",
            "ended_at": ended,
            "steps": _steps_on_disk(path.parent, info.steps),
            "note": f"the server recording it (pid {owner.pid} on {owner.host}) stopped without ending it: "
            "it was killed or crashed; its steps up to then are kept"
            + (f", without the screenshots of steps {', '.join(map(str, lost))} (lost)" if lost else ""),
        }
    )
    write_json_atomically(path, info.model_dump(exclude={"active_here"}))
    log.info("task %s: its server (pid %d) is gone; marked abandoned", info.task_id, owner.pid)
    return info


def _steps_on_disk(directory: Path, known: int) -> int:
    try:
        return len(read_trajectory(directory))
    except (OSError, ValueError) as exc:
        log.warning("cannot count the steps in %s: %s", directory, exc)
        return known
