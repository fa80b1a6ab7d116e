"""The caller's coordinate space (desktop/frames.py): results expressed in it."""

from __future__ import annotations

import pytest

from symphony_mcp.desktop.frames import CallerSpace, Placed
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.imaging.geometry import ImageMapping, Point, Rect


class _Located(Placed):
    """A result shaped like the tools' results: coordinates at several depths, one screen_* field."""

    box: Rect
    corners: list[Point]
    nested: list[ActionRecord]
    screen_box: Rect
    labels: list[str]  # not looked into: no model can be there
    loose: object  # looked into: anything can be there


@pytest.mark.parametrize(
    "area", [Rect(left=0, top=0, width=1920, height=1080), Rect(left=960, top=40, width=960, height=700)]
)
def test_express_converts_every_coordinate_but_screen_fields(area: Rect) -> None:
    mapping = ImageMapping(area=area, image_width=area.width * 2 // 3, image_height=area.height * 2 // 3)
    view = CallerSpace(
        space="screenshot", frame_id="f9", mapping=mapping, screen=Rect(left=0, top=0, width=1920, height=1080)
    )
    word = Rect(left=area.left + 300, top=area.top + 200, width=90, height=21)
    record = ActionRecord(
        id=1,
        action="click",
        arguments={"x": 5},
        points=[Point(x=area.left + 345, y=area.top + 210)],
        screen_points=[Point(x=area.left + 345, y=area.top + 210)],
        started_at=0,
        duration_ms=0,
        summary="s",
    )
    result = view.express(
        _Located(
            box=word,
            corners=[Point(x=word.left, y=word.top)],
            nested=[record],
            screen_box=word,
            labels=["a"],
            loose=[Point(x=word.left, y=word.top)],
        )
    )
    assert result.loose == result.corners and result.labels == ["a"]
    assert (result.space, result.frame_id) == ("screenshot", "f9") and result.screen_box == word
    assert (result.nested[0].space, result.nested[0].frame_id) == ("screenshot", "f9")
    assert result.nested[0].screen_points == record.screen_points
    # Every converted value maps back onto the screen pixel (or box) it came from.
    back = mapping.to_screen(result.nested[0].points[0].x, result.nested[0].points[0].y)
    assert abs(back.x - (area.left + 345)) <= 1 and abs(back.y - (area.top + 210)) <= 1
    box = result.box
    centre = mapping.to_screen(box.left + box.width / 2, box.top + box.height / 2)
    assert word.contains(centre.x, centre.y) and box.width >= 60 and box.height >= 14
    assert view.point(Point(x=word.left, y=word.top)) == result.corners[0]
    screen = CallerSpace(space="screen", frame_id=None, mapping=mapping, screen=view.screen)
    assert screen.express(result.model_copy(update={"box": word})).box == word
