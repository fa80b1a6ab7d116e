"""Text blocks (vision/ocr/layout.py) on screens like an X desktop at 1280x720: two windows side by side, and a
terminal of many tightly spaced lines.

Text is DejaVu Sans Mono (one of the tests' fonts, tests/fonts/fonts.conf) drawn by Pillow: the same pixels on every
machine set up by scripts/install.sh.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from symphony_mcp.vision.ocr.layout import Block, CutRules, split_blocks

MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
FONT_SIZE = 11
PITCH = 15  # line pitch: 2-4 blank rows between lines, fewer than CutRules.row_gap
LISTING = "-rw-r--r-- 1 dev dev 56349 Nov 15 18:26 l05S.txt"


def terminal(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], ink: str, paper: str, first_top: int
) -> list[int]:
    """A framed window filled with listing lines from `first_top` down; the tops of its lines."""
    draw.rectangle(box, fill=paper, outline="#808080")
    font = ImageFont.truetype(MONO, FONT_SIZE)
    tops = list(range(first_top, box[3] - PITCH, PITCH))
    for top in tops:
        draw.text((box[0] + 6, top), LISTING, font=font, fill=ink)
    return tops


def blocks_of(image: Image.Image) -> list[Block]:
    return split_blocks(np.asarray(image.convert("L")), rgb=np.asarray(image))


def test_windows_side_by_side_are_never_one_block() -> None:
    # Each window's top and bottom edge runs along half the screen: less than most of a block spanning both, so
    # they glued the windows' text into one block, half on white and half on black, which Tesseract misread.
    image = Image.new("RGB", (1280, 720), "#3a6ea5")
    draw = ImageDraw.Draw(image)
    terminal(draw, (2, 2, 636, 716), "black", "white", first_top=4)
    terminal(draw, (642, 2, 1276, 716), "#e0e0e0", "#101820", first_top=11)  # lines between the left one's
    blocks = blocks_of(image)
    assert blocks
    assert all(block.right <= 640 or block.left >= 640 for block in blocks), blocks


def test_a_tall_terminal_is_cut_into_pieces_of_several_lines() -> None:
    # Too big for one block (every edit would re-read all of it), but one-line crops of a small font are misread:
    # the thin gaps between lines cut it into pieces of fine_lines lines, the last one taking the remainder.
    image = Image.new("RGB", (1280, 720), "white")
    tops = terminal(ImageDraw.Draw(image), (0, 0, 1279, 719), "black", "white", first_top=8)
    blocks = blocks_of(image)
    lines = CutRules().fine_lines
    per_block = [sum(block.top <= top + FONT_SIZE // 2 < block.bottom for top in tops) for block in blocks]
    assert sum(per_block) == len(tops) == 47
    assert per_block == [lines] * 6 + [len(tops) - 6 * lines], per_block
