"""An OCR engine that fails inside a library it runs on (EasyOCR on an OpenCV it does not survive was the case seen)
gives an error that names the engine and the way out, which the tools pass on, instead of "internal error"."""

from __future__ import annotations

from collections.abc import Iterator

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

from symphony_mcp.errors import SymphonyError
from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.vision.ocr.engine import EngineSpec, OcrEngineError
from symphony_mcp.vision.ocr.pipeline import OcrPipeline
from symphony_mcp.vision.ocr.types import RecognizedWord


class ResizesNothing:
    """Does what EasyOCR 1.7.2 did on OpenCV 5: hands cv2.resize an empty image, which OpenCV refuses."""

    def recognize(self, image: Image.Image) -> list[RecognizedWord]:
        cv2.resize(np.zeros((0, 0), np.uint8), (32, 32))
        return []


@pytest.fixture
def pipeline() -> Iterator[OcrPipeline]:
    built = OcrPipeline(EngineSpec(name="easyocr", factory=ResizesNothing, workers=1))
    yield built
    built.close()


def test_engine_failure_names_the_engine_and_the_way_out(pipeline: OcrPipeline) -> None:
    image = Image.new("RGB", (200, 60), "white")
    ImageDraw.Draw(image).text((10, 20), "Save changes", fill="black")  # a text block, so the engine is asked
    with pytest.raises(OcrEngineError) as raised:
        pipeline.read(image, Rect(left=0, top=0, width=200, height=60))
    message = str(raised.value)
    assert "the easyocr OCR engine failed" in message
    assert "!ssize.empty()" in message  # OpenCV's own words, for whoever reads the log
    assert "SYMPHONY_OCR__ENGINE=tesseract" in message
    assert "lock" in message
    # The tool layer passes SymphonyError messages to the caller as they are (tools/common.py).
    assert isinstance(raised.value, SymphonyError)


def test_engine_failure_on_warm_up_is_the_same_error(pipeline: OcrPipeline) -> None:
    with pytest.raises(OcrEngineError, match="the easyocr OCR engine failed"):
        pipeline.warm_up()
