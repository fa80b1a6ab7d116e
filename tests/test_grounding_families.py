"""Grounding model families (vision/grounding/families.py) and the Qwen smart resize (vision/grounding/resize.py)."""

from __future__ import annotations

import typing

import pytest

from symphony_mcp.config import GroundingFamilyName, load_settings
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.vision.grounding.families import FAMILIES, family_for
from symphony_mcp.vision.grounding.resize import smart_resize


@pytest.mark.parametrize(
    ("size", "factor", "min_pixels", "max_pixels", "expected"),
    [
        ((1920, 1080), 28, 78_400, 12_845_056, (1932, 1092)),
        ((1280, 800), 28, 3136, 12_845_056, (1288, 812)),
        ((3840, 2160), 28, 3136, 2_109_744, (1932, 1064)),
        ((1920, 1080), 32, 4096, 16_777_216, (1920, 1088)),
        ((1920, 1080), 28, 3136, 1_000_000, (1316, 728)),
        ((100, 50), 28, 78_400, 12_845_056, (420, 224)),
    ],
)
def test_smart_resize_matches_the_qwen_reference(
    size: tuple[int, int], factor: int, min_pixels: int, max_pixels: int, expected: tuple[int, int]
) -> None:
    height, width = smart_resize(size[1], size[0], factor, min_pixels, max_pixels)
    assert (width, height) == expected
    assert width % factor == 0 and height % factor == 0 and min_pixels <= width * height <= max_pixels


def test_smart_resize_refuses_extreme_aspect_ratios() -> None:
    with pytest.raises(InvalidInputError, match="aspect ratio"):
        smart_resize(10, 3000, 28, 3136, 12_845_056)


def test_every_configurable_family_exists() -> None:
    assert set(FAMILIES) == set(typing.get_args(GroundingFamilyName))
    family = family_for(load_settings(grounding={"family": "gta1", "max_pixels": 1_000_000}).grounding)
    assert family.resize is not None and family.resize.max_pixels == 1_000_000
    assert FAMILIES["gta1"].resize is not None and FAMILIES["gta1"].resize.max_pixels == 4096 * 2160
