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

INK_CONTRAST = 24  # grey-level step between neighbours that counts as ink
RULE_FRACTION = 0.6  # a line inked along this share of a block's extent is a rule, not text
RULE_MIN_EXTENT = 48  # only blocks at least this long in that direction can have rules


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
    big block would make every edit inside it expensive to re-read.
    """

    row_gap: int = 6
    column_gap: int = 14
    fine_row_gap: int = 2
    fine_min_area: int = 120_000
    max_depth: int = 24


def ink_map(gray: NDArray[np.uint8]) -> NDArray[np.bool_]:
    """Pixels with a contrast step to their right or lower neighbour."""
    values = gray.astype(np.int16)
    ink = np.zeros(values.shape, dtype=bool)
    ink[:, :-1] |= np.abs(np.diff(values, axis=1)) > INK_CONTRAST
    ink[:-1, :] |= np.abs(np.diff(values, axis=0)) > INK_CONTRAST
    return ink


def split_blocks(gray: NDArray[np.uint8], rules: CutRules = CutRules()) -> list[Block]:
    """Leaves of an XY-cut over `gray`, in reading order (top to bottom, then left to right)."""
    blocks: list[Block] = []
    _cut(ink_map(gray), Block(0, 0, gray.shape[1], gray.shape[0]), 0, rules, blocks)
    return blocks


def _has_run(ink: NDArray[np.bool_], length: int, axis: int) -> NDArray[np.bool_]:
    """Per line across `axis`, whether it holds `length` consecutive ink pixels along `axis`."""
    counts = np.cumsum(ink, axis=axis, dtype=np.int32)
    counts = np.concatenate([np.zeros_like(counts.take([0], axis=axis)), counts], axis=axis)
    upper = counts.take(np.arange(length, counts.shape[axis]), axis=axis)
    lower = counts.take(np.arange(0, counts.shape[axis] - length), axis=axis)
    runs = np.asarray(((upper - lower) >= length).any(axis=axis), dtype=bool)
    return runs


def _text_ink(ink: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The block's ink without rules: unbroken lines along most of a long block (borders, separators).

    A rule is one continuous run, at least RULE_MIN_EXTENT long: no glyph stroke is, so text
    survives even where a column crosses many lines of it.
    """
    height, width = ink.shape
    text = ink
    if height >= RULE_MIN_EXTENT:
        length = max(RULE_MIN_EXTENT, int(RULE_FRACTION * height))
        text = text & ~_has_run(ink, length, axis=0)[None, :]
    if width >= RULE_MIN_EXTENT:
        length = max(RULE_MIN_EXTENT, int(RULE_FRACTION * width))
        text = text & ~_has_run(ink, length, axis=1)[:, None]
    return text


def _trim(ink: NDArray[np.bool_], block: Block) -> tuple[Block, NDArray[np.bool_]] | None:
    """Shrink the block to its text ink, repeatedly: once a panel or window is cut out, its own
    border spans the whole block and becomes a rule, which lets the next pass see inside it."""
    while True:
        text = _text_ink(ink[block.top : block.bottom, block.left : block.right])
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


def _cut(ink: NDArray[np.bool_], block: Block, depth: int, rules: CutRules, out: list[Block]) -> None:
    found = _trim(ink, block)
    if found is None:
        return
    trimmed, text = found
    if depth < rules.max_depth:
        # Horizontal cuts first (rows of text), then vertical (columns), alternating by depth.
        order = (1, 0) if depth % 2 == 0 else (0, 1)
        attempts = [(axis, rules.row_gap if axis == 1 else rules.column_gap) for axis in order]
        if trimmed.width * trimmed.height >= rules.fine_min_area:
            attempts.append((1, rules.fine_row_gap))
        for axis, min_gap in attempts:
            blank = np.asarray(~text.any(axis=axis), dtype=bool)
            gaps = _gaps(blank, min_gap)
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
