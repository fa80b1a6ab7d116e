"""The grounder's second look (vision/grounding/zoom.py): a crop around the first guess, in screen pixels."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from symphony_mcp.desktop.capture import Frame
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.vision.grounding.families import FAMILIES
from symphony_mcp.vision.grounding.zoom import zoom_crop


def _gradient_frame(area: Rect, scale: int) -> Frame:
    """A frame whose pixel at image (x, y) has red = x // scale % 256, green = y // scale % 256."""
    xs, ys = np.meshgrid(np.arange(area.width * scale) // scale, np.arange(area.height * scale) // scale)
    pixels = np.stack([xs % 256, ys % 256, np.zeros_like(xs)], axis=-1).astype(np.uint8)
    return Frame(image=Image.fromarray(pixels), area=area, monitor=1, cursor=None)


@pytest.mark.parametrize(
    ("around", "expected"),
    [
        (Point(x=1000, y=500), Rect(left=1000 - 480, top=500 - 270, width=960, height=540)),  # centred
        (Point(x=10, y=1070), Rect(left=0, top=540, width=960, height=540)),  # shifted inside at a corner
        (Point(x=1919, y=0), Rect(left=960, top=0, width=960, height=540)),
    ],
)
def test_zoom_crop_is_centred_on_the_guess_and_stays_inside(around: Point, expected: Rect) -> None:
    frame = _gradient_frame(Rect(left=0, top=0, width=1920, height=1080), scale=1)
    crop = zoom_crop(frame, around, zoom=2)
    assert crop.area == expected and crop.image.size == (960, 540) and crop.id == frame.id
    assert crop.image.getpixel((7, 9))[:2] == ((expected.left + 7) % 256, (expected.top + 9) % 256)


def test_zoom_crop_takes_a_size_the_model_needs_no_resampling_for() -> None:
    frame = _gradient_frame(Rect(left=0, top=0, width=1920, height=1080), scale=1)
    resize = FAMILIES["ui-tars-1.5"].resize
    assert resize is not None
    crop = zoom_crop(frame, Point(x=960, y=540), zoom=2, snap=resize.size)
    assert crop.area == Rect(left=960 - 476, top=540 - 266, width=952, height=532)
    whole = zoom_crop(frame, Point(x=960, y=540), zoom=1.5, snap=lambda w, h, _: (w * 2, h * 2))
    assert whole.area.width == 1280  # a snapped size larger than the frame is not taken


def test_zoom_crop_of_a_hidpi_frame_on_a_second_monitor_keeps_screen_pixels() -> None:
    area = Rect(left=1920, top=100, width=800, height=600)
    frame = _gradient_frame(area, scale=2)  # 1600x1200 image of an 800x600 screen area
    crop = zoom_crop(frame, Point(x=1920 + 400, y=100 + 300), zoom=4)
    assert crop.area == Rect(left=1920 + 300, top=100 + 225, width=200, height=150)
    assert crop.image.size == (400, 300)
    assert crop.image.getpixel((0, 0))[:2] == (300 % 256, 225)
