"""Action recording: each action becomes an `ActionRecord` in the session's log, handed to the action listeners."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from symphony_mcp.desktop.records import ActionLog, ActionRecord, Target
from symphony_mcp.desktop.thread import DesktopThread
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.imaging.geometry import Point

log = logging.getLogger(__name__)


class ActionRecorder:
    def __init__(self, thread: DesktopThread, action_log: ActionLog) -> None:
        self.thread = thread
        self.action_log = action_log
        self._listeners: list[Callable[[ActionRecord], Awaitable[None]]] = []

    def add_action_listener(self, listener: Callable[[ActionRecord], Awaitable[None]]) -> None:
        """Call `listener` with every action record, after the action (e.g. to record trajectories)."""
        self._listeners.append(listener)

    async def record(
        self,
        action: str,
        arguments: dict[str, Any],
        summary: str,
        started_at: float,
        *,
        error: str | None = None,
        targets: Sequence[Target] = (),
    ) -> ActionRecord:
        """Record an action that ended (with `error` when it failed) and the state after it: the desktop's own
        actions and those done off the screen (a Coder run, a search), so the session's trajectory gets each as
        a step. Delivery is shielded from cancellation: an action that happened is always recorded."""
        cursor, window = await self._post_state()
        points = [t.point for t in targets]
        record = ActionRecord(
            id=self.action_log.next_id(),
            action=action,
            arguments=arguments,
            points=points,
            screen_points=points,
            ok=error is None,
            error=error,
            started_at=started_at,
            duration_ms=round((time.time() - started_at) * 1000, 2),
            cursor_after=cursor,
            active_window_after=window,
            summary=summary,
            grounding=[g for t in targets for g in t.grounding],
        )
        with anyio.CancelScope(shield=True):
            await self._log_and_notify(record)
        return record

    async def _log_and_notify(self, record: ActionRecord) -> None:
        """Append the record to the session's action log and hand it to every action listener."""
        self.action_log.append(record)
        for listener in self._listeners:
            try:
                await listener(record)
            except Exception:  # recording must never fail the action itself
                log.exception("action listener failed for %s", record.summary)

    async def _post_state(self) -> tuple[Point | None, WindowInfo | None]:
        try:
            return await self.thread.run(lambda d: (d.cursor(), d.active_window()))
        except Exception:
            return None, None  # the display went away; the action's own outcome is what matters
