"""A grab of unchanged pixels returns the previous image itself (desktop/capture.py), and the OCR pipeline answers
that image from its last reading without comparing pixels; a change gives a new image and a new reading."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PIL import Image, ImageDraw

from symphony_mcp.desktop.capture import ScreenCapturer
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.vision.ocr.engines import engine_spec
from symphony_mcp.vision.ocr.pipeline import OcrPipeline
from testkit.display import paint_root
from testkit.waiting import wait_for

BLACK = (0, 0, 0)
BLUE = (0x33, 0x66, 0xCC)


@pytest.fixture
def capturer(xdisplay: VirtualDisplay) -> Iterator[ScreenCapturer]:
    capturer = ScreenCapturer()
    yield capturer
    capturer.close()
    paint_root(xdisplay.name, BLACK)


def test_unchanged_pixels_give_the_same_image_and_changed_ones_a_new_image(
    capturer: ScreenCapturer, xdisplay: VirtualDisplay
) -> None:
    paint_root(xdisplay.name, BLACK)
    area = capturer.monitor_rect(1)
    wait_for(lambda: capturer.grab(area) is capturer.grab(area))  # the screen has stopped drawing
    first = capturer.grab(area)
    assert capturer.grab(area) is first
    small = capturer.grab_scaled(area, (640, 360))  # a screenshot's downscaled grab: always made afresh
    assert small.size == (640, 360) and capturer.grab_scaled(area, (640, 360)) is not small
    assert capturer.grab(area) is first
    paint_root(xdisplay.name, BLUE)
    wait_for(lambda: capturer.grab(area) is not first)
    changed = capturer.grab(area)
    assert BLUE in {colour for _, colour in changed.getcolors(1 << 24)}
    assert BLUE not in {colour for _, colour in first.getcolors(1 << 24)}


def test_the_pipeline_answers_the_same_image_and_an_equal_copy_from_its_last_reading() -> None:
    page = Image.new("RGB", (480, 120), "white")
    ImageDraw.Draw(page).text((20, 40), "Repeated frames are free", fill="black", font_size=24)
    area = Rect(left=0, top=0, width=480, height=120)
    pipeline = OcrPipeline(engine_spec("tesseract"))
    try:
        first = pipeline.read(page, area)
        assert first.blocks_recognized > 0
        for again in (pipeline.read(page, area), pipeline.read(page.copy(), area)):
            assert again.blocks_recognized == 0 and again.words == first.words
        assert pipeline.read(page, Rect(left=5, top=0, width=480, height=120)).area.left == 5
    finally:
        pipeline.close()
