"""Screen capture with mss: frames know which screen area they show and when they were taken.

Two things keep a capture of an unchanged 1080p screen cheap (an agent polling the screen, `find_text` asked
again): Pillow keeps freed image memory for the next frame-sized image instead of returning it to the system, and
a full-resolution grab whose pixels equal the previous one's returns the previous image itself, which the OCR
pipeline knows without comparing pixels again (benchmarks/results/find_text_repeat.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from PIL import Image

from symphony_mcp.desktop.frames import new_frame_id
from symphony_mcp.desktop.types import MonitorInfo
from symphony_mcp.errors import DisplayUnavailableError, InvalidInputError
from symphony_mcp.imaging.downscale import BgrxImage, downscale
from symphony_mcp.imaging.geometry import Point, Rect

# Freed image memory Pillow keeps for reuse (blocks of at most 16 MiB; a 1080p RGB frame takes one). Without it
# every frame-sized image is fresh memory from the system, whose first touch (page faults) cost more than the
# conversion itself: grabbing a 1080p frame into an RGB image took 7.7 ms CPU, 3.1 ms with blocks kept.
IMAGE_BLOCKS_KEPT = 4


@dataclass(frozen=True)
class Frame:
    """One captured screenshot of `area`: at full screen resolution, or smaller where it was grabbed at a size."""

    image: Image.Image
    area: Rect
    monitor: int
    cursor: Point | None
    captured_at: float = field(default_factory=time.time)
    id: str = field(default_factory=new_frame_id)


def select_monitor(monitors: list[MonitorInfo], index: int) -> Rect:
    """The area of monitor `index` (mss numbering), or an error naming the valid indexes."""
    if not 0 <= index < len(monitors):
        raise InvalidInputError(f"monitor {index} does not exist: use 0 (all monitors) or 1..{len(monitors) - 1}")
    return monitors[index].screen_rect


class _LastGrab(NamedTuple):
    """A full-resolution grab's area, its raw pixels and the image made of them."""

    area: Rect
    pixels: bytearray
    image: Image.Image


def keep_image_blocks(count: int = IMAGE_BLOCKS_KEPT) -> None:
    """Let Pillow keep up to `count` freed memory blocks for the next images (never fewer than already set)."""
    if Image.core.get_blocks_max() < count:
        Image.core.set_blocks_max(count)


class ScreenCapturer:
    """Wraps one mss instance; mss instances are per thread, so the owner pins it to one thread."""

    def __init__(self, layout: Sequence[Rect] = ()) -> None:
        import mss

        self._layout = list(layout)
        self._last: _LastGrab | None = None
        keep_image_blocks()
        try:
            self._mss = mss.MSS()
        except Exception as exc:  # mss raises ScreenShotError or XError subclasses
            raise DisplayUnavailableError(f"cannot open the display for capture: {exc}") from exc

    def monitors(self) -> list[MonitorInfo]:
        """mss's monitors, or the configured layout (checked against the screen) after monitor 0."""
        result = []
        for index, mon in enumerate(self._mss.monitors):
            rect = Rect(left=mon["left"], top=mon["top"], width=mon["width"], height=mon["height"])
            result.append(MonitorInfo(index=index, screen_rect=rect, primary=bool(mon.get("is_primary"))))
        if not self._layout:
            return result
        screen = result[0].screen_rect
        for rect in self._layout:
            if rect.intersect(screen) != rect:
                raise InvalidInputError(
                    f"configured monitor {rect.describe()} is not on the screen ({screen.describe()}); "
                    "fix SYMPHONY_DISPLAY__MONITORS"
                )
        return [result[0]] + [
            MonitorInfo(index=i, screen_rect=rect, primary=i == 1) for i, rect in enumerate(self._layout, 1)
        ]

    def monitor_rect(self, index: int) -> Rect:
        return select_monitor(self.monitors(), index)

    def grab(self, area: Rect) -> Image.Image:
        """The area as an RGB image. A grab of the same area as the last one, on unchanged pixels, returns the
        previous image object: callers never draw on a grabbed image in place (they draw on a copy), so an identical
        object means identical pixels."""
        pixels, size = self._grab_pixels(area)
        last = self._last
        if last is not None and last.area == area and last.pixels == pixels:
            return last.image
        image = BgrxImage.of_bytes(pixels, size).to_image()
        self._last = _LastGrab(area, pixels, image)
        return image

    def grab_scaled(self, area: Rect, size: tuple[int, int]) -> BgrxImage:
        """The area at `size`, downscaled from the grabbed BGRX pixels and left in that order: a screenshot's JPEG
        is written from them without converting any (encoded anew anyway, so always grabbed afresh)."""
        return downscale(BgrxImage.of_bytes(*self._grab_pixels(area)), size)

    def _grab_pixels(self, area: Rect) -> tuple[bytearray, tuple[int, int]]:
        """The area's BGRX bytes and size: `raw` is the grabbed buffer itself (`bgra` would copy the frame first)."""
        try:
            shot = self._mss.grab({"left": area.left, "top": area.top, "width": area.width, "height": area.height})
        except Exception as exc:
            raise DisplayUnavailableError(f"screen capture failed: {exc}") from exc
        return shot.raw, shot.size

    def close(self) -> None:
        self._mss.close()
