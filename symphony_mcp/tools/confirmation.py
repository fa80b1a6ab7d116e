"""The user's confirmation of a call, for the tools the policy says need one (confirm_tools, confirm_groups).

Such a tool gets one more parameter at registration, filled by a resolver that asks the user through MCP
elicitation (`Resolve` works on every protocol version: a standalone request up to 2025-11-25, an input-required
round trip from 2026-07-28). The `confirmed` step of the pipeline reads the answer before the tool runs: declined
means nothing is done; a host that cannot ask gets a tool error saying so, never a silent action.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from symphony_mcp.policy.audit import capped
from symphony_mcp.policy.tools import setting_name
from symphony_mcp.tools.call import PolicyStopError, Proceed, ToolCall, current_call

CONFIRMATION_PARAMETER = "policy_confirmation"


class Confirmation(BaseModel):
    """What the user is asked: allow this one call or not."""

    allow: bool = Field(True, description="allow this action")


class CannotAsk:
    """The resolver's answer when the host declared no form elicitation: the call must not go ahead."""


def confirmation_parameter(tool: str) -> inspect.Parameter:
    """The parameter a tool that needs confirmation gets: the SDK fills it by asking the user, before the tool runs."""
    return inspect.Parameter(
        CONFIRMATION_PARAMETER,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[ElicitationResult[Confirmation], Resolve(_asker(tool))],
    )


async def confirmed(call: ToolCall, proceed: Proceed) -> Any:
    """Step: a tool that needs confirmation runs only when the user allowed this call."""
    if call.facts is None or not call.policy.needs_confirmation(call.facts):
        return await proceed(call)
    arguments = dict(call.arguments)
    _check_confirmed(call.name, arguments.pop(CONFIRMATION_PARAMETER))
    return await proceed(ToolCall(call.name, arguments, call.facts, call.policy, call.context))


def _asker(tool: str) -> Callable[[Context[Any, Any]], Any]:
    async def ask_user(ctx: Context) -> Elicit[Confirmation] | CannotAsk:
        """Ask when the host can; the question names the tool and its (capped) arguments."""
        capabilities = ctx.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return CannotAsk()
        call = current_call()
        name, arguments = (call.name, call.arguments) if call is not None else (tool, {})
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
