"""MCP tools that operate the pointer and keyboard. Each returns the action's structured record."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from symphony_mcp.desktop.frames import CallerSpace, Placed
from symphony_mcp.desktop.records import ActionRecord, Target
from symphony_mcp.desktop.types import MouseButton
from symphony_mcp.limits import MAX_COUNTER, MAX_KEY_PRESSES, MAX_KEYS, MAX_SCROLL, MAX_WAIT_SECONDS
from symphony_mcp.tools.arguments import (
    Count,
    Duration,
    FrameId,
    HoldKeys,
    KeyName,
    Keys,
    OptionalDescribed,
    OptionalX,
    OptionalY,
    Space,
    TypedText,
    X,
    Y,
    coordinate,
    one_target,
)
from symphony_mcp.tools.common import DESTRUCTIVE_INPUT, HARMLESS_CHANGE, READ_ONLY, in_latest_space
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool
from symphony_mcp.vision.grounding.targets import TargetRequest

Description = Annotated[
    OptionalDescribed,
    Field(
        description="the element to act on, described as a person would (e.g. 'the blue Save button'); "
        "located on the current screen by the grounding model. Give this or x, y"
    ),
]
Wheel = Annotated[int, Field(ge=-MAX_SCROLL, le=MAX_SCROLL)]
ElementId = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_COUNTER,
        description="an element's id from elements or find_element, read on this call's frame (frame_id, else "
        "the latest); instead of description or x, y",
    ),
]
NO_AMOUNT = {"properties": {"vertical": {"const": 0}, "horizontal": {"const": 0}}}
NOTHING_TO_TYPE = {"properties": {"text": {"maxLength": 0}, "overwrite": {"const": False}, "enter": {"const": False}}}


async def _target_of(cores: Cores, request: TargetRequest, element: int | None, view: CallerSpace) -> Target:
    if element is not None:
        return await cores.element_actions.target(view, element)
    return (await cores.targets.resolve([request], view))[0]


@define_tool(DESTRUCTIVE_INPUT, refused=one_target())
async def click(
    cores: Cores,
    element: ElementId = None,
    description: Description = None,
    x: OptionalX = None,
    y: OptionalY = None,
    button: MouseButton = "left",
    count: Count = 1,
    hold_keys: HoldKeys = [],  # noqa: B006 - pydantic copies defaults
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Click an element given by id (from elements: pressed through its accessibility action when it has one),
    by description (located on screen by the grounding model) or at x, y; optionally several times and with
    modifier keys held. x, y and the record's coordinates are the latest screenshot's pixels unless
    space/frame_id say otherwise."""
    view = await cores.screen.caller_space(space, frame_id)
    if element is not None:
        TargetRequest(description, x, y).check_none_with_element_id(element)
        record = await cores.element_actions.click(view, element, button=button, count=count, hold_keys=hold_keys)
        return view.express(record)
    (target,) = await cores.targets.resolve([TargetRequest(description, x, y)], view)
    return view.express(await cores.actions.click(target, view, button=button, count=count, hold_keys=hold_keys))


@define_tool(HARMLESS_CHANGE)
async def move_pointer(
    cores: Cores,
    x: X,
    y: Y,
    duration: Annotated[Duration, Field(description="seconds the move takes (0 = jump)")] = 0.0,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Move the pointer without clicking (hover menus, tooltips). x, y and the record's coordinates are the
    latest screenshot's pixels unless space/frame_id say otherwise."""
    view = await cores.screen.caller_space(space, frame_id)
    return view.express(await cores.actions.move(Target(view.to_screen(x, y), (x, y)), view, duration=duration))


@define_tool(DESTRUCTIVE_INPUT, refused=[*one_target("start_"), *one_target("end_")])
async def drag_and_drop(
    cores: Cores,
    start_element: Annotated[ElementId, Field(description="element to drag from, by id")] = None,
    end_element: Annotated[ElementId, Field(description="element to drop on, by id")] = None,
    start_description: Annotated[OptionalDescribed, Field(description="element to drag from, described")] = None,
    end_description: Annotated[OptionalDescribed, Field(description="element to drop on, described")] = None,
    start_x: OptionalX = None,
    start_y: OptionalY = None,
    end_x: OptionalX = None,
    end_y: OptionalY = None,
    button: MouseButton = "left",
    hold_keys: HoldKeys = [],  # noqa: B006
    duration: Annotated[Duration, Field(description="seconds the drag takes")] = 0.3,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Press at the start, move to the end with intermediate motion, release. Each end is an element id
    (from elements), a description (located by the grounding model) or x, y. x, y and the record's
    coordinates are the latest screenshot's pixels unless space/frame_id say otherwise."""
    view = await cores.screen.caller_space(space, frame_id)
    start_request = TargetRequest(start_description, start_x, start_y, "start_")
    end_request = TargetRequest(end_description, end_x, end_y, "end_")
    start_request.check_none_with_element_id(start_element)
    end_request.check_none_with_element_id(end_element)
    if start_element is None and end_element is None:  # both described: grounded on one capture
        start, end = await cores.targets.resolve([start_request, end_request], view)
    else:
        for request, element in ((start_request, start_element), (end_request, end_element)):
            if element is None:
                request.check()  # both ends' arguments are checked before either is looked for
        start = await _target_of(cores, start_request, start_element, view)
        end = await _target_of(cores, end_request, end_element, view)
    record = await cores.actions.drag(start, end, view, button=button, hold_keys=hold_keys, duration=duration)
    return view.express(record)


@define_tool(DESTRUCTIVE_INPUT, refused=[NO_AMOUNT, *one_target(optional=True)])
async def scroll(
    cores: Cores,
    vertical: Annotated[Wheel, Field(description="wheel clicks: positive scrolls up, negative down")] = 0,
    horizontal: Annotated[Wheel, Field(description="wheel clicks: positive scrolls right, negative left")] = 0,
    element: ElementId = None,
    description: Annotated[
        OptionalDescribed, Field(description="scroll over this element, described (or give x, y; or neither)")
    ] = None,
    x: Annotated[float | None, coordinate("scroll over this point (default: where the pointer is)")] = None,
    y: Annotated[float | None, coordinate("scroll over this point (default: where the pointer is)")] = None,
    hold_keys: HoldKeys = [],  # noqa: B006
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Scroll the wheel over an element (by id, described, or at x, y, or under the pointer). x, y and the
    record's coordinates are the latest screenshot's pixels unless space/frame_id say otherwise."""
    view = await cores.screen.caller_space(space, frame_id)
    request = TargetRequest(description, x, y)
    request.check_none_with_element_id(element)
    target = None if request.is_empty and element is None else await _target_of(cores, request, element, view)
    record = await cores.actions.scroll(
        view, vertical=vertical, horizontal=horizontal, target=target, hold_keys=hold_keys
    )
    return view.express(record)


@define_tool(
    DESTRUCTIVE_INPUT,
    name="type",
    refused=[NOTHING_TO_TYPE, *one_target(optional=True)],
    bounds=lambda cores: {"text": {"maxLength": cores.settings.input.max_text_length}},
)
async def type_(
    cores: Cores,
    text: Annotated[TypedText, Field(description="text to type; any Unicode, newlines press Enter")],
    element: ElementId = None,
    description: Annotated[
        OptionalDescribed, Field(description="click this field first, described (or give x, y; or neither)")
    ] = None,
    x: Annotated[float | None, coordinate("click the field at this point first")] = None,
    y: Annotated[float | None, coordinate("click the field at this point first")] = None,
    overwrite: Annotated[bool, Field(description="select all and delete the field's text first")] = False,
    enter: Annotated[bool, Field(description="press Enter after typing")] = False,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionRecord:
    """Type text into a field: the one with this element id (its text set through accessibility where it
    can be), the described one, the one at x, y, or (none) the focused one. Unicode is typed exactly, also in
    terminals. x, y and the record's coordinates are the latest screenshot's pixels unless space/frame_id say
    otherwise."""
    view = await cores.screen.caller_space(space, frame_id)
    request = TargetRequest(description, x, y)
    request.check_none_with_element_id(element)
    if element is not None:
        record = await cores.element_actions.type_text(view, element, text, overwrite=overwrite, enter=enter)
        return view.express(record)
    target = None if request.is_empty else (await cores.targets.resolve([request], view))[0]
    return view.express(await cores.actions.type_text(text, view, overwrite=overwrite, enter=enter, target=target))


@define_tool(DESTRUCTIVE_INPUT)
async def hotkey(cores: Cores, keys: Keys) -> ActionRecord:
    """Press a key or key combination: keys go down in order and come up in reverse (e.g. ctrl+s).
    The record's coordinates are the latest screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.hotkey(keys))


@define_tool(DESTRUCTIVE_INPUT)
async def hold_and_press(
    cores: Cores,
    hold_keys: Annotated[
        list[KeyName],
        Field(min_length=1, max_length=MAX_KEYS, description="keys held down throughout, e.g. ['alt']"),
    ],
    press_keys: Annotated[
        list[KeyName],
        Field(
            min_length=1,
            max_length=MAX_KEY_PRESSES,
            description="keys pressed one after another, e.g. ['tab', 'tab']",
        ),
    ],
) -> ActionRecord:
    """Hold some keys while pressing others in sequence (e.g. alt held, tab pressed twice). The record's
    coordinates are the latest screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.hold_and_press(hold_keys, press_keys))


@define_tool(DESTRUCTIVE_INPUT)
async def key_down(
    cores: Cores, key: Annotated[KeyName, Field(description="key to press and keep down")]
) -> ActionRecord:
    """Press a key and keep it down until key_up (for holds that span other actions). The record's coordinates
    are the latest screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.key_transition(key, down=True))


@define_tool(DESTRUCTIVE_INPUT)
async def key_up(cores: Cores, key: Annotated[KeyName, Field(description="key to release")]) -> ActionRecord:
    """Release a key pressed with key_down. The record's coordinates are the latest screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.key_transition(key, down=False))


@define_tool(READ_ONLY, bounds=lambda cores: {"seconds": {"maximum": cores.settings.input.max_wait_seconds}})
async def wait(
    cores: Cores,
    seconds: Annotated[
        float,
        Field(
            ge=0,
            le=MAX_WAIT_SECONDS,
            allow_inf_nan=False,
            description="seconds to wait",
        ),
    ],
) -> ActionRecord:
    """Wait for the UI (loading, animations) before looking again. The record's coordinates are the latest
    screenshot's pixels."""
    return await in_latest_space(cores.screen, await cores.actions.wait(seconds))


@define_tool(READ_ONLY)
async def action_history(
    cores: Cores,
    since_id: Annotated[int, Field(ge=0, le=MAX_COUNTER, description="only records with a larger id")] = 0,
    limit: Annotated[int, Field(ge=1, le=1000, description="at most this many, the newest")] = 50,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> ActionHistory:
    """The structured records of the actions this server performed in this session, oldest first,
    all in one space (the latest screenshot's by default)."""
    view = await cores.screen.caller_space(space, frame_id)
    records = cores.actions.recorder.action_log.records(since_id=since_id, limit=limit)
    return view.express(ActionHistory(records=records))


class ActionHistory(Placed):
    records: list[ActionRecord] = Field(description="oldest first; coordinates in this result's space")


DEFINITIONS = (
    click,
    move_pointer,
    drag_and_drop,
    scroll,
    type_,
    hotkey,
    hold_and_press,
    key_down,
    key_up,
    wait,
    action_history,
)
