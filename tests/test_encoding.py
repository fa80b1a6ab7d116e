"""Image encoding under size and byte limits (imaging/encoding.py)."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from symphony_mcp.imaging.downscale import BgrxImage
from symphony_mcp.imaging.encoding import EncodeOptions, encode_image


def noisy_image(width: int, height: int) -> Image.Image:
    return Image.frombytes("RGB", (width, height), random.Random(1).randbytes(width * height * 3))


def test_encoding_honours_byte_budget_by_lowering_quality_then_size() -> None:
    image = noisy_image(1920, 1080)  # incompressible: the worst case for the budget
    encoded = encode_image(
        image, EncodeOptions(format="jpeg", quality=95, max_width=1920, max_height=1080, max_bytes=300_000)
    )
    assert len(encoded.data) <= 300_000
    assert encoded.width < 1920 and encoded.width / encoded.height == pytest.approx(16 / 9, rel=0.01)
    png = encode_image(image.resize((400, 300)), EncodeOptions(format="png", max_bytes=10_000_000))
    assert png.data.startswith(b"\x89PNG") and (png.width, png.height) == (400, 300)
    webp = encode_image(image.resize((400, 300)), EncodeOptions(format="webp"))
    assert webp.data[8:12] == b"WEBP"


def test_downscale_keeps_a_one_pixel_stroke_in_the_image_pixel_that_shows_it() -> None:
    """Each screen pixel goes into exactly one image pixel, the one whose area holds it: a one-pixel text stroke
    stays one pixel wide and in place at any position (a wider filter smears it over two image pixels)."""
    for stroke_x in range(6):
        stroke = Image.new("RGB", (6, 3))
        for y in range(3):
            stroke.putpixel((stroke_x, y), (255, 255, 255))
        encoded = encode_image(stroke, EncodeOptions(format="png", max_width=4, max_height=2))  # scale 1.5
        with Image.open(io.BytesIO(encoded.data)) as image:
            inked = [x for x in range(image.width) if image.getpixel((x, 0))[0] > 0]
        assert inked == [int(stroke_x / 1.5)], f"stroke at screen x={stroke_x}"


def bgrx_of(image: Image.Image) -> BgrxImage:
    """The image as an X11 grab holds it: four bytes a pixel, blue first."""
    return BgrxImage.of_bytes(image.tobytes("raw", "BGRX"), image.size)


def test_grabbed_bgrx_pixels_encode_to_the_same_images_as_their_rgb_conversion() -> None:
    """A screenshot's JPEG is written from the grabbed BGRX pixels without converting them: the same bytes as
    Pillow's JPEG of the converted image, through the byte budget and the downscale; a marker or another format
    converts them first."""
    image = noisy_image(960, 540)
    grabbed = bgrx_of(image)
    cases = [
        EncodeOptions(format="jpeg"),
        EncodeOptions(format="jpeg", max_width=640, max_height=400),  # downscaled as BGRX
        EncodeOptions(format="jpeg", quality=95, max_bytes=150_000),  # quality lowered, then size, for the budget
        EncodeOptions(format="png", max_width=480, max_height=270),
        EncodeOptions(format="webp", max_width=480, max_height=270),
    ]
    for options in cases:
        for marker in (None, (100.0, 50.0)):
            from_bgrx, from_rgb = encode_image(grabbed, options, marker), encode_image(image, options, marker)
            assert from_bgrx == from_rgb, (options, marker)
    budgeted = encode_image(grabbed, cases[2])
    assert len(budgeted.data) <= 150_000 and budgeted.width < 960
    with Image.open(io.BytesIO(encode_image(grabbed, cases[0]).data)) as decoded:
        assert decoded.mode == "RGB" and decoded.size == (960, 540)
