"""Read one target point out of a grounding model's answer, whatever the model family wrote.

Recognised, in this order: `<point>x y</point>`, `<bbox>x1 y1 x2 y2</bbox>`,
`<|box_start|>(x,y)<|box_end|>` (also two corners), `start_box='...'` / `point='...'`, JSON
`"point_2d"` / `"bbox_2d"` / `"point"` / `"bbox"`, `x=.. y=..`, `(x, y)` / `[x, y]`, 4-number
boxes in brackets, and finally a bare answer with exactly two or four numbers. Boxes give their
centre. Numbers may be integers or decimals; their unit is decided by `to_image_point`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from symphony_mcp.models.reask import UnusableAnswerError

Convention = Literal["pixels", "relative-1000", "unit"]

_NUM = r"[-+]?\d+(?:\.\d+)?"
_NUMBER = re.compile(_NUM)
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE | re.DOTALL)
    for p in (
        r"<point>(.*?)</point>",
        r"<bbox>(.*?)</bbox>",
        r"<\|box_start\|>(.*?)<\|box_end\|>",
        r"(?:start_box|start_point|point)\s*=\s*['\"](.*?)['\"]",
        r"\"(?:point_2d|bbox_2d|point|bbox|coordinate|coordinates)\"\s*:\s*(\[[^\]]*\])",
        rf"\bx\s*[=:]\s*({_NUM})\s*[,;]?\s*\by\s*[=:]\s*({_NUM})",
        rf"[\(\[]\s*({_NUM}\s*,\s*{_NUM}\s*,\s*{_NUM}\s*,\s*{_NUM})\s*[\)\]]",
        rf"[\(\[]\s*({_NUM}\s*,\s*{_NUM})\s*[\)\]]",
    )
)


@dataclass(frozen=True)
class ParsedPoint:
    """A point in the answer's own units, and the box it came from if the model gave one."""

    x: float
    y: float
    box: tuple[float, float, float, float] | None
    fractional: bool  # every number within 0..1 and written with a decimal point


def parse_point(answer: str) -> ParsedPoint:
    """The first point the answer states, by the most specific format found."""
    for pattern in _PATTERNS:
        for match in pattern.finditer(answer):
            numbers = [n for group in match.groups() for n in _NUMBER.findall(group or "")]
            if len(numbers) in (2, 4):
                return _point(numbers)
    numbers = _NUMBER.findall(answer)
    if len(numbers) in (2, 4):
        return _point(numbers)
    if not answer.strip():
        raise UnusableAnswerError("the answer was empty")
    raise UnusableAnswerError(f"no single point found in the answer ({len(numbers)} numbers, expected 2 or 4)")


def _point(numbers: list[str]) -> ParsedPoint:
    values = [float(n) for n in numbers]
    fractional = all(0 <= v <= 1 for v in values) and any("." in n for n in numbers)
    if len(values) == 2:
        return ParsedPoint(values[0], values[1], None, fractional)
    x1, y1, x2, y2 = values
    return ParsedPoint((x1 + x2) / 2, (y1 + y2) / 2, (x1, y1, x2, y2), fractional)


def effective_convention(point: ParsedPoint, convention: Convention) -> Convention:
    """Fractions (0..1 with decimals) mean fractions of the image, whatever the family's convention."""
    return "unit" if point.fractional else convention


def to_image_point(
    point: ParsedPoint,
    convention: Convention,
    width: int,
    height: int,
    content: tuple[int, int] | None = None,
) -> tuple[float, float]:
    """The point in pixels of the image the model saw; raises UnusableAnswerError when it lies outside
    the picture (`content`: its top-left part that is not padding; default the whole image)."""
    valid_width, valid_height = content or (width, height)
    used = effective_convention(point, convention)
    if used == "pixels":
        x, y = point.x, point.y
        limits = (
            f"x within 0..{valid_width - 1} and y within 0..{valid_height - 1} (pixels of the {width}x{height} image)"
        )
    elif used == "relative-1000":
        x, y = point.x / 1000 * width, point.y / 1000 * height
        limits = "x and y within 0..1000 (thousandths of the image width and height)"
    else:
        x, y = point.x * width, point.y * height
        limits = "x and y within 0..1 (fractions of the image width and height)"
    if not (0 <= x < valid_width and 0 <= y < valid_height):
        raise UnusableAnswerError(f"the point ({point.x:g}, {point.y:g}) is outside the image: it must have {limits}")
    return x, y


def box_to_image(
    point: ParsedPoint, convention: Convention, width: int, height: int
) -> tuple[float, float, float, float] | None:
    """The answer's box in image pixels (clipped to the image), if it gave one."""
    if point.box is None:
        return None
    scale_x, scale_y = {
        "pixels": (1.0, 1.0),
        "relative-1000": (width / 1000, height / 1000),
        "unit": (float(width), float(height)),
    }[effective_convention(point, convention)]
    x1, y1, x2, y2 = point.box
    left, right = sorted((x1 * scale_x, x2 * scale_x))
    top, bottom = sorted((y1 * scale_y, y2 * scale_y))
    return max(0.0, left), max(0.0, top), right, bottom
