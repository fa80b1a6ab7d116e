"""Downscale with a box filter: each screen pixel goes into the one image pixel whose area holds its centre.

A one-pixel text stroke so stays one pixel wide and in place (a wider filter smears it over two image pixels).
Pillow's BOX resize follows that rule, but a default screenshot of a 1080p screen spent 16.8 ms CPU grabbing the
frame, converting it from BGRX to RGB and resizing it to 1280x720, against 11.5 ms for issue 26's whole reference
(grab and JPEG-encode the full frame). Where every image pixel takes one or two screen pixels along each axis (any
downscale up to 2x), the average of an image pixel's screen pixels is a bilinear sample at their middle: OpenCV's
remap takes those samples straight from the grabbed four-byte pixels, 8.4 ms CPU with the grab
(benchmarks/results/desktop_roundtrip.md). Larger factors go to Pillow's BOX resize.

A grabbed X11 frame stays a `BgrxImage` until something needs RGB: OpenCV's JPEG encoder reads BGR order as it is,
so a default screenshot is never converted at all (`encoding.encode_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, overload

import numpy as np
from PIL import Image

if TYPE_CHECKING:
    from cv2.typing import MatLike
    from numpy.typing import NDArray

Size = tuple[int, int]
_Maps = tuple["MatLike", "MatLike"]


@dataclass(frozen=True)
class BgrxImage:
    """An image in the four-byte BGRX order X11 grabs come in: `pixels` is height x width x 4, rows packed."""

    pixels: NDArray[np.uint8]

    @classmethod
    def of_bytes(cls, data: bytes | bytearray, size: Size) -> BgrxImage:
        """A view of grabbed bytes (no copy)."""
        return cls(np.frombuffer(data, np.uint8).reshape(size[1], size[0], 4))

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def size(self) -> Size:
        return self.width, self.height

    def to_image(self) -> Image.Image:
        """The RGB image (a conversion of every pixel: only where Pillow must work on it)."""
        return Image.frombytes("RGB", self.size, self.pixels, "raw", "BGRX")


# What a desktop hands over for encoding: an RGB image, or X11 pixels not yet converted.
Picture = Image.Image | BgrxImage


@overload
def downscale(image: Image.Image, size: Size) -> Image.Image: ...
@overload
def downscale(image: BgrxImage, size: Size) -> BgrxImage: ...
def downscale(image: Picture, size: Size) -> Picture:
    """`image` at `size` (no larger), each image pixel the average of its screen pixels; the same kind of picture."""
    if size == image.size:
        return image
    if isinstance(image, BgrxImage):
        return BgrxImage(_downscale_four_bytes(image.pixels, size))
    if image.mode != "RGB":
        return image.resize(size, Image.Resampling.BOX)
    # An RGB image holds four bytes a pixel: "RGBX" copies them as they are; the fourth stays unused.
    pixels = np.frombuffer(image.tobytes("raw", "RGBX"), np.uint8).reshape(image.height, image.width, 4)
    return Image.frombytes("RGB", size, _downscale_four_bytes(pixels, size), "raw", "RGBX")


def _downscale_four_bytes(pixels: NDArray[np.uint8], size: Size) -> NDArray[np.uint8]:
    """Four-byte pixels (any channel order: each channel is averaged alone) at `size`."""
    source = (pixels.shape[1], pixels.shape[0])
    maps = _sample_maps(source, size)
    if maps is None:
        # Pillow resizes the four bytes as they are (a view, no copy), whatever their order.
        view = Image.frombuffer("RGBX", source, np.ascontiguousarray(pixels), "raw", "RGBX", 0, 1)
        return np.asarray(view.resize(size, Image.Resampling.BOX))
    import cv2

    return np.asarray(cv2.remap(pixels, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE))


@lru_cache(maxsize=8)
def _sample_maps(source: Size, size: Size) -> _Maps | None:
    """Where remap samples each image pixel (OpenCV's fixed-point maps), or None when some image pixel takes more
    than two screen pixels along an axis. A screenshot's size repeats, so the maps are built once per size pair."""
    columns = sample_positions(source[0], size[0])
    rows = sample_positions(source[1], size[1])
    if columns is None or rows is None:
        return None
    import cv2

    map_x = np.ascontiguousarray(np.broadcast_to(columns, (size[1], size[0])))
    map_y = np.ascontiguousarray(np.broadcast_to(rows[:, None], (size[1], size[0])))
    # Fixed point in 1/32 pixel: the half-pixel positions are exact, so a sample is the plain average.
    fixed, fraction = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)
    return fixed, fraction


def sample_positions(source: int, size: int) -> NDArray[np.float32] | None:
    """Per image pixel along one axis (`size` of them over `source` screen pixels), the middle of the screen pixels
    it averages; None when one takes more than two.

    Screen pixel i (centre i + 0.5) goes to image pixel j where j * source / size < i + 0.5 <= (j + 1) * source /
    size, computed in integers so that a centre on a boundary always falls the same way (Pillow's floating point
    drops such a pixel from both neighbours: column 960 of a 1921-pixel row at 1280).
    """
    centres_doubled = 2 * np.arange(source, dtype=np.int64) + 1
    owner = -((-centres_doubled * size) // (2 * source)) - 1  # ceil((i + 0.5) * size / source) - 1
    image_pixels = np.arange(size)
    first = np.searchsorted(owner, image_pixels, side="left")
    last = np.searchsorted(owner, image_pixels, side="right") - 1
    if np.any(last < first) or np.any(last - first > 1):
        return None
    return ((first + last) / 2).astype(np.float32)
