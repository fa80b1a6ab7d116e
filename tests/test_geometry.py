"""Pixel geometry (imaging/geometry.py): fitting a size, mapping between screen and image pixels."""

from __future__ import annotations

import random

import pytest

from symphony_mcp.errors import InvalidInputError
from symphony_mcp.imaging.geometry import ImageMapping, Point, Rect, fit_within


def test_fit_within_keeps_aspect_and_never_upscales() -> None:
    assert fit_within(1920, 1080, 1280, 800) == (1280, 720)
    assert fit_within(1080, 1920, 1280, 800) == (450, 800)
    assert fit_within(640, 480, 1280, 800) == (640, 480)


@pytest.mark.parametrize("image_size", [(1280, 720), (640, 360), (1920, 1080), (333, 187)])
def test_mapping_round_trips_every_screen_pixel_within_half_a_source_pixel(image_size: tuple[int, int]) -> None:
    mapping = ImageMapping(
        area=Rect(left=100, top=50, width=1920, height=1080), image_width=image_size[0], image_height=image_size[1]
    )
    rng = random.Random(7)
    for _ in range(500):
        point = Point(x=rng.randrange(100, 2020), y=rng.randrange(50, 1130))
        back = mapping.to_screen(*mapping.to_image(point))
        assert back == point
    # An image pixel maps to the centre of the screen block it covers, never outside the area.
    block = 1920 / image_size[0]
    first, last = mapping.to_screen(0, 0), mapping.to_screen(image_size[0] - 1, image_size[1] - 1)
    assert 100 <= first.x < 100 + block and 50 <= first.y < 50 + block
    assert 2019 - block < last.x <= 2019 and 1129 - block < last.y <= 1129


def test_mapping_rejects_points_outside_the_image() -> None:
    mapping = ImageMapping(area=Rect(left=0, top=0, width=1920, height=1080), image_width=1280, image_height=720)
    with pytest.raises(InvalidInputError, match=r"x must be 0\.\.1279 and y 0\.\.719"):
        mapping.check_image_point(1280, 10)
