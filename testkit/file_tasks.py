"""A small real benchmark for the runner's tests and benchmark: save a given text in a file of the environment's
own folder, through a real Tk editor (tests/apps/tk_editor.py) opened on the environment's display, and the stand-in
planner that does it (open the editor, type, save, done). Its adapter spec is `ADAPTER`; the folder the files go in
is read from the environment variable FILES_VARIABLE, in whichever process loads the adapter (the runner, a Ray
actor)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer
from testkit.model_server import ModelRequest, Reply
from testkit.paths import APPS
from testkit.scripted_planner import MEMORYER, act, is_step_check, on_track, step_checked, step_of

ADAPTER = "testkit.file_tasks:FileTasks"
FILES_VARIABLE = "SYMPHONY_TEST_BENCH_FILES"
CRASH_VARIABLE = "SYMPHONY_TEST_BENCH_CRASH"
INSTRUCTION = re.compile(
    r"\[(?P<task>[\w-]+)\] Type '(?P<text>[^']*)' into a new editor on (?P<path>\S+) and save it\."
)
TASKS = ("t1", "t2", "t3", "t4", "t5", "t6")


class FileTasks:
    """A benchmark of one kind of task: save a given text in a file of the environment's own folder."""

    name = "files"
    title = "Files"

    def __init__(self) -> None:
        self.root = Path(os.environ[FILES_VARIABLE])

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        tasks = [
            BenchTask(self.name, "notes" if n % 2 else "memos", task_id, data={"text": f"note number {n}"})
            for n, task_id in enumerate(TASKS, 1)
        ]
        tasks.insert(2, BenchTask(self.name, "notes", "t-online", skip_reason="needs the network"))
        tasks.append(BenchTask(self.name, "memos", "t-broken", data={"text": "x", "broken": True}))
        if os.environ.get(CRASH_VARIABLE):  # a task whose reset ends the whole process (a Ray actor dying)
            tasks.append(BenchTask(self.name, "memos", "t-crash", data={"text": "x", "crash": True}))
        return [
            t
            for t in tasks
            if (not selection.task_ids or t.task_id in selection.task_ids)
            and (not selection.domains or t.domain in selection.domains)
        ]

    def path(self, environment: Environment, task: BenchTask) -> Path:
        return self.root / environment.name / f"{task.task_id}.txt"

    async def setup(self, environment: Environment) -> None:
        (self.root / environment.name).mkdir(parents=True, exist_ok=True)

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        if task.data.get("broken"):
            raise RuntimeError("the task's fixture file is missing")
        if task.data.get("crash"):
            os._exit(17)
        path = self.path(environment, task)
        path.unlink(missing_ok=True)
        return f"[{task.task_id}] Type '{task.data['text']}' into a new editor on {path} and save it."

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        return server

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        path = self.path(environment, task)
        saved = path.read_text(encoding="utf-8") if path.exists() else None
        return Score(value=float(saved == task.data["text"]), detail=f"{path.name} holds {saved!r}")

    async def teardown(self, environment: Environment) -> None:
        pass

    async def close(self) -> None:
        pass


def editor(path: str) -> str:
    return f"{sys.executable} {APPS / 'tk_editor.py'} {path}"


class Planner:
    """Per task: open the editor on the file, type the text, save, done. Tasks in `held` wait at step 1."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.asked: list[str] = []  # the task of each planner request, in order

    def __call__(self, request: ModelRequest) -> str | Reply:
        if request.body["model"] == MEMORYER:
            return step_checked() if is_step_check(request) else on_track()
        match = next(m for t in request.texts() if (m := INSTRUCTION.search(t)))
        self.asked.append(match["task"])
        step = step_of(request)
        answers = {
            1: act(f"open_app(target={editor(match['path'])!r}, wait_seconds=30)"),
            2: act(f"type(text={match['text']!r})"),
            3: act('hotkey(keys=["ctrl", "s"])'),
        }
        answer = answers.get(step, act("done()"))
        if match["task"] in self.held and step == 1:
            return Reply(text=answer, delay=120)  # in flight until the runner is killed
        return answer
