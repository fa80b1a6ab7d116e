"""Progress heartbeats for tool calls that run for seconds (wait, open_app, OCR, grounding, reflect).

Clients time calls out on their own clock (openai-agents: 5 s by default); those that reset it when
progress arrives (the TypeScript SDK's resetTimeoutOnProgress, for one) keep waiting if the server
reports progress. A call that runs longer than one beat reports the seconds elapsed, once a beat,
until it returns: the SDK sends nothing when the caller asked for no progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context

log = logging.getLogger(__name__)
T = TypeVar("T")

BEAT_SECONDS = 1.0


async def with_heartbeat(
    context: Context[Any, Any], label: str, call: Callable[[], Awaitable[T]], beat: float = BEAT_SECONDS
) -> T:
    """Await `call()`, reporting progress every `beat` seconds while it runs."""
    started = time.monotonic()

    async def report() -> None:
        while True:
            await anyio.sleep(beat)
            elapsed = time.monotonic() - started
            try:
                await context.report_progress(round(elapsed, 1), None, f"{label}: running for {elapsed:.0f} s")
            except Exception as exc:  # a lost client must not fail the call; its answer will not arrive either
                log.debug("progress for %s not sent: %s", label, exc)
                return

    # The call's own exception is raised after the task group, which would wrap it in an ExceptionGroup.
    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as beats:
        beats.start_soon(report)
        try:
            outcome.append(await call())
        except Exception as exc:
            failure.append(exc)
        finally:
            beats.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome[0]
