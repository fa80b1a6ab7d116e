"""MCP tools that operate the pointer and keyboard. Each returns the action's structured record."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from symphony_mcp.desktop.controller import DesktopController
from symphony_mcp.desktop.models import MouseButton
from symphony_mcp.memory.actions import ActionRecord
from symphony_mcp.tools.common import (
    DESTRUCTIVE_INPUT,
    HARMLESS_CHANGE,
    READ_ONLY,
    FrameId,
    HoldKeys,
    Space,
    X,
    Y,
    caller_errors,
)

Keys = Annotated[list[str], Field(description="key names, e.g. ['ctrl', 'shift', 't'] or ['enter']")]


def register(server: MCPServer, desktop: DesktopController) -> None:
    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def click(
        x: X,
        y: Y,
        button: MouseButton = "left",
        count: Annotated[int, Field(description="1 = click, 2 = double, 3 = triple")] = 1,
        hold_keys: HoldKeys = [],  # noqa: B006 - pydantic copies defaults
        space: Space = "screenshot",
        frame_id: FrameId = None,
    ) -> ActionRecord:
        """Click at a point, optionally several times and with modifier keys held."""
        return await desktop.click(
            x, y, button=button, count=count, hold_keys=hold_keys, space=space, frame_id=frame_id
        )

    @server.tool(annotations=HARMLESS_CHANGE)
    @caller_errors
    async def move_pointer(
        x: X,
        y: Y,
        duration: Annotated[float, Field(description="seconds the move takes (0 = jump)")] = 0.0,
        space: Space = "screenshot",
        frame_id: FrameId = None,
    ) -> ActionRecord:
        """Move the pointer without clicking (hover menus, tooltips)."""
        return await desktop.move(x, y, duration=duration, space=space, frame_id=frame_id)

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def drag(
        start_x: X,
        start_y: Y,
        end_x: X,
        end_y: Y,
        button: MouseButton = "left",
        hold_keys: HoldKeys = [],  # noqa: B006
        duration: Annotated[float, Field(description="seconds the drag takes")] = 0.3,
        space: Space = "screenshot",
        frame_id: FrameId = None,
    ) -> ActionRecord:
        """Press at the start point, move to the end point with intermediate motion, release."""
        return await desktop.drag(
            (start_x, start_y),
            (end_x, end_y),
            button=button,
            hold_keys=hold_keys,
            duration=duration,
            space=space,
            frame_id=frame_id,
        )

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def scroll(
        vertical: Annotated[int, Field(description="wheel clicks: positive scrolls up, negative down")] = 0,
        horizontal: Annotated[int, Field(description="wheel clicks: positive scrolls right, negative left")] = 0,
        x: Annotated[float | None, Field(description="scroll over this point (default: where the pointer is)")] = None,
        y: Annotated[float | None, Field(description="scroll over this point (default: where the pointer is)")] = None,
        hold_keys: HoldKeys = [],  # noqa: B006
        space: Space = "screenshot",
        frame_id: FrameId = None,
    ) -> ActionRecord:
        """Scroll the wheel over a point, vertically and/or horizontally."""
        return await desktop.scroll(
            vertical=vertical, horizontal=horizontal, x=x, y=y, hold_keys=hold_keys, space=space, frame_id=frame_id
        )

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def type_text(
        text: Annotated[str, Field(description="text to type; any Unicode, newlines press Enter")],
        overwrite: Annotated[bool, Field(description="select all and delete the field's text first")] = False,
        enter: Annotated[bool, Field(description="press Enter after typing")] = False,
    ) -> ActionRecord:
        """Type text into the focused element (click it first). Unicode is typed exactly, also in terminals."""
        return await desktop.type_text(text, overwrite=overwrite, enter=enter)

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def hotkey(keys: Keys) -> ActionRecord:
        """Press a key or key combination: keys go down in order and come up in reverse (e.g. ctrl+s)."""
        return await desktop.hotkey(keys)

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def hold_and_press(
        hold_keys: Annotated[list[str], Field(description="keys held down throughout, e.g. ['alt']")],
        press_keys: Annotated[list[str], Field(description="keys pressed one after another, e.g. ['tab', 'tab']")],
    ) -> ActionRecord:
        """Hold some keys while pressing others in sequence (e.g. alt held, tab pressed twice)."""
        return await desktop.hold_and_press(hold_keys, press_keys)

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def key_down(key: Annotated[str, Field(description="key to press and keep down")]) -> ActionRecord:
        """Press a key and keep it down until key_up (for holds that span other actions)."""
        return await desktop.key_transition(key, down=True)

    @server.tool(annotations=DESTRUCTIVE_INPUT)
    @caller_errors
    async def key_up(key: Annotated[str, Field(description="key to release")]) -> ActionRecord:
        """Release a key pressed with key_down."""
        return await desktop.key_transition(key, down=False)

    @server.tool(annotations=READ_ONLY)
    @caller_errors
    async def wait(seconds: Annotated[float, Field(description="seconds to wait")]) -> ActionRecord:
        """Wait for the UI (loading, animations) before looking again."""
        return await desktop.wait(seconds)

    @server.tool(annotations=READ_ONLY)
    @caller_errors
    async def action_history(
        since_id: Annotated[int, Field(ge=0, description="only records with a larger id")] = 0,
        limit: Annotated[int, Field(ge=1, le=1000, description="at most this many, the newest")] = 50,
    ) -> list[ActionRecord]:
        """The structured records of the actions this server performed in this session, oldest first."""
        return desktop.actions.records(since_id=since_id, limit=limit)
