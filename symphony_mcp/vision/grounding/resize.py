"""Qwen-style smart resize: the image size a Qwen-VL-based grounder actually sees.

Models of the Qwen2.5-VL lineage (UI-TARS-1.5, GTA1, OpenCUA, ScaleCUA) answer in pixels of the
image after this resize. Sending the image already at that size makes the server keep it as is,
so the answer is in the pixel space of the image we sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from symphony_mcp.errors import InvalidInputError

MAX_ASPECT_RATIO = 200


@dataclass(frozen=True)
class SmartResize:
    factor: int
    min_pixels: int
    max_pixels: int

    def size(self, width: int, height: int, shrink: float = 1.0) -> tuple[int, int]:
        """(width, height) to send; `shrink` < 1 asks for that fraction of the pixels (for byte limits)."""
        budget = self.max_pixels
        if shrink < 1:
            budget = max(self.min_pixels, int(min(self.max_pixels, width * height) * shrink))
        new_height, new_width = smart_resize(height, width, self.factor, self.min_pixels, budget)
        return new_width, new_height


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """(height, width), each a multiple of `factor`, pixel count within bounds, aspect ratio kept."""
    if min(height, width) <= 0 or max(height, width) / min(height, width) > MAX_ASPECT_RATIO:
        raise InvalidInputError(
            f"cannot resize a {width}x{height} image for the grounder: the aspect ratio must be at most "
            f"{MAX_ASPECT_RATIO}:1"
        )
    new_height = max(factor, round(height / factor) * factor)
    new_width = max(factor, round(width / factor) * factor)
    if new_height * new_width > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        new_height = max(factor, math.floor(height / beta / factor) * factor)
        new_width = max(factor, math.floor(width / beta / factor) * factor)
    elif new_height * new_width < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        new_height = math.ceil(height * beta / factor) * factor
        new_width = math.ceil(width * beta / factor) * factor
    return new_height, new_width
