"""The screen as a grid of tile digests, sent with each tree read so the helper can tell whether a window it keeps
a tree for still looks the same.

Why pixels: change events alone do not say when a kept tree is stale. Chromium sends none when a page scrolls or
reflows (measured: not one event in 5 s of scrolling the Python docs), so its kept tree kept the old boxes (54 of 81
links still where they were). A scroll or a reflow that moves anything a person could act on changes the pixels
of its window; comparing the tiles under an application's windows costs a grab and a hash, not a walk.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from symphony_mcp.desktop.capture import Frame

TILE = 120  # pixels per tile side: 144 tiles at 1920x1080


def tile_digests(frame: Frame) -> dict[str, Any]:
    """The frame's tiles, row by row, each an 8-byte digest in hex: `{"origin", "tile", "columns", "digests"}`."""
    pixels = np.asarray(frame.image)
    height, width = pixels.shape[:2]
    columns = -(-width // TILE)
    digests = [
        hashlib.blake2b(pixels[top : top + TILE, left : left + TILE].tobytes(), digest_size=8).hexdigest()
        for top in range(0, height, TILE)
        for left in range(0, width, TILE)
    ]
    return {"origin": [frame.area.left, frame.area.top], "tile": TILE, "columns": columns, "digests": digests}
