"""The model layer and grounder cores without a display: parsing, resizing, endpoints, image limits."""

from __future__ import annotations

import io
import typing

import numpy as np
import pytest
from PIL import Image

from symphony_mcp.config import GroundingFamilyName, ModelsSettings, load_settings
from symphony_mcp.desktop.capture import Frame
from symphony_mcp.errors import InvalidInputError, ModelAuthError, ModelNotConfiguredError
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.models.endpoints import resolve_endpoint
from symphony_mcp.models.images import prepare_image
from symphony_mcp.vision.grounding.families import FAMILIES, family_for
from symphony_mcp.vision.grounding.parsing import AnswerFormatError, parse_point, to_image_point
from symphony_mcp.vision.grounding.resize import smart_resize
from symphony_mcp.vision.grounding.zoom import zoom_crop


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
    with pytest.raises(AnswerFormatError):
        parse_point(answer)


def test_conventions_map_into_the_image_and_out_of_frame_is_refused() -> None:
    assert to_image_point(parse_point("(500, 250)"), "relative-1000", 1932, 1092) == pytest.approx((966, 273))
    assert to_image_point(parse_point("(0.5, 0.25)"), "pixels", 1932, 1092) == pytest.approx((966, 273))
    assert to_image_point(parse_point("(966, 273)"), "pixels", 1932, 1092) == (966, 273)
    with pytest.raises(AnswerFormatError, match=r"0\.\.1931"):
        to_image_point(parse_point("(1932, 10)"), "pixels", 1932, 1092)
    with pytest.raises(AnswerFormatError, match=r"0\.\.1000"):
        to_image_point(parse_point("(1200, 10)"), "relative-1000", 1932, 1092)
    with pytest.raises(AnswerFormatError):
        to_image_point(parse_point("(-3, 10)"), "pixels", 1932, 1092)


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


def test_a_barely_larger_size_pads_instead_of_upscaling() -> None:
    screen = Image.new("RGB", (1920, 1080), (200, 210, 220))
    endpoint = resolve_endpoint(
        ModelsSettings.model_validate({"default": {"base_url": "http://x/v1", "model": "m"}}), "grounder"
    )
    resize = FAMILIES["ui-tars-1.5"].resize
    assert resize is not None
    sent = prepare_image(screen, endpoint, resize.size)
    assert (sent.width, sent.height, sent.content_width, sent.content_height) == (1932, 1092, 1920, 1080)
    with Image.open(io.BytesIO(sent.data)) as decoded:
        assert decoded.getpixel((100, 100)) == pytest.approx((200, 210, 220), abs=3)
        assert decoded.getpixel((1928, 1088)) == pytest.approx((0, 0, 0), abs=3)
    # A point in the padding is outside the picture, and says so in the image's terms.
    with pytest.raises(AnswerFormatError, match=r"x within 0\.\.1919 .* 1932x1092 image"):
        to_image_point(parse_point("(1925, 500)"), "pixels", 1932, 1092, (1920, 1080))
    # A much larger size (tiny screenshots and min_pixels) is a real resize.
    small = prepare_image(Image.new("RGB", (100, 50)), endpoint, resize.size)
    assert (small.width, small.content_width) == (420, 420)


def test_every_configurable_family_exists() -> None:
    assert set(FAMILIES) == set(typing.get_args(GroundingFamilyName))
    family = family_for(load_settings(grounding={"family": "gta1", "max_pixels": 1_000_000}).grounding)
    assert family.resize is not None and family.resize.max_pixels == 1_000_000
    assert FAMILIES["gta1"].resize is not None and FAMILIES["gta1"].resize.max_pixels == 4096 * 2160


def test_endpoint_resolution_merges_role_default_and_built_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    models = ModelsSettings.model_validate(
        {
            "default": {"base_url": "http://vllm:8000/v1", "model": "general", "timeout": 30},
            "grounder": {"model": "ui-tars", "api_key_env": "TEST_GROUNDER_KEY"},
        }
    )
    monkeypatch.setenv("TEST_GROUNDER_KEY", "secret")
    grounder = resolve_endpoint(models, "grounder")
    assert (grounder.base_url, grounder.model, grounder.timeout, grounder.api_key) == (
        "http://vllm:8000/v1",
        "ui-tars",
        30,
        "secret",
    )
    assert grounder.max_tokens == 256 and grounder.temperature == 0
    assert "secret" not in repr(grounder)
    orchestrator = resolve_endpoint(models, "orchestrator")
    assert (orchestrator.model, orchestrator.temperature, orchestrator.api_key) == ("general", 0.1, None)
    monkeypatch.delenv("TEST_GROUNDER_KEY")
    with pytest.raises(ModelAuthError, match="TEST_GROUNDER_KEY, which is not set"):
        resolve_endpoint(models, "grounder")
    # A role with its own endpoint does not get the default endpoint's key.
    keyed = ModelsSettings.model_validate(
        {
            "default": {"base_url": "https://api.example/v1", "model": "big", "api_key": "sk-default"},
            "grounder": {"base_url": "http://gpu:8000/v1", "model": "ui-tars"},
            "memoryer": {"model": "small"},
        }
    )
    assert resolve_endpoint(keyed, "grounder").api_key is None
    assert resolve_endpoint(keyed, "memoryer").api_key == "sk-default"
    with pytest.raises(ModelNotConfiguredError, match="SYMPHONY_MODELS__CODER__BASE_URL"):
        resolve_endpoint(ModelsSettings.model_validate({"coder": {"model": "m"}}), "coder")


def test_role_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMPHONY_MODELS__GROUNDER__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SYMPHONY_MODELS__GROUNDER__MODEL", "ui-tars-1.5-7b")
    monkeypatch.setenv("SYMPHONY_MODELS__GROUNDER__EXTRA_BODY", '{"top_k": 1}')
    monkeypatch.setenv("SYMPHONY_GROUNDING__FAMILY", "gta1")
    settings = load_settings()
    endpoint = resolve_endpoint(settings.models, "grounder")
    assert endpoint.model == "ui-tars-1.5-7b" and endpoint.extra_body == {"top_k": 1}
    assert settings.grounding.family == "gta1"


def test_images_are_shrunk_to_the_endpoint_byte_limit() -> None:
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 255, (1080, 1920, 3), dtype=np.uint8))
    models = ModelsSettings.model_validate(
        {"default": {"base_url": "http://x/v1", "model": "m", "image_max_bytes": 200_000, "image_max_side": 1600}}
    )
    endpoint = resolve_endpoint(models, "grounder")
    image = prepare_image(noise, endpoint)
    assert len(image.data) <= 200_000 and image.width <= 1600
    assert abs(image.width / image.height - 1920 / 1080) < 0.01
    # A smart-resize family keeps multiples of 28 while shrinking for bytes.
    resize = FAMILIES["ui-tars-1.5"].resize
    assert resize is not None
    smart = prepare_image(noise, endpoint, resize.size)
    assert len(smart.data) <= 200_000 and smart.width % 28 == 0 and smart.height % 28 == 0
    assert max(smart.width, smart.height) <= 1600


def test_grounder_flags_reach_the_nested_settings() -> None:
    from symphony_mcp.cli import build_parser, settings_from_args

    args = build_parser().parse_args(
        ["serve", "--grounder-url", "http://h:8000/v1", "--grounder-model", "gta1-7b", "--grounding-family", "gta1"]
    )
    settings = settings_from_args(args)
    assert (settings.models.grounder.base_url, settings.models.grounder.model) == ("http://h:8000/v1", "gta1-7b")
    assert settings.grounding.family == "gta1"


def _gradient_frame(area: Rect, scale: int) -> Frame:
    """A frame whose pixel at image (x, y) has red = x // scale % 256, green = y // scale % 256."""
    xs, ys = np.meshgrid(np.arange(area.width * scale) // scale, np.arange(area.height * scale) // scale)
    pixels = np.stack([xs % 256, ys % 256, np.zeros_like(xs)], axis=-1).astype(np.uint8)
    return Frame(image=Image.fromarray(pixels), area=area, monitor=1, cursor=None)


@pytest.mark.parametrize(
    ("around", "expected"),
    [
        (Point(x=1000, y=500), Rect(left=1000 - 480, top=500 - 270, width=960, height=540)),  # centred
        (Point(x=10, y=1070), Rect(left=0, top=540, width=960, height=540)),  # shifted inside at a corner
        (Point(x=1919, y=0), Rect(left=960, top=0, width=960, height=540)),
    ],
)
def test_zoom_crop_is_centred_on_the_guess_and_stays_inside(around: Point, expected: Rect) -> None:
    frame = _gradient_frame(Rect(left=0, top=0, width=1920, height=1080), scale=1)
    crop = zoom_crop(frame, around, zoom=2)
    assert crop.area == expected and crop.image.size == (960, 540) and crop.id == frame.id
    assert crop.image.getpixel((7, 9))[:2] == ((expected.left + 7) % 256, (expected.top + 9) % 256)


def test_zoom_crop_takes_a_size_the_model_needs_no_resampling_for() -> None:
    frame = _gradient_frame(Rect(left=0, top=0, width=1920, height=1080), scale=1)
    resize = FAMILIES["ui-tars-1.5"].resize
    assert resize is not None
    crop = zoom_crop(frame, Point(x=960, y=540), zoom=2, snap=resize.size)
    assert crop.area == Rect(left=960 - 476, top=540 - 266, width=952, height=532)
    whole = zoom_crop(frame, Point(x=960, y=540), zoom=1.5, snap=lambda w, h, _: (w * 2, h * 2))
    assert whole.area.width == 1280  # a snapped size larger than the frame is not taken


def test_zoom_crop_of_a_hidpi_frame_on_a_second_monitor_keeps_screen_pixels() -> None:
    area = Rect(left=1920, top=100, width=800, height=600)
    frame = _gradient_frame(area, scale=2)  # 1600x1200 image of an 800x600 screen area
    crop = zoom_crop(frame, Point(x=1920 + 400, y=100 + 300), zoom=4)
    assert crop.area == Rect(left=1920 + 300, top=100 + 225, width=200, height=150)
    assert crop.image.size == (400, 300)
    assert crop.image.getpixel((0, 0))[:2] == (300 % 256, 225)
