"""The zoomed second look of grounding refinement: a crop of the frame around the first guess.

A first guess can land beside a small target among many similar ones. Looking again at a crop
centred on that guess shows the model only that neighbourhood, and in more detail when the whole
screen had to be shrunk to fit the model's pixel budget or the endpoint's image limits (at 1080p
the smart-resize families' budgets already take the screen 1:1). The crop is itself a `Frame`
whose area is in screen pixels, so the second answer maps back to the screen like the first.
"""

from __future__ import annotations

from dataclasses import replace

from symphony_mcp.desktop.capture import Frame
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.models.images import Sizer


def zoom_crop(frame: Frame, around: Point, zoom: float, snap: Sizer | None = None) -> Frame:
    """The 1/zoom-sized part of `frame` centred on screen point `around`, shifted to stay inside the frame.

    `snap` turns the size into one the model takes as is (a smart-resize size), so the crop is not resampled.
    """
    area = frame.area
    width, height = max(1, round(area.width / zoom)), max(1, round(area.height / zoom))
    if snap is not None:
        snapped = snap(width, height, 1.0)
        if snapped[0] <= area.width and snapped[1] <= area.height:
            width, height = snapped
    left = _clamp(round(around.x - area.left - width / 2), area.width - width)
    top = _clamp(round(around.y - area.top - height / 2), area.height - height)
    # Cut on whole screen pixels, so a HiDPI frame's crop still maps exactly back to the screen.
    scale_x, scale_y = frame.image.width / area.width, frame.image.height / area.height
    box = (
        round(left * scale_x),
        round(top * scale_y),
        round((left + width) * scale_x),
        round((top + height) * scale_y),
    )
    crop_area = Rect(left=area.left + left, top=area.top + top, width=width, height=height)
    return replace(frame, image=frame.image.crop(box), area=crop_area)


def _clamp(start: int, last: int) -> int:
    return min(max(start, 0), last)
