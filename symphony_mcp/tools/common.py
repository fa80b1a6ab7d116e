"""What every tool module shares: caller-facing errors, compact results and the annotation presets."""

from __future__ import annotations

import functools
import json
import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import MCPServerError, ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from symphony_mcp.desktop.screen import Screen
from symphony_mcp.errors import InvalidInputError, SymphonyError, clip_message
from symphony_mcp.limits import MAX_ECHO
from symphony_mcp.tools.call import Proceed, ToolCall

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
# Input reaches whatever app has focus: it can change or delete things.
DESTRUCTIVE_INPUT = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True)
# Changes what is shown or focused, not the content of any app.
HARMLESS_CHANGE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)


async def caller_errors(call: ToolCall, proceed: Proceed) -> Any:
    """Step: a failure of the tool becomes a tool error whose (clipped) message reaches the caller; the server keeps
    serving. The SDK hides the text of any other exception from the caller."""
    try:
        return await proceed(call)
    except MCPServerError:
        raise
    except Exception as exc:
        raise surfaced(exc, call.name, ToolError) from exc


def resource_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """`fn`, a resource's reader, whose failures reach the caller as resource errors. A URI whose variables are
    refused or name nothing is the caller's mistake: the SDK's not-found error answers it with -32602 (invalid
    params, SEP-2164) instead of -32603 (internal error), which clients take for a fault of the server's."""

    @functools.wraps(fn)
    async def reader(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except MCPServerError:
            raise
        except Exception as exc:
            raise surfaced(exc, fn.__name__, ResourceError, ResourceNotFoundError) from exc

    return reader


def surfaced(
    exc: Exception, where: str, error_type: type[MCPServerError], invalid_type: type[MCPServerError] | None = None
) -> MCPServerError:
    """`exc` as the `error_type` error the caller reads (bad input as `invalid_type`, if given), clipped."""
    if isinstance(exc, InvalidInputError):
        return (invalid_type or error_type)(clip_message(str(exc)))
    if isinstance(exc, SymphonyError):
        return error_type(clip_message(str(exc)))
    # The exception's text can hold a caller's input (an OSError names the file): clipped, here and in the log,
    # whose traceback is written without it.
    text = f"{type(exc).__name__}: {clip_message(str(exc), MAX_ECHO)}"
    trace = "".join(traceback.format_tb(exc.__traceback__))
    log.error("%s failed unexpectedly (%s)\n%s", where, text, trace)
    return error_type(f"internal error ({text}); the server is still running")


async def compact_result(call: ToolCall, proceed: Proceed) -> Any:
    """Step: the text copy of a successful structured result as compact JSON (compact_text)."""
    result = await proceed(call)
    return compact_text(result) if isinstance(result, CallToolResult) and not result.is_error else result


async def in_latest_space(screen: Screen, result: T) -> T:
    """A result of a call that takes no coordinates, in the latest screenshot's space (pointer, windows, records)."""
    return (await screen.caller_space()).express(result)


def compact_text(result: CallToolResult) -> CallToolResult:
    """The text copy of a structured result as compact JSON: the SDK pretty-prints it (about twice the size),
    and hosts that read the text pay those tokens on every call. Other text blocks are left as they are."""
    if result.structured_content is None:
        return result
    structured = result.structured_content
    copies = (structured, structured.get("result"))  # a model's fields, or a plain value wrapped as {"result": ...}
    content = [_compact(block, copies) if isinstance(block, TextContent) else block for block in result.content]
    return result.model_copy(update={"content": content})


def _compact(block: TextContent, copies: tuple[object, ...]) -> TextContent:
    try:
        value = json.loads(block.text)
    except ValueError:
        return block
    if not any(value == copy for copy in copies):
        return block
    return block.model_copy(update={"text": json.dumps(value, ensure_ascii=False, separators=(",", ":"))})
