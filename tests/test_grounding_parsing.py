"""Reading a grounding model's answer (vision/grounding/parsing.py): every family's format and convention."""

from __future__ import annotations

import pytest

from symphony_mcp.models.reask import UnusableAnswerError
from symphony_mcp.vision.grounding.parsing import parse_point, to_image_point


@pytest.mark.parametrize(
    ("answer", "point", "box"),
    [
        ("(512,384)", (512, 384), None),
        ("click(start_box='(512,384)')", (512, 384), None),
        ("Thought: the icon at top.\nAction: click(start_box='<|box_start|>(12,34)<|box_end|>')", (12, 34), None),
        ("click(point='<point>700 41</point>')", (700, 41), None),
        ("<point>700, 41</point>", (700, 41), None),
        ("<bbox>10 20 30 40</bbox>", (20, 30), (10, 20, 30, 40)),
        ("<|box_start|>(10,20),(30,60)<|box_end|>", (20, 40), (10, 20, 30, 60)),
        ('```json\n[{"point_2d": [91, 382], "label": "Save"}]\n```', (91, 382), None),
        ('[{"bbox_2d": [100, 200, 300, 400], "label": "Save"}]', (200, 300), (100, 200, 300, 400)),
        ("pyautogui.click(x=1234, y=567)", (1234, 567), None),
        ("<action>click(x=0.25, y=0.5)</action>", (0.25, 0.5), None),
        ("x: 12.5 y: 99", (12.5, 99), None),
        ("[0.1, 0.9]", (0.1, 0.9), None),
        ("Click(352, 348)", (352, 348), None),
        ("The Save button is at 640 and 200", (640, 200), None),
        ("(10, 20, 30, 40)", (20, 30), (10, 20, 30, 40)),
    ],
)
def test_parser_reads_every_family_format(answer: str, point: tuple[float, float], box: tuple | None) -> None:
    parsed = parse_point(answer)
    assert (parsed.x, parsed.y) == pytest.approx(point)
    assert parsed.box == (pytest.approx(box) if box else None)


@pytest.mark.parametrize("answer", ["", "I cannot find it", "at 1, 2, 3", "step 3 of 5 then 7"])
def test_parser_refuses_answers_without_one_point(answer: str) -> None:
    with pytest.raises(UnusableAnswerError):
        parse_point(answer)


def test_conventions_map_into_the_image_and_out_of_frame_is_refused() -> None:
    assert to_image_point(parse_point("(500, 250)"), "relative-1000", 1932, 1092) == pytest.approx((966, 273))
    assert to_image_point(parse_point("(0.5, 0.25)"), "pixels", 1932, 1092) == pytest.approx((966, 273))
    assert to_image_point(parse_point("(966, 273)"), "pixels", 1932, 1092) == (966, 273)
    with pytest.raises(UnusableAnswerError, match=r"0\.\.1931"):
        to_image_point(parse_point("(1932, 10)"), "pixels", 1932, 1092)
    with pytest.raises(UnusableAnswerError, match=r"0\.\.1000"):
        to_image_point(parse_point("(1200, 10)"), "relative-1000", 1932, 1092)
    with pytest.raises(UnusableAnswerError):
        to_image_point(parse_point("(-3, 10)"), "pixels", 1932, 1092)
