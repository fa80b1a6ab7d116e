"""Encode frames for hosts and models: bounded size, bounded bytes, optional cursor marker."""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, ImageDraw

from symphony_mcp.imaging.downscale import BgrxImage, Picture, downscale
from symphony_mcp.imaging.geometry import fit_within
from symphony_mcp.imaging.jpeg_halves import jpeg_of_bgrx

_PIL_FORMATS = {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP"}
_MIN_QUALITY = 40
_MIN_SIDE = 320


@dataclass(frozen=True)
class EncodedImage:
    data: bytes
    format: str
    width: int
    height: int

    @property
    def mime_type(self) -> str:
        return f"image/{self.format}"


@dataclass(frozen=True)
class EncodeOptions:
    format: str = "jpeg"
    quality: int = 80
    max_width: int = 1280
    max_height: int = 800
    max_bytes: int = 1_000_000


def target_size(width: int, height: int, options: EncodeOptions) -> tuple[int, int]:
    return fit_within(width, height, options.max_width, options.max_height)


def encode_image(image: Picture, options: EncodeOptions, marker: tuple[float, float] | None = None) -> EncodedImage:
    """Resize to the bounds, then encode; if the bytes exceed the budget, lower quality, then size.

    `marker` is a point in `image` pixels that gets a cursor marker drawn after resizing.
    """
    width, height = target_size(image.width, image.height, options)
    quality = options.quality
    while True:
        resized = downscale(image, (width, height))
        if marker is not None:
            resized = draw_cursor_marker(
                as_rgb(resized),
                (marker[0] + 0.5) * width / image.width - 0.5,
                (marker[1] + 0.5) * height / image.height - 0.5,
            )
        data = encode_bytes(resized, options.format, quality)
        if len(data) <= options.max_bytes:
            return EncodedImage(data=data, format=options.format, width=width, height=height)
        if options.format != "png" and quality > _MIN_QUALITY:
            quality = max(_MIN_QUALITY, quality - 15)
        elif min(width, height) > _MIN_SIDE:
            width, height = max(1, round(width * 0.8)), max(1, round(height * 0.8))
        else:
            return EncodedImage(data=data, format=options.format, width=width, height=height)


def encode_bytes(image: Picture, fmt: str, quality: int) -> bytes:
    """The image in `fmt`. Grabbed BGRX pixels go to JPEG as they are (`jpeg_halves`); Pillow's formats need RGB."""
    if isinstance(image, BgrxImage) and fmt == "jpeg":
        return jpeg_of_bgrx(image.pixels, quality)
    buffer, pillow = io.BytesIO(), as_rgb(image)
    if fmt == "png":
        pillow.save(buffer, "PNG", compress_level=1)
    elif fmt == "webp":
        pillow.save(buffer, "WEBP", quality=quality, method=0)
    else:
        pillow.save(buffer, _PIL_FORMATS[fmt], quality=quality)
    return buffer.getvalue()


def as_rgb(picture: Picture) -> Image.Image:
    """The picture as a Pillow image: grabbed BGRX pixels are converted only where Pillow must work on them."""
    return picture.to_image() if isinstance(picture, BgrxImage) else picture


def draw_cursor_marker(image: Image.Image, x: float, y: float) -> Image.Image:
    """Return a copy with a high-contrast crosshair ring at (x, y), visible on light and dark UIs."""
    marked = image.copy()
    draw = ImageDraw.Draw(marked)
    radius = max(6, round(min(image.size) / 80))
    for width, colour in ((5, (255, 255, 255)), (2, (255, 0, 0))):
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=colour, width=width)
        draw.line((x - 2 * radius, y, x + 2 * radius, y), fill=colour, width=max(1, width - 2))
        draw.line((x, y - 2 * radius, x, y + 2 * radius), fill=colour, width=max(1, width - 2))
    return marked
