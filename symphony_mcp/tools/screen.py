"""MCP tools that look at the screen: screenshot and screen_info."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Image
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from symphony_mcp.desktop.result_schemas import ScreenInfo, ScreenshotInfo
from symphony_mcp.tools.arguments import AreaRegion, FrameId, Monitor, Space
from symphony_mcp.tools.common import READ_ONLY
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool

SCREENSHOT_DESCRIPTION = """Capture the screen (or one monitor, or a region) as an image.
The image is downscaled to fit the configured size and byte limits; its metadata gives frame_id,
the screen area shown and the scale. It becomes the latest screenshot: every tool takes and returns
coordinates in its pixels by default, so read them straight off this image. Use `region` to zoom in:
the region is returned at up to full screen resolution."""


@define_tool(READ_ONLY, description=SCREENSHOT_DESCRIPTION)
async def screenshot(
    cores: Cores,
    monitor: Annotated[Monitor, Field(description="monitor index (0 = all, 1 = first); default from settings")] = None,
    region: Annotated[
        AreaRegion, Field(description="capture only this {left, top, width, height} (any box from a result fits)")
    ] = None,
    space: Space = "screenshot",
    frame_id: FrameId = None,
    format: Annotated[Literal["jpeg", "png", "webp"] | None, Field(description="default from settings")] = None,
    max_width: Annotated[int | None, Field(ge=64, le=8192, description="downscale to at most this width")] = None,
    max_height: Annotated[int | None, Field(ge=64, le=8192, description="downscale to at most this height")] = None,
    quality: Annotated[int | None, Field(ge=1, le=100, description="JPEG/WebP quality")] = None,
    draw_cursor: Annotated[bool | None, Field(description="draw a marker where the pointer is")] = None,
) -> Annotated[CallToolResult, ScreenshotInfo]:
    view = await cores.screen.caller_space(space, frame_id)
    encoded, info = await cores.screen.screenshot(
        view,
        monitor=monitor,
        region=region,
        draw_cursor=draw_cursor,
        format=format,
        max_width=max_width,
        max_height=max_height,
        quality=quality,
    )
    summary = (
        f"frame {info.frame_id}: {info.image_width}x{info.image_height} {info.format} image of screen area "
        f"{info.screen_area.describe()} (scale {info.scale:g}); it is now the latest screenshot"
    )
    return CallToolResult(
        content=[
            Image(data=encoded.data, format=encoded.format).to_image_content(),
            TextContent(type="text", text=summary),
        ],
        structured_content=info.model_dump(mode="json"),
    )


@define_tool(READ_ONLY)
async def screen_info(cores: Cores, space: Space = "screenshot", frame_id: FrameId = None) -> ScreenInfo:
    """Monitors and their sizes (screen pixels), the size and scale a default screenshot has, and the pointer
    position in the latest screenshot's pixels (or frame_id's, or the screen's)."""
    view = await cores.screen.caller_space(space, frame_id)
    return view.express(await cores.screen.screen_info())


DEFINITIONS = (
    screenshot,
    screen_info,
)
