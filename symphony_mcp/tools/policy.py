"""The user's policy applied to every tool the server registers, present and future.

`PolicyServer` is the MCP server the tool modules register on. Registration goes through its
`add_tool`, so no tool module has policy code of its own:
- a tool that is off is missing from tools/list, and a call to it gets a tool error naming the setting;
- a tool whose calls need confirmation gets one more parameter, filled by a resolver that asks the
  user through MCP elicitation (`Resolve` works on every protocol version: a standalone request up to
  2025-11-25, an input-required round trip from 2026-07-28). Declined means nothing is done; a host
  that cannot ask gets a tool error saying so, never a silent action;
- every call runs under its time bound. Cancellation lands only between desktop actions: the
  desktop finishes and records an action under way (shielded), so nothing is left pressed;
- every tools/call request, whatever its outcome, is written to the audit log with the session it came
  from. The entry is written by a server middleware, which sees each request before the SDK validates it:
  calls the SDK refuses before any tool code runs (an unknown name, `arguments` that are not an object)
  are audited like the others.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, Field, ValidationError

from symphony_mcp.config import PolicySettings
from symphony_mcp.memory.manager import current_session
from symphony_mcp.policy.audit import AuditLog, Outcome, capped
from symphony_mcp.policy.tools import ToolFacts, ToolPolicy, setting_name
from symphony_mcp.tools.arguments import booleans_apart
from symphony_mcp.tools.common import compact_text

CONFIRMATION_PARAMETER = "policy_confirmation"
# The tool call being handled, for the confirmation question (a resolver sees no tool arguments by default).
_call: ContextVar[tuple[str, dict[str, Any]]] = ContextVar("symphony_policy_call")


@dataclass
class _PolicyVerdict:
    """How the policy stopped the call being audited, if it did (refused, declined, ...), for its entry."""

    outcome: Outcome | None = None


_verdict: ContextVar[_PolicyVerdict | None] = ContextVar("symphony_policy_verdict", default=None)


class Confirmation(BaseModel):
    """What the user is asked: allow this one call or not."""

    allow: bool = Field(True, description="allow this action")


class CannotAsk:
    """The resolver's answer when the host declared no form elicitation: the call must not go ahead."""


class PolicyStopError(ToolError):
    """A call the policy stopped; `outcome` names how for the audit log."""

    def __init__(self, message: str, outcome: Outcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class PolicyServer(MCPServer):
    def __init__(
        self, policy: PolicySettings, *args: Any, middleware: Sequence[ServerMiddleware[Any]] = (), **kwargs: Any
    ) -> None:
        self.policy = ToolPolicy(policy)
        self.audit = AuditLog(policy.audit_file, policy.audit_max_bytes, policy.audit_files) if policy.audit else None
        audited = [self._audit_call] if self.audit is not None else []
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
        guarded = _guarded(fn, facts, self.policy)
        super().add_tool(guarded, facts.name, title, description, annotations, icons, meta, structured_output)

    async def list_tools(self) -> list[MCPTool]:
        return [tool for tool in await super().list_tools() if self.policy.refusal(tool.name) is None]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        token = _call.set((name, arguments))
        try:
            if (refusal := self.policy.refusal(name)) is not None:
                raise PolicyStopError(refusal, "refused")
            result = await super().call_tool(name, arguments, context)
            return compact_text(result) if isinstance(result, CallToolResult) and not result.is_error else result
        except Exception as exc:
            stop = exc if isinstance(exc, PolicyStopError) else exc.__cause__
            if isinstance(stop, PolicyStopError) and (verdict := _verdict.get()) is not None:
                verdict.outcome = stop.outcome
            raise
        finally:
            _call.reset(token)

    async def _audit_call(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Write every tools/call request to the audit log, the ones the SDK refuses before a tool runs too."""
        if ctx.method != "tools/call" or self.audit is None:
            return await call_next(ctx)
        started = time.time()
        params = ctx.params or {}
        verdict = _PolicyVerdict()
        token = _verdict.set(verdict)
        outcome: Outcome = "error"
        error: str | None = None
        try:
            result = await call_next(ctx)
            outcome, error = _outcome_of(result, verdict)
            return result
        except ValidationError as exc:
            error = "invalid params: " + "; ".join(
                f"{'.'.join(map(str, found['loc'])) or 'params'}: {found['msg']}" for found in exc.errors()
            )
            raise
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        except BaseException:  # the request was cancelled (or the server is stopping)
            error = "cancelled before it finished"
            raise
        finally:
            _verdict.reset(token)
            name = params.get("name")
            self.audit.write(
                session=current_session.get(),
                tool=name if isinstance(name, str) else f"(not a tool name: {capped(name)!r})",
                arguments=params.get("arguments"),
                outcome=outcome,
                started=started,
                error=error,
            )


def _outcome_of(result: HandlerResult, verdict: _PolicyVerdict) -> tuple[Outcome, str | None]:
    """The audit outcome and error of a tools/call answer as it goes on the wire (a CallToolResult, or an
    InputRequiredResult while the user is asked)."""
    answer = result.model_dump(by_alias=True) if isinstance(result, BaseModel) else result or {}
    if answer.get("resultType") == "input_required":
        return "asked", None
    if answer.get("isError"):
        texts = (part.get("text") for part in answer.get("content") or () if isinstance(part, dict))
        return verdict.outcome or "error", next((text for text in texts if isinstance(text, str)), "error")
    return "ok", None


def _guarded(fn: Callable[..., Any], facts: ToolFacts, policy: ToolPolicy) -> Callable[..., Any]:
    """`fn` under its time bound, after the user's confirmation when the policy asks for one.

    The wrapper declares `fn`'s own signature (evaluated; its numbers refuse booleans and its booleans
    numbers: arguments.py), plus the confirmation parameter when needed, so the SDK builds the same schemas
    and injects the same context as for `fn` itself.
    """
    confirm = policy.needs_confirmation(facts)

    @functools.wraps(fn)
    async def guarded(**kwargs: Any) -> Any:
        if confirm:
            _check_confirmed(facts.name, kwargs.pop(CONFIRMATION_PARAMETER))
        seconds, setting = policy.time_bound(facts.name)
        with anyio.move_on_after(seconds) as scope:
            if inspect.iscoroutinefunction(fn):
                return await fn(**kwargs)
            return await anyio.to_thread.run_sync(functools.partial(fn, **kwargs))
        if scope.cancelled_caught:
            raise PolicyStopError(
                f"{facts.name!r} did not finish within its time bound of {seconds:g} s ({setting}) and was "
                "stopped; an action under way on the desktop was finished and recorded first (see "
                "action_history), so no key or button is left pressed. The server keeps serving",
                "timeout",
            )
        raise AssertionError("unreachable: the bounded call neither returned nor was cancelled")

    signature = inspect.signature(fn, eval_str=True)
    parameters = [p.replace(annotation=booleans_apart(p.annotation)) for p in signature.parameters.values()]
    if confirm:
        parameters.append(
            inspect.Parameter(
                CONFIRMATION_PARAMETER,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[ElicitationResult[Confirmation], Resolve(_asker(facts.name))],
            )
        )
    guarded.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    guarded.__annotations__ = {p.name: p.annotation for p in parameters if p.annotation is not p.empty}
    if signature.return_annotation is not signature.empty:
        guarded.__annotations__["return"] = signature.return_annotation
    return guarded


def _asker(tool: str) -> Callable[[Context[Any, Any]], Any]:
    async def ask_user(ctx: Context) -> Elicit[Confirmation] | CannotAsk:
        """Ask when the host can; the question names the tool and its (capped) arguments."""
        capabilities = ctx.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return CannotAsk()
        name, arguments = _call.get((tool, {}))
        return Elicit(
            f"An MCP client asks to run {name!r} on this desktop with {capped(arguments)}. Allow it? "
            f"(Asked because of {setting_name('confirm_tools')} / confirm_groups; declining does nothing.)",
            Confirmation,
        )

    ask_user.__qualname__ = f"ask_user_{tool}"
    return ask_user


def _check_confirmed(tool: str, outcome: ElicitationResult[Any]) -> None:
    if not isinstance(outcome, AcceptedElicitation):
        raise PolicyStopError(f"the user declined {tool!r} ({outcome.action}); nothing was done", "declined")
    if isinstance(outcome.data, CannotAsk):
        raise PolicyStopError(
            f"{tool!r} needs the user's confirmation ({setting_name('confirm_tools')} or confirm_groups), but "
            "this MCP host cannot ask: it declared no form elicitation capability. Nothing was done. Use a host "
            "that supports elicitation, or take the tool and its groups out of those settings",
            "unconfirmed",
        )
    if not isinstance(outcome.data, Confirmation) or not outcome.data.allow:
        raise PolicyStopError(f"the user did not allow {tool!r}; nothing was done", "declined")
