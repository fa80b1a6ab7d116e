"""The box-filter downscale (imaging/downscale.py): Pillow's BOX result, fast, from raw grabbed pixels too."""

from __future__ import annotations

import random

import numpy as np
import pytest
from PIL import Image

from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.imaging.downscale import BgrxImage, downscale, sample_positions
from testkit.display import SCREEN


def noisy_image(width: int, height: int) -> Image.Image:
    return Image.frombytes("RGB", (width, height), random.Random(7).randbytes(width * height * 3))


def largest_difference(first: Image.Image, second: Image.Image) -> int:
    return int(np.abs(np.asarray(first, np.int16) - np.asarray(second, np.int16)).max())


@pytest.mark.parametrize(
    ("source", "size"),
    [((1920, 1080), (1280, 720)), ((2560, 1440), (1280, 720)), ((1440, 900), (1280, 800)), ((1600, 900), (1280, 720))],
)
def test_screen_sizes_downscale_fast_to_pillows_box_result(source: tuple[int, int], size: tuple[int, int]) -> None:
    """Up to 2x every image pixel averages one or two screen pixels a side: remap samples them, and the result is
    Pillow's BOX resize up to rounding (Pillow rounds after each axis, remap once)."""
    assert sample_positions(source[0], size[0]) is not None and sample_positions(source[1], size[1]) is not None
    image = noisy_image(*source)
    fast = downscale(image, size)
    assert fast.mode == "RGB" and fast.size == size
    assert largest_difference(fast, image.resize(size, Image.Resampling.BOX)) <= 1


def test_larger_factors_and_other_modes_use_pillows_box() -> None:
    assert sample_positions(3840, 1280) is None  # three screen pixels an image pixel
    image = noisy_image(3840, 2160)
    assert downscale(image, (1280, 720)).tobytes() == image.resize((1280, 720), Image.Resampling.BOX).tobytes()
    grey = image.convert("L")
    assert downscale(grey, (1600, 900)).tobytes() == grey.resize((1600, 900), Image.Resampling.BOX).tobytes()
    assert downscale(image, image.size) is image


@pytest.mark.parametrize(("source", "size"), [(6, 4), (1921, 1280), (1366, 1280), (3840, 1280), (10, 3)])
def test_every_screen_pixel_lands_in_exactly_one_image_pixel(source: int, size: int) -> None:
    """A one-pixel stroke anywhere stays one image pixel wide, in the image pixel whose area holds its centre, on
    both axes; ties included (column 960 of 1921 at 1280 sits on a boundary: Pillow's BOX drops it)."""
    for stroke in range(source):
        owner = int(np.ceil((stroke + 0.5) * size / source)) - 1
        row = Image.new("RGB", (source, 2))
        for y in range(2):
            row.putpixel((stroke, y), (255, 255, 255))
        inked = np.nonzero(np.asarray(downscale(row, (size, 1)))[0, :, 0])[0].tolist()
        assert inked == [owner], f"stroke at x={stroke}"
        column = row.transpose(Image.Transpose.TRANSPOSE)
        inked = np.nonzero(np.asarray(downscale(column, (1, size)))[:, 0, 0])[0].tolist()
        assert inked == [owner], f"stroke at y={stroke}"


def test_grabbed_bgrx_pixels_come_out_in_rgb_order() -> None:
    colours = [(250, 20, 5), (5, 240, 30), (10, 25, 235)]  # red, green, blue stripes, 12 pixels wide each
    bgrx = bytes(value for _ in range(4) for r, g, b in colours for _ in range(12) for value in (b, g, r, 0))
    for size in [(36, 4), (24, 2), (9, 1)]:  # full size, the remap path, Pillow's path (4x)
        picture = downscale(BgrxImage.of_bytes(bgrx, (36, 4)), size)
        assert isinstance(picture, BgrxImage) and picture.size == size
        image = picture.to_image()
        assert image.mode == "RGB" and image.size == size
        third = size[0] // 3
        assert [image.getpixel((third * i + third // 2, 0)) for i in range(3)] == colours


def test_screen_grabbed_at_a_size_is_the_full_grab_downscaled(xdisplay: object) -> None:
    """The capturer downscales the BGRX frame and never converts it: the same pixels as converting, then
    downscaling."""
    capturer = ScreenCapturer()
    try:
        area = capturer.monitor_rect(1)
        assert (area.width, area.height) == SCREEN
        full = capturer.grab(area)
        for size in [(1280, 720), (640, 360), (area.width, area.height)]:
            small = capturer.grab_scaled(area, size)
            assert isinstance(small, BgrxImage) and small.size == size
            assert small.to_image().tobytes() == downscale(full, size).tobytes()
    finally:
        capturer.close()
