"""Images for a model endpoint (models/images.py): padding instead of upscaling, the endpoint's byte and side limits."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from symphony_mcp.config import ModelsSettings
from symphony_mcp.models.endpoints import resolve_endpoint
from symphony_mcp.models.images import prepare_image
from symphony_mcp.models.reask import UnusableAnswerError
from symphony_mcp.vision.grounding.families import FAMILIES
from symphony_mcp.vision.grounding.parsing import parse_point, to_image_point


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
    with pytest.raises(UnusableAnswerError, match=r"x within 0\.\.1919 .* 1932x1092 image"):
        to_image_point(parse_point("(1925, 500)"), "pixels", 1932, 1092, (1920, 1080))
    # A much larger size (tiny screenshots and min_pixels) is a real resize.
    small = prepare_image(Image.new("RGB", (100, 50)), endpoint, resize.size)
    assert (small.width, small.content_width) == (420, 420)


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
