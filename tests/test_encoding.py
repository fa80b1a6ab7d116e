"""Image encoding under size and byte limits (imaging/encoding.py)."""

from __future__ import annotations

import io
import random
import re
import subprocess

import numpy as np
import pytest
from PIL import Image

from symphony_mcp.imaging.downscale import BgrxImage
from symphony_mcp.imaging.encoding import EncodeOptions, encode_bytes, encode_image


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


def decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def test_grabbed_bgrx_pixels_encode_to_the_same_images_as_their_rgb_conversion() -> None:
    """A screenshot's JPEG is written from the grabbed BGRX pixels without converting them: the same image as
    Pillow's JPEG of the converted pixels, through the downscale and the byte budget; a marker or another format
    converts them first (then the same bytes)."""
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
            shape = (from_bgrx.format, from_bgrx.width, from_bgrx.height)
            assert shape == (from_rgb.format, from_rgb.width, from_rgb.height), (options, marker)
            if options.format != "jpeg" or marker is not None:
                assert from_bgrx.data == from_rgb.data, (options, marker)
            assert np.array_equal(decoded(from_bgrx.data), decoded(from_rgb.data)), (options, marker)
    budgeted = encode_image(grabbed, cases[2])
    assert len(budgeted.data) <= 150_000 and budgeted.width < 960


def screen_like(width: int, height: int) -> BgrxImage:
    """BGRX pixels with flat areas, sharp edges and one-pixel lines, like a screen of text and widgets."""
    blocks = np.random.default_rng(5).integers(0, 256, (height // 8 + 1, width // 8 + 1, 4), dtype=np.uint8)
    pixels = np.repeat(np.repeat(blocks, 8, axis=0), 8, axis=1)[:height, :width].copy()
    pixels[::7] = 255
    pixels[:, ::11] = 0
    return BgrxImage(pixels)


def ffmpeg_decoded(data: bytes) -> bytes:
    """The JPEG decoded by FFmpeg's own decoder (not libjpeg), as RGB bytes."""
    command = ["ffmpeg", "-v", "error", "-f", "jpeg_pipe", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    done = subprocess.run(command, input=data, capture_output=True, check=True, timeout=60)
    return done.stdout


@pytest.mark.parametrize("size", [(1280, 720), (1366, 768), (999, 257), (1920, 1080), (320, 200)])
def test_a_jpeg_written_in_halves_decodes_to_the_image_written_whole(size: tuple[int, int]) -> None:
    """Two halves joined at a restart marker (one per MCU row) are one valid JPEG: libjpeg-turbo (Pillow) and
    FFmpeg's own decoder both read exactly the pixels of Pillow's JPEG of the whole converted image."""
    width, height = size
    picture = screen_like(width, height)
    halves = encode_bytes(picture, "jpeg", 80)
    whole = encode_bytes(picture.to_image(), "jpeg", 80)
    rows = -(-height // 16)
    if rows >= 16:  # written in halves: a restart interval and a marker after every MCU row but the last
        assert b"\xff\xdd" in halves and b"\xff\xdd" not in whole
        assert len(re.findall(rb"\xff[\xd0-\xd7]", halves)) == rows - 1
    else:
        assert halves == whole
    assert np.array_equal(decoded(halves), decoded(whole))
    assert decoded(halves).shape == (height, width, 3)
    assert ffmpeg_decoded(halves) == ffmpeg_decoded(whole)
