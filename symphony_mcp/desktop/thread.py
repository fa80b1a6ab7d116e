"""Run every desktop call on one dedicated thread.

mss instances and X connections are per thread and pyautogui is not thread-safe, while MCP
tool calls arrive concurrently; one worker thread serialises them and keeps the event loop free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from symphony_mcp.desktop.protocol import Desktop

T = TypeVar("T")


class DesktopThread:
    def __init__(self, factory: Callable[[], Desktop]) -> None:
        self._factory = factory
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="desktop")
        self._desktop: Desktop | None = None

    def _get(self) -> Desktop:
        # Created lazily on the worker thread, and again after a failure (the display may come back).
        if self._desktop is None:
            self._desktop = self._factory()
        return self._desktop

    async def run(self, fn: Callable[[Desktop], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(self._get()))

    def close(self) -> None:
        def _close() -> None:
            if self._desktop is not None:
                self._desktop.close()
                self._desktop = None

        self._executor.submit(_close).result()
        self._executor.shutdown(wait=True)
