"""MiniWoB++ as a benchmark adapter: a kiosk Chromium per environment, seeded episodes, the page's own reward."""

from __future__ import annotations

import asyncio
from pathlib import Path

from playwright.async_api import Playwright, async_playwright

from symphony_mcp.bench.miniwob.tasks import BENCHMARK, html_directory, select
from symphony_mcp.bench.miniwob.window import EpisodeResult, TaskWindow, TaskWindowError, fitted_zoom, screen_size
from symphony_mcp.bench.types import BenchTask, Environment, Score, TaskFilter
from symphony_mcp.config import SearchSettings
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.orchestrator.api import TaskOutcome
from symphony_mcp.orchestrator.connection import SpawnServer
from symphony_mcp.search.chromium import chromium_executable

# Device scale factor of the task window. The task area is 160x210 CSS px with 10 px text; the agent's screenshot of
# a 1920x1080 screen is scaled to 1280x720 (2/3). Measured over the default subset x 3 seeds, the share of the
# utterance's words the server's OCR reads exactly from that screenshot: 17% at 1, 96% at 2, 92% at 3 (words run
# together), 100% at 4 (benchmarks/results/miniwob_adapter.md). At 4 the text is 27 px high in the screenshot and the
# page (task plus MiniWoB's reward column, 325x210 CSS px) still fits the screen (1300x840).
DEFAULT_ZOOM = 4.0
PROFILE_DIR = "miniwob-chromium"


class MiniWobAdapter:
    """MiniWoB++'s HTML tasks in a real Chromium window on each environment's display.

    `seeds`: the episodes per task listed by default (seed 0..seeds-1; any seed can be asked for by id).
    `zoom`: Chromium's device scale factor, so the tiny task area is legible in screenshots (lowered on a screen
    too small to show the whole page at it: at most 3.8 on 1280x800).
    `browser`: the Chromium executable (default: as for tutorial search, the OS package's real binary).
    """

    name = BENCHMARK
    title = "MiniWoB++"

    def __init__(self, *, seeds: int = 1, zoom: float = DEFAULT_ZOOM, browser: Path | None = None) -> None:
        if seeds < 1:
            raise InvalidInputError(f"seeds must be at least 1 (episodes per task), not {seeds}")
        if not 0.5 <= zoom <= 5:
            raise InvalidInputError(f"zoom must be between 0.5 and 5 (Chromium's device scale factor), not {zoom}")
        self.seeds = tuple(range(seeds))
        self.zoom = zoom
        self.browser = browser
        self._playwright: Playwright | None = None
        self._windows: dict[str, TaskWindow] = {}
        self._starting = asyncio.Lock()

    def list_tasks(self, selection: TaskFilter) -> list[BenchTask]:
        return select(html_directory(), selection, self.seeds)

    def task_url(self, task: BenchTask) -> str:
        """The task page as a file:// URL, as MiniWoB's own environment opens it by default: none of the tasks
        fetches anything (no XHR, no storage), so no HTTP server is needed, nor a port to bind per environment."""
        return (html_directory() / f"{task.data['task']}.html").as_uri()

    async def setup(self, environment: Environment) -> None:
        html_directory()  # fail before starting anything when the tasks are not installed
        await self._window(environment)

    async def _window(self, environment: Environment) -> TaskWindow:
        """The environment's window, (re)started when it is not running (e.g. the agent closed it)."""
        window = self._windows.get(environment.name)
        if window is not None and window.alive:
            return window
        if window is not None:
            await window.close()
        async with self._starting:  # environments set up at once must share one Playwright driver
            if self._playwright is None:
                self._playwright = await async_playwright().start()
        executable = chromium_executable(SearchSettings(browser=self.browser))
        zoom = fitted_zoom(self.zoom, screen_size(environment.display))
        window = TaskWindow(executable, environment.display, environment.workdir / PROFILE_DIR, zoom)
        await window.start(self._playwright)
        self._windows[environment.name] = window
        return window

    async def reset(self, environment: Environment, task: BenchTask) -> str:
        window = await self._window(environment)
        return await window.open_episode(self.task_url(task), int(task.data["seed"]))

    def server(self, environment: Environment, server: SpawnServer) -> SpawnServer:
        return server  # on the environment's display, as the invoking user

    async def evaluate(self, environment: Environment, task: BenchTask, outcome: TaskOutcome) -> Score:
        window = self._windows.get(environment.name)
        if window is None:
            raise TaskWindowError(f"no task window on {environment.name}: call setup and reset first")
        result = await window.read_episode(self.task_url(task), int(task.data["seed"]))
        return score(result)

    async def teardown(self, environment: Environment) -> None:
        window = self._windows.pop(environment.name, None)
        if window is not None:
            await window.close()

    async def close(self) -> None:
        for name in list(self._windows):
            await self._windows.pop(name).close()
        if self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            await playwright.stop()


def score(result: EpisodeResult | str) -> Score:
    """MiniWoB++'s verdict: success when the episode ended with a positive raw reward (the page's own)."""
    if isinstance(result, str):
        return Score(value=0.0, detail=result)
    if not result.done:
        return Score(value=0.0, detail="episode not finished (no reward from the page)")
    reason = f", reason {result.reason!r}" if result.reason else ""
    return Score(value=1.0 if result.raw_reward > 0 else 0.0, detail=f"raw reward {result.raw_reward:g}{reason}")
