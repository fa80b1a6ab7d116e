"""What every tool module shares: caller-facing errors and the annotation presets."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import MCPServerError, ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from symphony_mcp.desktop.controller import DesktopController
from symphony_mcp.errors import SymphonyError
from symphony_mcp.imaging.geometry import CoordinateSpace

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
# Input reaches whatever app has focus: it can change or delete things.
DESTRUCTIVE_INPUT = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True)
# Changes what is shown or focused, not the content of any app.
HARMLESS_CHANGE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)

Space = Annotated[
    CoordinateSpace,
    Field(
        description="coordinates in and out: 'screenshot' = pixels of the latest screenshot (or frame_id); "
        "'screen' = absolute screen pixels"
    ),
]
FrameId = Annotated[
    str | None, Field(description="screenshot whose pixels coordinates are in, in and out; default: the latest")
]
HoldKeys = Annotated[list[str], Field(description="modifier keys held during the action, e.g. ['shift']")]
X = Annotated[float, Field(description="x in the chosen space (see `space`)")]
Y = Annotated[float, Field(description="y in the chosen space (see `space`)")]


def _surfacing(error_type: type[MCPServerError]) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Turn core errors into `error_type` errors whose message reaches the caller; the server keeps serving.

    The SDK hides the text of any other exception from the caller.
    """

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await fn(*args, **kwargs)
            except MCPServerError:
                raise
            except SymphonyError as exc:
                raise error_type(str(exc)) from exc
            except Exception as exc:
                log.exception("%s failed unexpectedly", fn.__name__)
                raise error_type(f"internal error ({type(exc).__name__}: {exc}); the server is still running") from exc

        return wrapper

    return decorate


caller_errors = _surfacing(ToolError)
resource_errors = _surfacing(ResourceError)


async def in_latest_space(desktop: DesktopController, result: T) -> T:
    """A result of a call that takes no coordinates, in the latest screenshot's space (pointer, windows, records)."""
    return (await desktop.caller_space()).express(result)
