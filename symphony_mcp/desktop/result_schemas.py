"""What the screen and window tools return: light schemas the server fills and the orchestrator reads."""

from __future__ import annotations

from pydantic import Field

from symphony_mcp.desktop.frames import Placed
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.types import Launched, MonitorInfo, WindowInfo
from symphony_mcp.imaging.geometry import Point, Rect


class ScreenshotInfo(Placed):
    """Metadata of one screenshot; it becomes the latest frame, so coordinates read off it work as they are."""

    monitor: int = Field(description="monitor shown (0 = all monitors, or a region of them)")
    screen_area: Rect = Field(description="screen area shown, in absolute screen pixels")
    screen_width: int = Field(description="width of the whole screen (all monitors) in pixels")
    screen_height: int
    image_width: int
    image_height: int
    scale: float = Field(description="image pixels per screen pixel (1.0 = full resolution)")
    format: str
    bytes: int
    cursor: Point | None = Field(None, description="pointer position in this image's pixels, if inside it")
    screen_cursor: Point | None = Field(None, description="pointer position in absolute screen pixels")


class ScreenInfo(Placed):
    backend: str = Field(description="local: this host's display; osworld or ssh: the remote machine at url")
    url: str | None = Field(description="the remote machine's address; None on the local backend")
    platform: str = Field(description="the platform of the machine the tools act on (sys.platform's names)")
    display: str | None = Field(description="that machine's X display, when known")
    monitors: list[MonitorInfo] = Field(description="0 is all monitors together, 1.. the physical ones")
    default_monitor: int
    screen_rect: Rect = Field(description="the whole screen in absolute screen pixels")
    screenshot_size: tuple[int, int] = Field(description="image size a default screenshot has")
    screenshot_scale: float
    cursor: Point = Field(description="pointer position in the result's space")
    screen_cursor: Point = Field(description="pointer position in absolute screen pixels")


class WindowList(Placed):
    windows: list[WindowInfo] = Field(description="top-level windows, rectangles in the result's space")


class OpenResult(Placed, Launched):
    target: str
    new_windows: list[WindowInfo] = Field(description="windows that appeared after launching")
    record: ActionRecord
