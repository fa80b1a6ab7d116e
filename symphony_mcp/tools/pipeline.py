"""The call pipeline: the cross-cutting work every tool call passes, declared once, in order, and the server that
applies it to every tool it registers, present and future.

`GuardedServer` is the MCP server the tools register on. Its `add_tool` (the SDK's own route, taken by
`register_tools` and by `@server.tool()` alike) puts the tool behind the pipeline, so no tool has any of this
in its own code and a new tool cannot miss a step. A call passes, outermost first:

    request stage   server middleware: sees every tools/call, also those the SDK refuses before a tool runs
      audit             one audit-log line per request, whatever its outcome (tools/auditing.py)
    call stage      GuardedServer.call_tool, before the SDK validates the arguments
      known_tool        a name no tool has is refused, without repeating it whole
      policy_outcome    how the policy stopped the call, for the audit line (tools/auditing.py)
      offered           a tool the policy turned off is refused, naming the setting (policy/tools.py)
      heartbeat         progress once a second while the call runs (tools/progress.py)
      compact_result    the text copy of a structured result as compact JSON (tools/common.py)
    the SDK         validates the arguments (numbers refuse booleans and booleans numbers: arguments.py) and
                    fills the confirmation parameter by asking the user (tools/confirmation.py)
    function stage  around the tool's function, with its validated arguments
      confirmed         nothing runs unless the user allowed this call, when the policy asks (tools/confirmation.py)
      time_bound        the call is stopped at its time bound; cancellation lands only between desktop actions
                        (the controller finishes and records an action under way, shielded: nothing stays pressed)
      caller_errors     a failure becomes a clipped tool error the caller reads; the server keeps serving
    the tool's own function (a plain one runs on a worker thread)

A tool that is off is also missing from tools/list.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.context import ServerMiddleware
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool

from symphony_mcp.config import PolicySettings
from symphony_mcp.errors import clip
from symphony_mcp.policy.audit import AuditLog
from symphony_mcp.policy.tools import ToolFacts, ToolPolicy
from symphony_mcp.tools.arguments import booleans_apart
from symphony_mcp.tools.auditing import audit_middleware, policy_outcome
from symphony_mcp.tools.call import PolicyStopError, Proceed, Step, ToolCall, run_steps
from symphony_mcp.tools.common import caller_errors, compact_result
from symphony_mcp.tools.confirmation import confirmation_parameter, confirmed
from symphony_mcp.tools.progress import heartbeat


async def known_tool(call: ToolCall, proceed: Proceed) -> Any:
    """Step: a name no tool has is refused here; the SDK's own error would repeat it whole."""
    if call.facts is None:
        raise ToolError(f"Unknown tool: {clip(call.name)}; tools/list shows the tools on offer")
    return await proceed(call)


async def offered(call: ToolCall, proceed: Proceed) -> Any:
    """Step: a tool the user's policy turned off is refused, with the setting that turns it off."""
    if (refusal := call.policy.refusal(call.name)) is not None:
        raise PolicyStopError(refusal, "refused")
    return await proceed(call)


async def time_bound(call: ToolCall, proceed: Proceed) -> Any:
    """Step: the call is stopped when it runs past its time bound (policy.timeouts, policy.timeout_seconds)."""
    seconds, setting = call.policy.time_bound(call.name)
    with anyio.move_on_after(seconds):
        return await proceed(call)
    raise PolicyStopError(
        f"{call.name!r} did not finish within its time bound of {seconds:g} s ({setting}) and was "
        "stopped; an action under way on the desktop was finished and recorded first (see "
        "action_history), so no key or button is left pressed. The server keeps serving",
        "timeout",
    )


# The pipeline, outermost first (the request stage, the audit, is server middleware: GuardedServer.__init__).
CALL_STAGE: tuple[Step, ...] = (known_tool, policy_outcome, offered, heartbeat, compact_result)
FUNCTION_STAGE: tuple[Step, ...] = (confirmed, time_bound, caller_errors)


class GuardedServer(MCPServer):
    """The MCP server whose every tool is behind the call pipeline and the user's policy."""

    def __init__(
        self, policy: PolicySettings, *args: Any, middleware: Sequence[ServerMiddleware[Any]] = (), **kwargs: Any
    ) -> None:
        self.policy = ToolPolicy(policy)
        self.audit = AuditLog(policy.audit_file, policy.audit_max_bytes, policy.audit_files) if policy.audit else None
        audited = [audit_middleware(self.audit)] if self.audit is not None else []
        # Innermost, so the entry has the session the middleware before it set.
        super().__init__(*args, middleware=[*middleware, *audited], **kwargs)

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        hints = annotations or ToolAnnotations()
        facts = ToolFacts(
            name=name or fn.__name__,
            module=fn.__module__,
            read_only=hints.read_only_hint,
            destructive=hints.destructive_hint,
            open_world=hints.open_world_hint,
        )
        self.policy.register(facts)
        staged = _function_stage(fn, facts, self.policy)
        super().add_tool(staged, facts.name, title, description, annotations, icons, meta, structured_output)

    async def list_tools(self) -> list[MCPTool]:
        return [tool for tool in await super().list_tools() if self.policy.refusal(tool.name) is None]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        call = ToolCall(name, arguments, self.policy.tools.get(name), self.policy, context)
        result: CallToolResult | InputRequiredResult = await run_steps(CALL_STAGE, call, self._sdk_call)
        return result

    async def _sdk_call(self, call: ToolCall) -> CallToolResult | InputRequiredResult:
        return await super().call_tool(call.name, call.arguments, call.context)


def _function_stage(fn: Callable[..., Any], facts: ToolFacts, policy: ToolPolicy) -> Callable[..., Any]:
    """`fn` behind the function stage of the pipeline.

    The wrapper declares `fn`'s own signature (evaluated; its numbers refuse booleans and its booleans
    numbers: arguments.py), plus the confirmation parameter when the policy asks for one, so the SDK builds the
    same schemas and injects the same context as for `fn` itself.
    """

    async def run_function(call: ToolCall) -> Any:
        if inspect.iscoroutinefunction(fn):
            return await fn(**call.arguments)
        return await anyio.to_thread.run_sync(functools.partial(fn, **call.arguments))

    @functools.wraps(fn)
    async def staged(**kwargs: Any) -> Any:
        return await run_steps(FUNCTION_STAGE, ToolCall(facts.name, kwargs, facts, policy), run_function)

    signature = inspect.signature(fn, eval_str=True)
    parameters = [p.replace(annotation=booleans_apart(p.annotation)) for p in signature.parameters.values()]
    if policy.needs_confirmation(facts):
        parameters.append(confirmation_parameter(facts.name))
    staged.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    staged.__annotations__ = {p.name: p.annotation for p in parameters if p.annotation is not p.empty}
    if signature.return_annotation is not signature.empty:
        staged.__annotations__["return"] = signature.return_annotation
    return staged
