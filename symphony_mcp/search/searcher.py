"""The search tools' core: the searcher model, the backend, a fresh isolated browser per search, the run's
folder in the task's trajectory folder, and the search recorded as one step of the session's running task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from symphony_mcp.config import SearchSettings
from symphony_mcp.desktop.recorder import ActionRecorder
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.memory.manager import TaskManager
from symphony_mcp.models.registry import ModelRegistry
from symphony_mcp.search.agent import TRANSCRIPT_FILE, Progress, SearchLoop, SearchSetup
from symphony_mcp.search.backends import open_backend
from symphony_mcp.search.browser import ChromiumBrowser
from symphony_mcp.search.result_schemas import TutorialResult
from symphony_mcp.search.types import DocHit, SearchBackend
from symphony_mcp.search.urls import UrlPolicy

log = logging.getLogger(__name__)
SEARCH_FOLDER = "search"


class TutorialSearcher:
    def __init__(
        self,
        screen: Screen,
        recorder: ActionRecorder,
        models: ModelRegistry,
        tasks: TaskManager,
        settings: SearchSettings,
    ) -> None:
        self.screen = screen
        self.recorder = recorder
        self.models = models
        self.tasks = tasks
        self.settings = settings
        self._backend: SearchBackend | None = None

    @property
    def backend(self) -> SearchBackend:
        if self._backend is None:  # built on first use: a server that never searches starts nothing
            self._backend = open_backend(self.settings)
        return self._backend

    async def search_docs(self, query: str, limit: int) -> list[DocHit]:
        return await self.backend.search(_query(query), limit)

    async def search(self, query: str, budget: int | None, progress: Progress) -> TutorialResult:
        model = self.models.client("searcher")  # fails first, naming SYMPHONY_MODELS__SEARCHER__BASE_URL / __MODEL
        query = _query(query)
        budget = budget or self.settings.budget
        start_url = await self.backend.results_page(query)
        policy = UrlPolicy.build(self.settings, self.backend.trusted_hosts())
        task_id, directory = self.tasks.new_run_folder(SEARCH_FOLDER)
        setup = SearchSetup(
            run_id=directory.name,
            directory=directory,
            transcript_uri=f"trajectory://{task_id}/{SEARCH_FOLDER}/{directory.name}",
            engine=self.backend.name,
            deadline_s=self.settings.search_timeout_seconds,
            max_images=self.settings.max_images,
            image_max_side=self.settings.image_max_side,
        )
        started = time.time()
        screen = await self.screen.screen_for_agent("search_tutorial")
        browser = await ChromiumBrowser.start(self.settings, policy)
        try:
            result = await SearchLoop(model, browser, setup, progress).run(query, start_url, budget, screen)
        finally:
            await asyncio.shield(browser.close())
        ended = None if result.completion_reason == "DONE" else f"the search ended with {result.completion_reason}"
        record = await self.recorder.record(
            "search_tutorial",
            {"query": query, "budget": budget},
            f"search_tutorial ({result.completion_reason}, {result.steps_used} steps): {clip(query, 200)}",
            started,
            error=ended,
        )
        return result.model_copy(update={"task_step": record.task_step})

    def transcript(self, task_id: str, run: str) -> Path:
        """A run's transcript file, for the resource."""
        return self.tasks.run_file(task_id, SEARCH_FOLDER, run, TRANSCRIPT_FILE)

    async def aclose(self) -> None:
        if self._backend is not None:
            await self._backend.aclose()


def _query(query: str) -> str:
    query = " ".join(query.split())
    if not query:
        raise InvalidInputError("the query is empty: say what to look up, e.g. 'freeze the first row in Calc'")
    return query
