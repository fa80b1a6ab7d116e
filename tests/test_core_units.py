"""Pure parts: coordinate mapping, key names, encoding budgets, settings precedence, app resolution."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from PIL import Image

from symphony_mcp.cli import build_parser, settings_from_args
from symphony_mcp.desktop.frames import CallerSpace, Placed
from symphony_mcp.desktop.keys import normalize_key, normalize_keys
from symphony_mcp.desktop.launcher import plan_launch
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.desktop.x11_typing import keysym_for
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.imaging.encoding import EncodeOptions, encode_image
from symphony_mcp.imaging.geometry import ImageMapping, Point, Rect, fit_within

KNOWN = ["a", "b", "1", "enter", "ctrl", "shift", "alt", "win", "command", "pageup", "esc", "delete", "f5"]


def test_fit_within_keeps_aspect_and_never_upscales() -> None:
    assert fit_within(1920, 1080, 1280, 800) == (1280, 720)
    assert fit_within(1080, 1920, 1280, 800) == (450, 800)
    assert fit_within(640, 480, 1280, 800) == (640, 480)


@pytest.mark.parametrize("image_size", [(1280, 720), (640, 360), (1920, 1080), (333, 187)])
def test_mapping_round_trips_every_screen_pixel_within_half_a_source_pixel(image_size: tuple[int, int]) -> None:
    mapping = ImageMapping(
        area=Rect(left=100, top=50, width=1920, height=1080), image_width=image_size[0], image_height=image_size[1]
    )
    rng = random.Random(7)
    for _ in range(500):
        point = Point(x=rng.randrange(100, 2020), y=rng.randrange(50, 1130))
        back = mapping.to_screen(*mapping.to_image(point))
        assert back == point
    # An image pixel maps to the centre of the screen block it covers, never outside the area.
    block = 1920 / image_size[0]
    first, last = mapping.to_screen(0, 0), mapping.to_screen(image_size[0] - 1, image_size[1] - 1)
    assert 100 <= first.x < 100 + block and 50 <= first.y < 50 + block
    assert 2019 - block < last.x <= 2019 and 1129 - block < last.y <= 1129


def test_mapping_rejects_points_outside_the_image() -> None:
    mapping = ImageMapping(area=Rect(left=0, top=0, width=1920, height=1080), image_width=1280, image_height=720)
    with pytest.raises(InvalidInputError, match=r"x must be 0\.\.1279 and y 0\.\.719"):
        mapping.check_image_point(1280, 10)


def test_key_names_and_aliases() -> None:
    assert normalize_keys(["Control", "Return", "PgUp", "Escape", "A"], KNOWN) == [
        "ctrl",
        "enter",
        "pageup",
        "esc",
        "a",
    ]
    assert normalize_key("super", KNOWN) in ("win", "command")
    with pytest.raises(InvalidInputError, match=r"unknown key .hyper.*enter"):
        normalize_key("hyper", KNOWN)
    with pytest.raises(InvalidInputError, match="at least one key"):
        normalize_keys([], KNOWN)


def test_keysyms_for_text() -> None:
    assert keysym_for("a") == ord("a")
    assert keysym_for("é") == 0xE9
    assert keysym_for("→") == 0x01002192
    assert keysym_for("\n") == 0xFF0D


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


def test_settings_precedence_file_env_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "symphony.json"
    config.write_text(json.dumps({"screenshot": {"quality": 55, "format": "webp"}, "display": {"monitor": 0}}))
    monkeypatch.setenv("SYMPHONY_SCREENSHOT__FORMAT", "png")
    monkeypatch.setenv("SYMPHONY_DISPLAY__MONITOR", "2")
    monkeypatch.delenv("SYMPHONY_CONFIG_FILE", raising=False)
    args = build_parser().parse_args(["serve", "--config", str(config), "--monitor", "3", "--resolution", "1280x720"])
    settings = settings_from_args(args)
    assert settings.screenshot.quality == 55  # file
    assert settings.screenshot.format == "png"  # env beats file
    assert settings.display.monitor == 3  # flag beats env
    assert settings.display.size == (1280, 720)
    assert "SYMPHONY_CONFIG_FILE" not in os.environ  # nothing leaks to processes started later


def test_launch_plans(tmp_path: Path) -> None:
    document = tmp_path / "notes.txt"
    document.write_text("hi")
    assert plan_launch("xterm -T hello").argv == ["xterm", "-T", "hello"]
    file_plan = plan_launch(str(document))
    assert file_plan.kind == "file" and file_plan.argv[-1] == str(document)
    with pytest.raises(InvalidInputError, match="give an application name"):
        plan_launch("   ")
    with pytest.raises(InvalidInputError, match="cannot parse"):
        plan_launch('xterm "unclosed')


class _Located(Placed):
    """A result shaped like the tools' results: coordinates at several depths, one screen_* field."""

    box: Rect
    corners: list[Point]
    nested: list[ActionRecord]
    screen_box: Rect


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
        _Located(box=word, corners=[Point(x=word.left, y=word.top)], nested=[record], screen_box=word)
    )
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
