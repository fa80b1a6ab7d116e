"""What a stand-in grounding model 'sees' in the image it was sent: the Tk probe's red swatch, by its pixels."""

from __future__ import annotations

import numpy as np
from PIL import Image


def red_centroid(image: Image.Image) -> tuple[float, float]:
    """Where the stand-in 'sees' the red swatch: the centre of the red pixels of the (JPEG) image it got."""
    rgb = np.asarray(image.convert("RGB")).astype(int)
    ys, xs = np.nonzero((rgb[..., 0] > 200) & (rgb[..., 1] < 60) & (rgb[..., 2] < 60))
    assert xs.size, "no red swatch in the image the model was sent"
    return float(xs.mean()), float(ys.mean())
