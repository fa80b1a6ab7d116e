"""The screen and its frames: captures, screenshots, and the caller's coordinate space.

Before any screenshot, screenshot space means the image a default screenshot would have; that space
gets a frame id of its own so results can name it. An image given to the caller (a screenshot, or
one drawn over a frame) becomes the latest frame, the space a call without frame_id is in.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from PIL import Image

from symphony_mcp.config import DisplaySettings, ScreenshotSettings
from symphony_mcp.desktop.capture import Frame, select_monitor
from symphony_mcp.desktop.frames import CallerSpace, FrameRegistry, new_frame_id
from symphony_mcp.desktop.protocol import Desktop
from symphony_mcp.desktop.result_schemas import ScreenInfo, ScreenshotInfo
from symphony_mcp.desktop.thread import DesktopThread
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.imaging.encoding import EncodedImage, EncodeOptions, encode_image, target_size
from symphony_mcp.imaging.geometry import CoordinateSpace, ImageMapping, Point, Rect, Region

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shot:
    """What an image given to the caller shows: the screen area, its monitor, the pointer, and the frame id it gets."""

    area: Rect
    monitor: int
    cursor: Point | None
    id: str = field(default_factory=new_frame_id)


class Screen:
    def __init__(self, thread: DesktopThread, display: DisplaySettings, screenshot: ScreenshotSettings) -> None:
        self.thread = thread
        self.display_settings = display
        self.screenshot_settings = screenshot
        self.frames = FrameRegistry()

    def _encode_options(
        self,
        format: str | None = None,
        quality: int | None = None,
        max_width: int | None = None,
        max_height: int | None = None,
    ) -> EncodeOptions:
        """The configured encoding, with per-call overrides where given."""
        shot = self.screenshot_settings
        return EncodeOptions(
            format=format or shot.format,
            quality=quality or shot.quality,
            max_width=max_width or shot.max_width,
            max_height=max_height or shot.max_height,
            max_bytes=shot.max_bytes,
        )

    def _default_mapping(self, area: Rect) -> ImageMapping:
        """How a default screenshot of `area` maps to the screen."""
        width, height = target_size(area.width, area.height, self._encode_options())
        return ImageMapping(area=area, image_width=width, image_height=height)

    async def caller_space(
        self, space: CoordinateSpace = "screenshot", frame_id: str | None = None, monitor: int | None = None
    ) -> CallerSpace:
        """The space a call's coordinates are in: frame_id's frame, else the latest screenshot.

        With `monitor`, the call looks at that monitor instead: a new frame of it at the default
        screenshot size becomes the latest, as a screenshot of that monitor would.
        """
        if space == "screen" and frame_id is not None:
            raise InvalidInputError("frame_id only applies to space='screenshot'")
        if monitor is not None and frame_id is not None:
            raise InvalidInputError("give monitor or frame_id, not both: a frame already shows one area")
        reference = None if monitor is not None else self.frames.reference(frame_id)
        screen = None
        if reference is None or space == "screen":  # the common case needs no trip to the desktop thread
            monitors = await self.thread.run(lambda d: d.monitors())
            screen = monitors[0].screen_rect
            if reference is None:
                index = self.display_settings.monitor if monitor is None else monitor
                reference = new_frame_id(), self._default_mapping(select_monitor(monitors, index))
                self.frames.remember(*reference)
        used, mapping = reference
        named = used if space == "screenshot" else None
        return CallerSpace(space=space, frame_id=named, mapping=mapping, screen=screen)

    async def screen_info(self) -> ScreenInfo:
        machine, monitors, cursor = await self.thread.run(lambda d: (d.machine(), d.monitors(), d.cursor()))
        default = self.display_settings.monitor
        if default >= len(monitors):
            default = 1
        mapping = self._default_mapping(monitors[default].screen_rect)
        return ScreenInfo(
            backend=machine.backend,
            url=machine.url,
            platform=machine.platform,
            display=machine.display,
            monitors=monitors,
            default_monitor=default,
            screen_rect=monitors[0].screen_rect,
            screenshot_size=(mapping.image_width, mapping.image_height),
            screenshot_scale=round(mapping.scale_x, 6),
            cursor=cursor,
            screen_cursor=cursor,
        )

    async def capture(self, area: Rect | None = None) -> Frame:
        """Grab a full-resolution frame of a screen area (clipped to the screen), or of the default monitor."""

        def grab(desktop: Desktop) -> Frame:
            monitor, area_shown = self._area(desktop, None if area is None else 0, area)
            cursor = desktop.cursor()
            return Frame(image=desktop.grab(area_shown), area=area_shown, monitor=monitor, cursor=cursor)

        return await self.thread.run(grab)

    async def screen_for_agent(self, agent: str) -> Image.Image | None:
        """The screen for a tool agent's first prompt (the Coder's, the searcher's), or None when it cannot be
        captured: the agent can work without it, so that is logged, not raised."""
        try:
            return (await self.capture()).image
        except Exception as exc:
            log.warning("%s: no screenshot for its first prompt: %s", agent, exc)
            return None

    async def screen_rect(self) -> Rect:
        """The whole screen (all monitors) in screen pixels."""
        return await self.thread.run(lambda d: _monitor_rect(d, 0))

    def _area(self, desktop: Desktop, monitor: int | None, region: Rect | None) -> tuple[int, Rect]:
        """The monitor index and the screen area a capture shows: the monitor, or the region clipped to it."""
        monitor_index = self.display_settings.monitor if monitor is None else monitor
        area = _monitor_rect(desktop, monitor_index)
        if region is None:
            return monitor_index, area
        clipped = region.intersect(area)
        if clipped is None:
            raise InvalidInputError(
                f"region {region.describe()} does not overlap monitor {monitor_index} ({area.describe()})"
            )
        return monitor_index, clipped

    async def screenshot(
        self,
        view: CallerSpace,
        monitor: int | None = None,
        region: Region | None = None,
        draw_cursor: bool | None = None,
        format: str | None = None,
        quality: int | None = None,
        max_width: int | None = None,
        max_height: int | None = None,
    ) -> tuple[EncodedImage, ScreenshotInfo]:
        """Capture a monitor, or a region given in the caller's space; the image becomes the latest frame."""
        options = self._encode_options(format, quality, max_width, max_height)
        region_rect = view.region_to_screen(region) if region is not None else None
        want_marker = self.screenshot_settings.draw_cursor if draw_cursor is None else draw_cursor

        def grab_and_encode(desktop: Desktop) -> tuple[Shot, Rect, EncodedImage]:
            # One trip to the desktop thread: a screenshot is latency-bound. The picture is grabbed at the image size
            # (downscaled before any conversion, see `Desktop.grab_scaled`), so encoding only compresses it.
            asked = 0 if region_rect is not None and monitor is None else monitor
            index, area = self._area(desktop, asked, region_rect)
            cursor = desktop.cursor()
            picture = desktop.grab_scaled(area, target_size(area.width, area.height, options))
            marker = None
            if want_marker and cursor is not None and area.contains(cursor.x, cursor.y):
                marker = (
                    (cursor.x - area.left + 0.5) * picture.width / area.width - 0.5,
                    (cursor.y - area.top + 0.5) * picture.height / area.height - 0.5,
                )
            return Shot(area, index, cursor), _monitor_rect(desktop, 0), encode_image(picture, options, marker)

        shot, screen, encoded = await self.thread.run(grab_and_encode)
        return encoded, self._describe(shot, screen, encoded)

    async def make_latest(self, frame: Frame, image: Image.Image) -> tuple[EncodedImage, ScreenshotInfo]:
        """Encode an image drawn over `frame` (e.g. annotated); it becomes the latest frame, like a screenshot."""
        encoded = await asyncio.to_thread(encode_image, image, self._encode_options())
        shot = Shot(frame.area, frame.monitor, frame.cursor, frame.id)
        return encoded, self._describe(shot, await self.screen_rect(), encoded)

    def _describe(self, shot: Shot, screen: Rect, encoded: EncodedImage) -> ScreenshotInfo:
        """Remember the image's mapping (it becomes the latest frame) and describe it."""
        mapping = ImageMapping(area=shot.area, image_width=encoded.width, image_height=encoded.height)
        self.frames.remember(shot.id, mapping)
        cursor_image = None
        if shot.cursor is not None and shot.area.contains(shot.cursor.x, shot.cursor.y):
            cursor_image = mapping.point_to_image(shot.cursor)
        return ScreenshotInfo(
            space="screenshot",
            frame_id=shot.id,
            monitor=shot.monitor,
            screen_area=shot.area,
            screen_width=screen.width,
            screen_height=screen.height,
            image_width=encoded.width,
            image_height=encoded.height,
            scale=round(mapping.scale_x, 6),
            format=encoded.format,
            bytes=len(encoded.data),
            cursor=cursor_image,
            screen_cursor=shot.cursor,
        )


def _monitor_rect(desktop: Desktop, index: int) -> Rect:
    return select_monitor(desktop.monitors(), index)
