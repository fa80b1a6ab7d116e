"""MCP tools for windows and applications."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from symphony_mcp.desktop.actions import DEFAULT_OPEN_WAIT_SECONDS, DesktopActions
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.result_schemas import OpenResult, WindowList
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.limits import MAX_ID, MAX_OPEN_TARGET, MAX_WAIT_SECONDS
from symphony_mcp.tools.arguments import FrameId, Space, state_in_schema
from symphony_mcp.tools.common import DESTRUCTIVE_INPUT, HARMLESS_CHANGE, READ_ONLY, caller_errors, in_latest_space

WindowId = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
OPEN_APP_DESCRIPTION = """Start a program as the server's user and report the windows it opened. `target`: a file
(opened with its default app as xdg-open would choose it; the result says which), a command line (first word looked
up on PATH, never run through a shell), or an installed app's name. Unless policy.open_app_allow limits it,
any program on PATH runs with any arguments: it can change or delete whatever the server's user can. Window
rectangles and the record are in the latest screenshot's pixels."""


def register(server: MCPServer, screen: Screen, actions: DesktopActions) -> None:
    @server.tool(annotations=READ_ONLY)
    @caller_errors
    async def list_windows(space: Space = "screenshot", frame_id: FrameId = None) -> WindowList:
        """Top-level windows with id, title, application, rectangle (in the latest screenshot's pixels unless
        space/frame_id say otherwise) and which one is active."""
        view = await screen.caller_space(space, frame_id)
        return view.express(WindowList(windows=await actions.list_windows()))

    @server.tool(annotations=HARMLESS_CHANGE)
    @caller_errors
    async def focus_window(
        window_id: Annotated[WindowId, Field(description="id from list_windows, e.g. '0x400007'")],
    ) -> ActionRecord:
        """Raise and focus a window so keyboard input goes to it. The record's coordinates are the latest
        screenshot's pixels."""
        return await in_latest_space(screen, await actions.focus_window(window_id))

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def close_window(
        window_id: Annotated[WindowId, Field(description="id from list_windows")],
    ) -> ActionRecord:
        """Close a window as its close button would; the application may ask first (e.g. to save). The record's
        coordinates are the latest screenshot's pixels."""
        return await in_latest_space(screen, await actions.close_window(window_id))

    @server.tool(annotations=DESTRUCTIVE_INPUT, description=OPEN_APP_DESCRIPTION)
    @caller_errors
    async def open_app(
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
        return await in_latest_space(screen, await actions.open(target, wait_seconds))

    state_in_schema(server, "open_app", "wait_seconds", maximum=actions.settings.max_wait_seconds)
