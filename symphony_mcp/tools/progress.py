"""Progress heartbeats for tool calls that run for seconds (wait, open_app, OCR, grounding, reflect).

Clients time calls out on their own clock (openai-agents: 5 s by default); those that reset it when
progress arrives (the TypeScript SDK's resetTimeoutOnProgress, for one) keep waiting if the server
reports progress. A call that runs longer than one beat reports the seconds elapsed, once a beat,
until it returns: the SDK sends nothing when the caller asked for no progress. A tool that has steps of
its own to tell (code_agent's turns) reports them with `report_step` on the same line: every value is
the seconds elapsed, strictly increasing across both, as MCP requires of one request's progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context

from symphony_mcp.tools.call import Proceed, ToolCall

log = logging.getLogger(__name__)
T = TypeVar("T")

BEAT_SECONDS = 1.0


@dataclass
class _ProgressLine:
    """One call's progress notifications: seconds elapsed, never repeating or going back."""

    context: Context[Any, Any]
    started: float
    last: float = 0.0

    async def send(self, message: str) -> None:
        value = max(round(time.monotonic() - self.started, 3), round(self.last + 0.001, 3))
        self.last = value
        await self.context.report_progress(value, None, message)


_line: ContextVar[_ProgressLine | None] = ContextVar("symphony_progress_line", default=None)


async def report_step(message: str) -> None:
    """Tell the caller of the running tool call what it is doing now (nothing outside a call)."""
    line = _line.get()
    if line is None:
        return
    try:
        await line.send(message)
    except Exception as exc:  # as for beats: a lost client must not fail the call
        log.debug("progress not sent: %s", exc)


async def heartbeat(call: ToolCall, proceed: Proceed) -> Any:
    """Step: a call that runs past a beat reports progress once a beat until it returns, so clients keep waiting."""
    if call.context is None:  # called from the server itself, not by a client
        return await proceed(call)
    context = call.context
    return await with_heartbeat(context, call.name, lambda: proceed(call))


async def with_heartbeat(
    context: Context[Any, Any], label: str, call: Callable[[], Awaitable[T]], beat: float = BEAT_SECONDS
) -> T:
    """Await `call()`, reporting progress every `beat` seconds while it runs."""
    line = _ProgressLine(context, time.monotonic())
    reset = _line.set(line)

    async def report() -> None:
        while True:
            await anyio.sleep(beat)
            elapsed = time.monotonic() - line.started
            try:
                await line.send(f"{label}: running for {elapsed:.0f} s")
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
            _line.reset(reset)
    if failure:
        raise failure[0]
    return outcome[0]
