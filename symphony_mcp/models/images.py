"""Images for model endpoints: sized for the model, within the endpoint's side and byte limits.

The model sees the image at `ModelImage.width x height`. A point (x, y) in that image maps back
to the screen with `ImageMapping(area=frame.area, image_width=width, image_height=height).to_screen`,
i.e. screen = area.left + (x + 0.5) * area.width / width - 0.5 (same for y).
"""

from __future__ import annotations

from collections.abc import Callable

from PIL import Image

from symphony_mcp.desktop.geometry import fit_within
from symphony_mcp.models.endpoints import ResolvedEndpoint
from symphony_mcp.models.messages import ModelImage
from symphony_mcp.vision.encoding import encode_bytes

# (width, height, shrink) -> the size to send; shrink < 1 asks for fewer pixels (byte budget exceeded).
Sizer = Callable[[int, int, float], tuple[int, int]]
_SHRINK_STEP = 0.75
_MIN_SHRINK = 0.05


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
            resized = (
                image if (width, height) == image.size else image.resize((width, height), Image.Resampling.BILINEAR)
            )
            data = encode_bytes(resized, endpoint.image_format, endpoint.image_quality)
            if len(data) <= endpoint.image_max_bytes or shrink <= _MIN_SHRINK:
                return ModelImage(data=data, format=endpoint.image_format, width=width, height=height)
        shrink *= _SHRINK_STEP
