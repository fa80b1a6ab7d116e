"""MCP tools over the accessibility tree: elements (numbered, optionally drawn on the screen) and find_element."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from mcp.server.mcpserver import Image
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.frames import CallerSpace, new_frame_id
from symphony_mcp.elements.search import find
from symphony_mcp.elements.text_form import lines
from symphony_mcp.elements.types import ElementsResult, FoundElements
from symphony_mcp.imaging.geometry import CoordinateSpace, Rect, Region
from symphony_mcp.tools.arguments import AreaRegion, FrameId, OptionalDescribed, Space
from symphony_mcp.tools.common import READ_ONLY
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_resource, define_tool
from symphony_mcp.vision.annotate import draw_marks

MAX_ELEMENTS = 1000
Area = Annotated[AreaRegion, Field(description="only elements inside this {left, top, width, height}")]
WindowTitle = Annotated[
    OptionalDescribed, Field(description="only elements of windows whose title contains this (as list_windows shows)")
]
Roles = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=40)]],
    Field(max_length=20, description="only these roles, e.g. ['push button', 'entry', 'link']"),
]


async def _read(
    cores: Cores,
    space: CoordinateSpace,
    frame_id: str | None,
    region: Region | None,
    window: str | None,
    roles: list[str],
    most: int,
    frame: Frame | None = None,
) -> tuple[CallerSpace, ElementsResult]:
    view = await cores.screen.caller_space(space, frame_id)
    area = view.region_to_screen(region) if region is not None else None
    return view, await cores.elements.read(view, area, window, roles, most, frame)


@define_tool(READ_ONLY)
async def elements(
    cores: Cores,
    region: Area = None,
    window: WindowTitle = None,
    roles: Roles = [],  # noqa: B006 - pydantic copies defaults
    max: Annotated[int, Field(ge=1, le=MAX_ELEMENTS, description="list at most this many")] = 200,
    annotate: Annotated[
        bool, Field(description="also return the screen with each element boxed and numbered (set-of-marks)")
    ] = False,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> Annotated[CallToolResult, ElementsResult]:
    """The buttons, fields, links, labels and other things a person can act on or read in the latest
    screenshot's area, from the applications' accessibility trees: numbered, with role, name, text, value,
    states, box and click point (center) in that screenshot's pixels. Pass an id as `element` to click, type,
    scroll or drag_and_drop with the same frame_id; ids hold for the frame they were read on. The text
    content lists one element per line. Windows whose toolkit exposes no tree (e.g. Tk) are named in
    windows_without_tree: use find_text there."""
    # One capture serves the reader's tile digests and the numbered image.
    screen = await cores.screen.capture(await cores.screen.screen_rect()) if annotate else None
    view, result = await _read(cores, space, frame_id, region, window, roles, max, screen)
    content: list = []
    if screen is not None:  # the numbered image becomes the latest frame: the result is given in its pixels
        frame = _part(screen, view.area)
        marked = draw_marks(frame.image, frame.area, [(e.id, e.box) for e in result.elements])
        encoded, info = await cores.screen.make_latest(frame, marked)
        if space == "screenshot" and info.frame_id is not None:
            cores.elements.share(view, info.frame_id)
            view = await cores.screen.caller_space(space, info.frame_id)
        content.append(Image(data=encoded.data, format=encoded.format).to_image_content())
    expressed = view.express(result)
    content.append(TextContent(type="text", text=_heading(expressed) + "\n" + lines(expressed.elements)))
    return CallToolResult(content=content, structured_content=expressed.model_dump(mode="json"))


@define_tool(READ_ONLY)
async def find_element(
    cores: Cores,
    name: Annotated[OptionalDescribed, Field(description="the element's label, e.g. 'Save'")] = None,
    text: Annotated[OptionalDescribed, Field(description="text the element holds")] = None,
    role: Annotated[str | None, Field(max_length=40, description="e.g. 'push button', 'entry', 'link'")] = None,
    region: Area = None,
    window: WindowTitle = None,
    max_results: Annotated[int, Field(ge=1, le=100)] = 10,
    space: Space = "screenshot",
    frame_id: FrameId = None,
) -> FoundElements:
    """Elements by name, text or role in the accessibility tree of the latest screenshot's area, best first,
    each with `exact` (false: its name or text differs from what you asked; check it). When none matches,
    the error lists the closest elements seen. Ids work as elements' do."""
    view, result = await _read(cores, space, frame_id, region, window, [role] if role else [], MAX_ELEMENTS)
    matches = find(result.elements, name, text, role)[:max_results]
    query = ", ".join(f"{k}={v!r}" for k, v in (("name", name), ("text", text), ("role", role)) if v)
    return view.express(FoundElements(query=query, matches=matches))


@define_resource(
    "screen://accessibility_tree",
    name="accessibility_tree",
    description="The applications' accessibility trees as OSWorld's accessibility_tree observation (XML in its "
    "controller's format: role tags, st:/attr:/cp:/val:/act: attributes, text; unfiltered, 50 deep and 1024 wide), "
    "for OSWorld's getters and metrics and planners trained on it",
    mime_type="application/xml",
)
async def accessibility_tree(cores: Cores) -> str:
    return await cores.elements.osworld_tree()


def _part(frame: Frame, area: Rect) -> Frame:
    """The part of a captured frame that covers `area` (inside it), as a frame of its own."""
    if area == frame.area:
        return frame
    left, top = area.left - frame.area.left, area.top - frame.area.top
    image = frame.image.crop((left, top, left + area.width, top + area.height))
    return replace(frame, image=image, area=area, id=new_frame_id())


def _heading(result: ElementsResult) -> str:
    where = "screen pixels" if result.space == "screen" else f"pixels of frame {result.frame_id}"
    parts = [f"{len(result.elements)} of {result.total} elements ({where}); ids hold for this frame"]
    if result.cut:
        parts.append(f"walk cut by {result.cut}: elements may be missing")
    for window in result.windows_without_tree:
        parts.append(f"window {window.title!r} ({window.app}) has no accessibility tree")
    return "; ".join(parts)


DEFINITIONS = (elements, find_element, accessibility_tree)
