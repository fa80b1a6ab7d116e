"""The zoomed second look of grounding refinement: a crop of the frame around the first guess.

A grounding model sees a whole screen through a pixel budget, so small targets are a few model
pixels wide and a first guess can land beside them. Looking again at a crop centred on that guess
gives the model the neighbourhood at `zoom` times the detail; the crop is itself a `Frame` whose
area is in screen pixels, so the second answer maps back to the screen the same way as the first.
"""

from __future__ import annotations

from dataclasses import replace

from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.geometry import Point, Rect


def zoom_crop(frame: Frame, around: Point, zoom: float) -> Frame:
    """The 1/zoom-sized part of `frame` centred on screen point `around`, shifted to stay inside the frame."""
    area = frame.area
    width, height = max(1, round(area.width / zoom)), max(1, round(area.height / zoom))
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
