"""Screen geometry and the mapping between screen pixels and the image a caller received."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from symphony_mcp.errors import InvalidInputError
from symphony_mcp.limits import MAX_COORDINATE

# "screenshot": pixels of a screenshot image (a frame); "screen": absolute screen pixels (all monitors).
CoordinateSpace = Literal["screenshot", "screen"]


# Cores work in screen pixels; results name the space their points and rectangles are given in. The docstrings
# are short because each is repeated in the output schema of every tool whose result holds one.
class Point(BaseModel):
    """A pixel position."""

    x: int
    y: int


class Rect(BaseModel):
    """An axis-aligned pixel rectangle."""

    left: int
    top: int
    width: int = Field(ge=0)
    height: int = Field(ge=0)

    def contains(self, x: int, y: int) -> bool:
        return self.left <= x < self.left + self.width and self.top <= y < self.top + self.height

    def intersect(self, other: Rect) -> Rect | None:
        left, top = max(self.left, other.left), max(self.top, other.top)
        right = min(self.left + self.width, other.left + other.width)
        bottom = min(self.top + self.height, other.top + other.height)
        if right <= left or bottom <= top:
            return None
        return Rect(left=left, top=top, width=right - left, height=bottom - top)

    def describe(self) -> str:
        return f"x {self.left}..{self.left + self.width - 1}, y {self.top}..{self.top + self.height - 1}"


# A rectangle a caller asks for, with the fields of every box in results (Rect): any box read from a result
# passes as it is. Sides may be fractional (a scaled screenshot's pixels). No docstring: it would be repeated
# in the schema of every tool that takes a region, and the argument's own description says what it is.
class Region(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)  # unknown keys are ignored: no error per key to echo back

    left: float = Field(ge=-MAX_COORDINATE, le=MAX_COORDINATE)
    top: float = Field(ge=-MAX_COORDINATE, le=MAX_COORDINATE)
    width: float = Field(gt=0, le=MAX_COORDINATE)
    height: float = Field(gt=0, le=MAX_COORDINATE)


def union(boxes: list[Rect]) -> Rect:
    """Smallest rectangle containing all boxes (at least one)."""
    left, top = min(b.left for b in boxes), min(b.top for b in boxes)
    right = max(b.left + b.width for b in boxes)
    bottom = max(b.top + b.height for b in boxes)
    return Rect(left=left, top=top, width=right - left, height=bottom - top)


def fit_within(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """Largest size with the same aspect ratio that fits the bounds; never upscales."""
    scale = min(1.0, max_width / width, max_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


@dataclass(frozen=True)
class ImageMapping:
    """How an image shown to a caller relates to the screen: which screen area, at what size.

    Coordinates a caller sends back are in image pixels; `to_screen` maps them to the
    screen pixel they point at, and `to_image` the other way.
    """

    area: Rect
    image_width: int
    image_height: int

    @property
    def scale_x(self) -> float:
        return self.image_width / self.area.width

    @property
    def scale_y(self) -> float:
        return self.image_height / self.area.height

    def to_screen(self, x: float, y: float) -> Point:
        sx = self.area.left + (x + 0.5) / self.scale_x - 0.5
        sy = self.area.top + (y + 0.5) / self.scale_y - 0.5
        return Point(
            x=_clamp(round(sx), self.area.left, self.area.left + self.area.width - 1),
            y=_clamp(round(sy), self.area.top, self.area.top + self.area.height - 1),
        )

    def to_image(self, point: Point) -> tuple[float, float]:
        return (
            (point.x - self.area.left + 0.5) * self.scale_x - 0.5,
            (point.y - self.area.top + 0.5) * self.scale_y - 0.5,
        )

    def point_to_image(self, point: Point) -> Point:
        """The image pixel showing screen pixel `point` (may lie outside the image for points outside the area)."""
        x, y = self.to_image(point)
        return Point(x=round(x), y=round(y))

    def rect_to_image(self, rect: Rect) -> Rect:
        """The image pixels covering screen rectangle `rect`: its edges scaled, at least one pixel each way."""
        left = math.floor((rect.left - self.area.left) * self.scale_x)
        top = math.floor((rect.top - self.area.top) * self.scale_y)
        right = math.ceil((rect.left + rect.width - self.area.left) * self.scale_x)
        bottom = math.ceil((rect.top + rect.height - self.area.top) * self.scale_y)
        return Rect(left=left, top=top, width=max(1, right - left), height=max(1, bottom - top))

    def check_image_point(self, x: float, y: float) -> None:
        """Raise a caller-facing error unless (x, y) lies inside the image."""
        if not (0 <= x <= self.image_width - 1 and 0 <= y <= self.image_height - 1):
            raise InvalidInputError(
                f"point ({x:g}, {y:g}) is outside the screenshot: x must be 0..{self.image_width - 1} "
                f"and y 0..{self.image_height - 1} (image {self.image_width}x{self.image_height} "
                f"showing screen {self.area.describe()})"
            )


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))
