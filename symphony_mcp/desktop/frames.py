"""The frame registry and the caller's coordinate space.

A frame is one screenshot image a caller can refer to by `frame_id`: which screen area it shows,
at what image size. The contract every tool keeps: a caller's coordinates are in the pixel space of
one frame (the latest screenshot unless it names another), or in absolute screen pixels when it
says space='screen'; every coordinate a result carries is in that same space, and the result names
it. So a value read from any result can be passed unchanged to any tool that takes coordinates.

Cores work in screen pixels. A `CallerSpace` maps a caller's points to the screen on the way in,
and `express` maps a whole result back into the caller's space on the way out.
"""

from __future__ import annotations

import functools
import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast, get_args, get_origin

from pydantic import BaseModel, Field

from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.imaging.geometry import CoordinateSpace, ImageMapping, Point, Rect, Region

FRAMES_KEPT = 64
SCREEN_PREFIX = "screen_"  # result fields named screen_* are absolute screen pixels in every space
_frame_ids = itertools.count(1)
T = TypeVar("T")


def new_frame_id() -> str:
    return f"f{next(_frame_ids)}"


class Placed(BaseModel):
    """A result whose coordinates are in one named space (cores fill screen pixels; tools convert)."""

    space: CoordinateSpace = Field(
        "screen", description="the space of this result's coordinates: 'screenshot' = pixels of frame_id"
    )
    frame_id: str | None = Field(
        None, description="the screenshot whose pixels the coordinates are in (the latest unless you named another)"
    )


@dataclass(frozen=True)
class CallerSpace:
    """The space one call's coordinates are taken in and its results are given in."""

    space: CoordinateSpace
    frame_id: str | None  # None only with space='screen'
    mapping: ImageMapping  # the frame's mapping (with space='screen': the reference frame's, for its area)
    screen: Rect | None = None  # the whole screen, which screen-space points must lie on (given with space='screen')

    @property
    def area(self) -> Rect:
        """The screen area the caller is looking at: the frame's area."""
        return self.mapping.area

    def to_screen(self, x: float, y: float) -> Point:
        """The screen pixel a caller's point names; points outside the image (or screen) are refused."""
        if self.space == "screen":
            assert self.screen is not None, "a screen-space CallerSpace carries the screen"
            if not self.screen.contains(round(x), round(y)):
                raise InvalidInputError(
                    f"screen point ({x:g}, {y:g}) is off screen; the screen spans {self.screen.describe()}"
                )
            return Point(x=round(x), y=round(y))
        self.mapping.check_image_point(x, y)
        return self.mapping.to_screen(x, y)

    def region_to_screen(self, region: Region) -> Rect:
        """A caller's region as a screen rectangle."""
        left, top, width, height = region.left, region.top, region.width, region.height
        if self.space == "screen":
            assert self.screen is not None, "a screen-space CallerSpace carries the screen"
            rect = Rect(left=round(left), top=round(top), width=max(1, round(width)), height=max(1, round(height)))
            if rect.intersect(self.screen) is None:
                raise InvalidInputError(
                    f"region {rect.describe()} is off screen; the screen spans {self.screen.describe()}"
                )
            return rect
        self.mapping.check_image_point(left, top)
        self.mapping.check_image_point(left + width - 1, top + height - 1)
        a = self.mapping.to_screen(left, top)
        b = self.mapping.to_screen(left + width - 1, top + height - 1)
        return Rect(left=a.x, top=a.y, width=b.x - a.x + 1, height=b.y - a.y + 1)

    def point(self, point: Point) -> Point:
        return point if self.space == "screen" else self.mapping.point_to_image(point)

    def rect(self, rect: Rect) -> Rect:
        return rect if self.space == "screen" else self.mapping.rect_to_image(rect)

    def express(self, value: T) -> T:
        """`value` (a result in screen pixels) with every coordinate in this space, naming it.

        Every Point and Rect anywhere in the result is converted, except under fields named screen_*;
        every `Placed` model in it is stamped with this space and frame. What nothing changes in is returned as it
        is, not copied (in screen space, hundreds of elements would be copied for nothing).
        """
        return cast(T, self._convert(value))

    def _convert(self, value: object) -> object:
        if isinstance(value, Point):
            return self.point(value)
        if isinstance(value, Rect):
            return self.rect(value)
        if isinstance(value, BaseModel):
            updates = {}
            for name in _fields_with_models(type(value)):
                field = getattr(value, name)
                if isinstance(field, BaseModel | list | tuple):
                    converted = self._convert(field)
                    if converted is not field:
                        updates[name] = converted
            if isinstance(value, Placed):
                updates.update(space=self.space, frame_id=self.frame_id)
            return value.model_copy(update=updates) if updates else value
        if isinstance(value, list | tuple):
            items = [self._convert(item) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value


class FrameRegistry:
    """The frames callers may name: the last FRAMES_KEPT screenshots, and which one is the latest."""

    def __init__(self, kept: int = FRAMES_KEPT) -> None:
        self._mappings: OrderedDict[str, ImageMapping] = OrderedDict()
        self._latest: str | None = None
        self._kept = kept

    @property
    def latest(self) -> str | None:
        return self._latest

    def remember(self, frame_id: str, mapping: ImageMapping, latest: bool = True) -> None:
        self._mappings[frame_id] = mapping
        if latest:
            self._latest = frame_id
        while len(self._mappings) > self._kept:
            oldest = next(k for k in self._mappings if k != self._latest)  # the latest always stays
            del self._mappings[oldest]

    def get(self, frame_id: str) -> ImageMapping:
        if frame_id not in self._mappings:
            raise InvalidInputError(
                f"unknown frame_id {clip(frame_id)}: only the last {self._kept} screenshots are kept "
                f"(latest: {self._latest or 'none yet'}); take a new screenshot"
            )
        return self._mappings[frame_id]

    def reference(self, frame_id: str | None) -> tuple[str, ImageMapping] | None:
        """The frame a call refers to: the named one, else the latest; None before any frame exists."""
        if frame_id is not None:
            return frame_id, self.get(frame_id)
        if self._latest is None:
            return None
        return self._latest, self._mappings[self._latest]


@functools.cache
def _fields_with_models(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields `express` looks into: those whose type can hold a model (a Point, a Rect, a Placed result), not
    named screen_*. Text, numbers and lists of them are passed by: an element's states and actions were most of the
    objects looked at (444 elements: 17 ms in screen space, where nothing changes, under load)."""
    return tuple(
        name
        for name, field in model.model_fields.items()
        if not name.startswith(SCREEN_PREFIX) and _may_hold_model(field.annotation)
    )


def _may_hold_model(annotation: Any) -> bool:
    if annotation in (str, int, float, bool, bytes, type(None)) or get_origin(annotation) is Literal:
        return False
    arguments = get_args(annotation)
    if isinstance(annotation, type) and not arguments:  # a class; a bare list or tuple may hold anything
        return issubclass(annotation, BaseModel | list | tuple | dict) or annotation is object
    return not arguments or any(_may_hold_model(argument) for argument in arguments)
