"""MCP tools for windows and applications."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from symphony_mcp.desktop.actions import DEFAULT_OPEN_WAIT_SECONDS
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.result_schemas import OpenResult, WindowList
from symphony_mcp.limits import MAX_ID, MAX_OPEN_TARGET, MAX_WAIT_SECONDS
from symphony_mcp.tools.arguments import FrameId, Space
from symphony_mcp.tools.common import DESTRUCTIVE_INPUT, HARMLESS_CHANGE, READ_ONLY, in_latest_space
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool

WindowId = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
OPEN_APP_DESCRIPTION = """Start a program as the server's user and report the windows it opened. `target`: a file
(opened with its default app as xdg-open would choose it; the result says which), a command line (first word looked
up on PATH, never run through a shell), or an installed app's name. Unless policy.open_app_allow limits it,
any program on PATH runs with any arguments: it can change or delete whatever the server's user can. Window
rectangles and the record are in the latest screenshot's pixels."""


@define_tool(READ_ONLY)
async def list_windows(cores: Cores, space: Space = "screenshot", frame_id: FrameId = None) -> WindowList:
    """Top-level windows with id, title, application, rectangle (in the latest screenshot's pixels unless
    space/frame_id say otherwise) and which one is active."""
    view = await cores.screen.caller_space(space, frame_id)
    return view.express(WindowList(windows=await cores.actions.list_windows()))


@define_tool(HARMLESS_CHANGE)
async def focus_window(
    cores: Cores,
    window_id: Annotated[WindowId, Field(description="id from list_windows, e.g. '0x400007'")],
) -> ActionRecord:
    """Raise and focus a window so keyboard input goes to it. The record's coordinates are the latest
    screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.focus_window(window_id))


@define_tool(DESTRUCTIVE_INPUT)
async def close_window(
    cores: Cores,
    window_id: Annotated[WindowId, Field(description="id from list_windows")],
) -> ActionRecord:
    """Close a window as its close button would; the application may ask first (e.g. to save). The record's
    coordinates are the latest screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.close_window(window_id))


@define_tool(
    DESTRUCTIVE_INPUT,
    description=OPEN_APP_DESCRIPTION,
    bounds=lambda cores: {"wait_seconds": {"maximum": cores.settings.input.max_wait_seconds}},
)
async def open_app(
    cores: Cores,
    target: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_OPEN_TARGET,
            description="a command line ('xterm', 'gedit notes.txt'), an installed app's name, or a file path",
        ),
    ],
    wait_seconds: Annotated[
        float | None,
        Field(
            ge=0,
            le=MAX_WAIT_SECONDS,
            allow_inf_nan=False,
            description=f"wait up to this long for its window (default {DEFAULT_OPEN_WAIT_SECONDS:g} s, or the "
            "server's longest wait if shorter); if none came yet, see list_windows",
        ),
    ] = None,
) -> OpenResult:
    return await in_latest_space(cores.screen, await cores.actions.open(target, wait_seconds))


DEFINITIONS = (
    list_windows,
    focus_window,
    close_window,
    open_app,
)
