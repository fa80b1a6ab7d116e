"""The audit step of the call pipeline: every tools/call request, whatever its outcome, is one line of the audit
log (policy/audit.py) with the session it came from.

The line is written by a server middleware, which sees each request before the SDK validates it: calls the SDK
refuses before any tool code runs (an unknown name, `arguments` that are not an object) are audited like the
others. How the policy stopped a call (refused, declined, ...) is told to it by the `policy_outcome` step.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from pydantic import BaseModel, ValidationError

from symphony_mcp.memory.manager import current_session
from symphony_mcp.policy.audit import AuditLog, Outcome, capped
from symphony_mcp.tools.call import PolicyStopError, Proceed, ToolCall


@dataclass
class _PolicyVerdict:
    """How the policy stopped the call being audited, if it did (refused, declined, ...), for its entry."""

    outcome: Outcome | None = None


_verdict: ContextVar[_PolicyVerdict | None] = ContextVar("symphony_policy_verdict", default=None)


def audit_middleware(audit: AuditLog) -> ServerMiddleware[Any]:
    """Step (request stage): write every tools/call request to `audit`, the ones the SDK refuses first too."""

    async def audit_call(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
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
            audit.write(
                session=current_session.get(),
                tool=name if isinstance(name, str) else f"(not a tool name: {capped(name)!r})",
                arguments=params.get("arguments"),
                outcome=outcome,
                started=started,
                error=error,
            )

    return audit_call


async def policy_outcome(call: ToolCall, proceed: Proceed) -> Any:
    """Step: when the policy stops the call (here or in the tool's function stage), its audit line says how."""
    try:
        return await proceed(call)
    except Exception as exc:
        stop = exc if isinstance(exc, PolicyStopError) else exc.__cause__  # the SDK wraps what a tool function raises
        if isinstance(stop, PolicyStopError) and (verdict := _verdict.get()) is not None:
            verdict.outcome = stop.outcome
        raise


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
