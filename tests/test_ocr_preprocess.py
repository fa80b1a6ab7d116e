"""A block's crop made black on white for the engine (vision/ocr/preprocess.py), on pixels from a real screen.

tests/data/ocr/low_contrast_chip.png is 40x32 px cut from a 1920x1080 capture of the OCR benchmark's forms-7 page
in Chromium: the label 'VV4' in 9 px DejaVu Sans, dark green on a light green pill on a dark page, its glyphs
(rows 11-18) two rows under the pill's top edge (rows 8-10).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from symphony_mcp.vision.ocr.preprocess import text_pieces

CHIP = Path(__file__).parent / "data" / "ocr" / "low_contrast_chip.png"
GLYPH_ROWS = (11, 18)  # first and last row of the label's glyphs in the capture


def test_a_strip_of_a_chips_colour_above_its_glyphs_is_background_not_ink() -> None:
    """The strip of pill colour between the pill's top edge and the glyphs is cut off from the rest of the pill by
    the glyphs (37 px); it was taken for ink, measured against the page's dark colour, and merged with the glyph tops
    into one bar ('VV4' read as 'ay'). Flat pieces of a background's colour count as background from 24 px (40
    before); ink now starts on the glyphs' top row."""
    pieces = text_pieces(Image.open(CHIP).convert("RGB"))
    assert len(pieces) == 1
    piece = pieces[0]
    inked = np.flatnonzero((np.asarray(piece.image) < 128).any(axis=1)) / piece.scale
    assert GLYPH_ROWS[0] - 0.5 <= inked.min() and inked.max() <= GLYPH_ROWS[1] + 0.5
