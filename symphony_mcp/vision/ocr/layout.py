"""Split a screen image into text blocks along blank gaps (recursive XY-cut).

Blocks are the unit of OCR caching: a block's result depends only on its own pixels, so an
unchanged block never needs the engine again, and OCR of a changed frame equals a fresh OCR.

Ink is local contrast (a step between neighbouring pixels), so flat backgrounds of any colour
are blank; straight rules that run along most of a tall or wide block (borders, separators,
the edges of side panels) are not counted, so they do not glue the text on both sides together.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

INK_CONTRAST = 24  # grey-level step between neighbours that counts as ink...
HUE_CONTRAST = 64  # ...and step in one colour channel
RULE_FRACTION = 0.6  # a line inked along this share of a block's extent is a rule, not text
RULE_MIN_EXTENT = 48  # only blocks at least this long in that direction can have rules
RULE_MAX_LENGTH = 256  # an unbroken run this long is a rule in a block of any size: no glyph stroke is
MIN_TEXT_EXTENT = 2  # a leaf this thin (px) is a line fragment or a dot


@dataclass(frozen=True)
class Block:
    left: int
    top: int
    right: int  # exclusive
    bottom: int  # exclusive

    @property
    def width(self) -> int:
        return self.right - self.left

    @property
    def height(self) -> int:
        return self.bottom - self.top


@dataclass(frozen=True)
class CutRules:
    """Blank gaps that separate blocks: rows of text need less than columns (word spaces must not cut).

    Large blocks that no ordinary gap splits (a terminal, a dense listing) are cut at the thin gaps
    between lines too: each engine call costs ~7 ms, so small text stays in paragraph blocks, but a
    big block would make every edit inside it expensive to re-read. Such a cut makes pieces of
    `fine_lines` lines, not single lines: Tesseract misreads small (bitmap) fonts more on a one-line crop.
    """

    row_gap: int = 6
    column_gap: int = 14
    fine_row_gap: int = 2
    fine_min_area: int = 120_000
    fine_lines: int = 6
    max_depth: int = 24


def ink_map(gray: NDArray[np.uint8], rgb: NDArray[np.uint8] | None = None) -> NDArray[np.bool_]:
    """Pixels with a contrast step to their right or lower neighbour: in grey, or (given the RGB image too) a large
    step in one colour channel, which is text of another hue at about the grey of its background (olive on
    purple). Only a large one: the soft edges of a pastel chip step a little in one channel, and as ink would glue
    a row of chips into one block."""
    ink = _ink(gray, INK_CONTRAST)
    if rgb is not None:
        for channel in range(3):
            ink |= _ink(np.ascontiguousarray(rgb[..., channel]), HUE_CONTRAST)
    return ink


def _ink(pixels: NDArray[np.uint8], contrast: int) -> NDArray[np.bool_]:
    ink = np.zeros(pixels.shape, dtype=bool)
    ink[:, :-1] = _steps(pixels[:, 1:], pixels[:, :-1], contrast)
    ink[:-1, :] |= _steps(pixels[1:, :], pixels[:-1, :], contrast)
    return ink


def _steps(a: NDArray[np.uint8], b: NDArray[np.uint8], contrast: int) -> NDArray[np.bool_]:
    """|a - b| > contrast in uint8 (max - min cannot wrap): no widening copies of a 1080p frame."""
    return np.asarray(np.maximum(a, b) - np.minimum(a, b) > contrast, dtype=bool)


@dataclass(frozen=True)
class _Ink:
    """A frame's ink, and for every pixel the length of the ink run that ends there (rightwards and
    downwards): computed once, so whether a line of any block holds a rule costs one comparison."""

    ink: NDArray[np.bool_]
    across: NDArray[np.uint16]  # horizontal run ending at each pixel
    down: NDArray[np.uint16]  # vertical run ending at each pixel

    @classmethod
    def of(cls, gray: NDArray[np.uint8], rgb: NDArray[np.uint8] | None) -> _Ink:
        ink = ink_map(gray, rgb)
        # Runs down the columns are counted along the rows of the transposed copy: contiguous, ~3x faster.
        return cls(ink, _run_lengths(ink), _run_lengths(np.ascontiguousarray(ink.T)).T)

    def text(self, block: Block) -> NDArray[np.bool_]:
        """The block's ink without rules: unbroken lines along most of a long block (borders, separators).

        A rule is one continuous run inside the block, at least RULE_MIN_EXTENT long: no glyph stroke is,
        so text survives even where a column crosses many lines of it.
        """
        text = self.ink[block.top : block.bottom, block.left : block.right]
        if block.height >= RULE_MIN_EXTENT:
            length = _rule_length(block.height)
            runs = self.down[block.top + length - 1 : block.bottom, block.left : block.right]
            text = text & ~np.asarray((runs >= length).any(axis=0))[None, :]
        if block.width >= RULE_MIN_EXTENT:
            length = _rule_length(block.width)
            runs = self.across[block.top : block.bottom, block.left + length - 1 : block.right]
            text = text & ~np.asarray((runs >= length).any(axis=1))[:, None]
        return text


def _rule_length(extent: int) -> int:
    """How long a run must be to be a rule in a block of this extent: most of the block, but never more than
    RULE_MAX_LENGTH, so the border of one of two windows side by side (half a block that spans both) is a rule too."""
    return max(RULE_MIN_EXTENT, min(int(RULE_FRACTION * extent), RULE_MAX_LENGTH))


def _run_lengths(ink: NDArray[np.bool_]) -> NDArray[np.uint16]:
    """Per pixel, how many ink pixels in a row end at it, counting rightwards (0 on blank pixels)."""
    position = np.arange(1, ink.shape[1] + 1, dtype=np.uint16)[None, :]
    last_blank = np.where(ink, np.uint16(0), position)
    np.maximum.accumulate(last_blank, axis=1, out=last_blank)
    np.subtract(position, last_blank, out=last_blank)
    return last_blank


def split_blocks(
    gray: NDArray[np.uint8], rules: CutRules = CutRules(), rgb: NDArray[np.uint8] | None = None
) -> list[Block]:
    """Leaves of an XY-cut over `gray` (with colour steps from `rgb` when given, see `ink_map`), in reading order
    (top to bottom, then left to right).

    Leaves at most MIN_TEXT_EXTENT px thin in either direction are dropped: rule fragments and dots, no text.
    """
    blocks: list[Block] = []
    _cut(_Ink.of(gray, rgb), Block(0, 0, gray.shape[1], gray.shape[0]), 0, rules, blocks)
    return [block for block in blocks if min(block.width, block.height) > MIN_TEXT_EXTENT]


def _trim(ink: _Ink, block: Block) -> tuple[Block, NDArray[np.bool_]] | None:
    """Shrink the block to its text ink, repeatedly: once a panel or window is cut out, its own
    border spans the whole block and becomes a rule, which lets the next pass see inside it."""
    while True:
        text = ink.text(block)
        rows = np.flatnonzero(text.any(axis=1))
        cols = np.flatnonzero(text.any(axis=0))
        if rows.size == 0 or cols.size == 0:
            return None
        trimmed = Block(
            block.left + int(cols[0]),
            block.top + int(rows[0]),
            block.left + int(cols[-1]) + 1,
            block.top + int(rows[-1]) + 1,
        )
        if trimmed == block:
            return block, text
        block = trimmed


def _gaps(blank: NDArray[np.bool_], min_gap: int) -> list[tuple[int, int]]:
    """Runs of at least `min_gap` blank lines strictly inside the range, as (start, end)."""
    gaps, start = [], None
    for index, is_blank in enumerate(blank.tolist()):
        if is_blank and start is None:
            start = index
        elif not is_blank and start is not None:
            if index - start >= min_gap and start > 0:
                gaps.append((start, index))
            start = None
    return gaps


def _every_nth_gap(gaps: list[tuple[int, int]], lines: int) -> list[tuple[int, int]]:
    """The gaps that cut a run of lines into pieces of `lines` lines (all of them for 1), the last piece
    taking up to 2 * lines - 1 of them (no short remainder)."""
    kept = gaps[lines - 1 :: lines]
    if kept and len(gaps) + 1 - lines * len(kept) < lines:
        kept.pop()
    return kept


def _cut(ink: _Ink, block: Block, depth: int, rules: CutRules, out: list[Block]) -> None:
    found = _trim(ink, block)
    if found is None:
        return
    trimmed, text = found
    if depth < rules.max_depth:
        # Horizontal cuts first (rows of text), then vertical (columns), alternating by depth.
        order = (1, 0) if depth % 2 == 0 else (0, 1)
        attempts = [(axis, rules.row_gap if axis == 1 else rules.column_gap, 1) for axis in order]
        if trimmed.width * trimmed.height >= rules.fine_min_area:
            attempts.append((1, rules.fine_row_gap, rules.fine_lines))
        for axis, min_gap, lines in attempts:
            blank = np.asarray(~text.any(axis=axis), dtype=bool)
            gaps = _every_nth_gap(_gaps(blank, min_gap), lines)
            if not gaps:
                continue
            bounds = [0, *((start + end) // 2 for start, end in gaps), blank.size]
            for start, end in itertools.pairwise(bounds):
                if axis == 1:
                    child = Block(trimmed.left, trimmed.top + start, trimmed.right, trimmed.top + end)
                else:
                    child = Block(trimmed.left + start, trimmed.top, trimmed.left + end, trimmed.bottom)
                _cut(ink, child, depth + 1, rules, out)
            return
    out.append(trimmed)
