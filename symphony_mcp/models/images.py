"""Images for model endpoints: sized for the model, within the endpoint's side and byte limits.

The model sees the image at `ModelImage.width x height`; the picture fills its
`content_width x content_height` top-left part. A point (x, y) inside the picture maps back to the
screen with `ImageMapping(area=frame.area, image_width=content_width, image_height=content_height)`,
i.e. screen = area.left + (x + 0.5) * area.width / content_width - 0.5 (same for y).

When the size asked for is only slightly larger than the picture (Qwen's smart resize rounds
1920x1080 up to 1932x1092), the picture is padded instead of upscaled: upscaling by 0.6% blurs
every glyph and costs ~20 ms at 1080p, padding ~1 ms.
"""

from __future__ import annotations

from collections.abc import Callable

from PIL import Image

from symphony_mcp.imaging.encoding import encode_bytes
from symphony_mcp.imaging.geometry import fit_within
from symphony_mcp.models.endpoints import ResolvedEndpoint
from symphony_mcp.models.messages import ModelImage

# (width, height, shrink) -> the size to send; shrink < 1 asks for fewer pixels (byte budget exceeded).
Sizer = Callable[[int, int, float], tuple[int, int]]
_SHRINK_STEP = 0.75
_MIN_SHRINK = 0.05
_MAX_PAD_GROWTH = 1.05  # pad (not upscale) when the size asked for has at most 5% more pixels


def prepare_image(image: Image.Image, endpoint: ResolvedEndpoint, sizer: Sizer | None = None) -> ModelImage:
    """Resize with `sizer` (default: fit within the endpoint's longest side) and encode within its limits."""
    max_side = endpoint.image_max_side

    def default_sizer(width: int, height: int, shrink: float) -> tuple[int, int]:
        fitted_width, fitted_height = fit_within(width, height, max_side, max_side)
        factor = shrink**0.5
        return max(1, round(fitted_width * factor)), max(1, round(fitted_height * factor))

    size_for = sizer or default_sizer
    shrink = 1.0
    while True:
        width, height = size_for(image.width, image.height, shrink)
        if max(width, height) <= max_side or shrink <= _MIN_SHRINK:
            sized, content = fit_to_size(image, width, height)
            data = encode_bytes(sized, endpoint.image_format, endpoint.image_quality)
            if len(data) <= endpoint.image_max_bytes or shrink <= _MIN_SHRINK:
                return ModelImage(
                    data=data,
                    format=endpoint.image_format,
                    width=width,
                    height=height,
                    content_width=content[0],
                    content_height=content[1],
                )
        shrink *= _SHRINK_STEP


def fit_to_size(image: Image.Image, width: int, height: int) -> tuple[Image.Image, tuple[int, int]]:
    """The image at width x height and the size of the picture in it (padded when barely larger)."""
    if (width, height) == image.size:
        return image, image.size
    grows = width >= image.width and height >= image.height
    if grows and width * height <= image.width * image.height * _MAX_PAD_GROWTH:
        padded = Image.new("RGB", (width, height))
        padded.paste(image, (0, 0))  # converts other modes itself
        return padded, image.size
    return image.resize((width, height), Image.Resampling.BILINEAR), (width, height)
