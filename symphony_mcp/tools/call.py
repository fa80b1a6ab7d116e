"""What a step of the call pipeline works on (tools/pipeline.py): one tool call, and how a step passes it on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from symphony_mcp.policy.audit import Outcome
from symphony_mcp.policy.tools import ToolFacts, ToolPolicy


@dataclass(frozen=True)
class ToolCall:
    """One call on its way through the pipeline.

    `arguments` are the caller's as sent in the call stage, and the tool function's validated keyword arguments
    in the function stage. `facts` is None for a name no tool is registered under.
    """

    name: str
    arguments: dict[str, Any]
    facts: ToolFacts | None
    policy: ToolPolicy
    context: Context[Any, Any] | None = None


Proceed = Callable[[ToolCall], Awaitable[Any]]
Step = Callable[[ToolCall, Proceed], Awaitable[Any]]
"""A step does its part and awaits `proceed(call)` for the rest of the pipeline (or stops the call by raising)."""


class PolicyStopError(ToolError):
    """A call the policy stopped; `outcome` names how for the audit log."""

    def __init__(self, message: str, outcome: Outcome) -> None:
        super().__init__(message)
        self.outcome = outcome


# The call being handled: a resolver (the confirmation question) sees no tool arguments of its own.
_current: ContextVar[ToolCall | None] = ContextVar("symphony_tool_call", default=None)


def current_call() -> ToolCall | None:
    return _current.get()


async def run_steps(steps: Sequence[Step], call: ToolCall, innermost: Proceed) -> Any:
    """`call` through `steps`, outermost first, then `innermost`; the call is `current_call()` meanwhile."""

    async def from_step(index: int, passed: ToolCall) -> Any:
        if index == len(steps):
            return await innermost(passed)
        return await steps[index](passed, lambda onward: from_step(index + 1, onward))

    token = _current.set(call)
    try:
        return await from_step(0, call)
    finally:
        _current.reset(token)
