"""The code_agent's core: the coder model, a run folder in the task's trajectory folder, the screen, and
the run recorded as one step of the session's task (so the reflection audits it, in code mode).

Runs of a session with a running task keep their transcript under `<task>/coder/run-N/`; without one, each
run gets a task id of its own (`coder-<time>-<hex>`), so every transcript is at
`trajectory://<task_id>/coder/run-N`. Blocks run in `<code work directory>/coder/<task_id>/run-N`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from symphony_mcp.code.agent import TRANSCRIPT_FILE, CoderLoop, CoderSetup, Progress
from symphony_mcp.code.result_schemas import CoderResult
from symphony_mcp.code.types import CodeExecutor
from symphony_mcp.config import CodeSettings
from symphony_mcp.desktop.recorder import ActionRecorder
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.errors import SymphonyError
from symphony_mcp.memory.manager import TaskManager
from symphony_mcp.models.registry import ModelRegistry

log = logging.getLogger(__name__)
CODER_FOLDER = "coder"


class CoderService:
    def __init__(
        self,
        screen: Screen,
        recorder: ActionRecorder,
        models: ModelRegistry,
        tasks: TaskManager,
        executor: CodeExecutor,
        settings: CodeSettings,
        work_root: Path,
        unavailable: str | None = None,
    ) -> None:
        """`unavailable`: why the Coder cannot run with this executor (a remote machine); `run` then refuses."""
        self.screen = screen
        self.unavailable = unavailable
        self.recorder = recorder
        self.models = models
        self.tasks = tasks
        self.executor = executor
        self.settings = settings
        self.work_root = work_root  # the executor's default work directory: each run works in a folder of it

    async def run(self, task: str, budget: int, progress: Progress) -> CoderResult:
        if self.unavailable is not None:
            raise SymphonyError(self.unavailable)
        model = self.models.client("coder")  # fails first, naming SYMPHONY_MODELS__CODER__BASE_URL / __MODEL
        languages = tuple(self.settings.languages)
        if not languages:
            raise SymphonyError("no language is enabled for code: set SYMPHONY_CODE__LANGUAGES (python, bash)")
        task_id, directory = self.tasks.new_run_folder(CODER_FOLDER)
        setup = CoderSetup(
            run_id=directory.name,
            directory=directory,
            workdir=self.work_root / CODER_FOLDER / task_id / directory.name,
            transcript_uri=f"trajectory://{task_id}/{CODER_FOLDER}/{directory.name}",
            languages=languages,
            writable=[path.resolve() for path in self.settings.writable_paths],  # as the executor sees them
            block_timeout_s=min(self.settings.agent_block_timeout_seconds, self.settings.max_timeout_seconds),
        )
        started = time.time()
        screen = await self.screen.screen_for_agent("code_agent")
        result = await CoderLoop(model, self.executor, setup, progress).run(task, budget, screen)
        ended = None if result.completion_reason == "DONE" else f"the coder ended with {result.completion_reason}"
        record = await self.recorder.record(
            "code_agent",
            {"task": task, "budget": budget},
            f"code_agent ({result.completion_reason}, {result.steps_used} steps): {result.summary}",
            started,
            error=ended,
        )
        return result.model_copy(update={"task_step": record.task_step})

    def transcript(self, task_id: str, run: str) -> Path:
        """A run's transcript file, for the resource."""
        return self.tasks.run_file(task_id, CODER_FOLDER, run, TRANSCRIPT_FILE)
