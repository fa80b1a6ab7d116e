"""The screen as a grid of tile digests, sent with each tree read so the helper can tell whether a window it keeps
a tree for still looks the same.

Why pixels: change events alone do not say when a kept tree is stale. Chromium sends none when a page scrolls or
reflows (measured: not one event in 5 s of scrolling the Python docs), so its kept tree kept the old boxes (54 of 81
links still where they were). A scroll or a reflow that moves anything a person could act on changes the pixels
of its window; comparing the tiles under an application's windows costs a grab and a hash, not a walk.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from symphony_mcp.desktop.capture import Frame

TILE = 120  # pixels per tile side: 144 tiles at 1920x1080


def tile_digests(frame: Frame) -> dict[str, Any]:
    """The frame's tiles, row by row, each a CRC-32 of its pixels: `{"origin", "tile", "columns", "digests"}`.

    CRC-32, not a cryptographic hash: it tells a changed tile from an unchanged one, and a scroll or a reflow changes
    many tiles, all of which would have to collide. Measured at 1920x1080: 13 ms, BLAKE2b of the same tiles 28 ms."""
    width, height = frame.image.size
    bands = len(frame.image.getbands())
    rows = np.frombuffer(frame.image.tobytes(), np.uint8).reshape(height, width * bands)
    columns = -(-width // TILE)
    digests = [
        zlib.crc32(rows[top : top + TILE, left * bands : (left + TILE) * bands].tobytes())
        for top in range(0, height, TILE)
        for left in range(0, width, TILE)
    ]
    return {"origin": [frame.area.left, frame.area.top], "tile": TILE, "columns": columns, "digests": digests}
