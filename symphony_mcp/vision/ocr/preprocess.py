"""A block's crop as Tesseract reads it best: black text on white, nothing else, in pieces of one text size.

Screens draw text on many local backgrounds: a page, a coloured button, a chip, a field inside a panel.
Tesseract binarises a whole image at once and takes box outlines for glyphs, so a row of bordered buttons or
of coloured labels read as nothing or as "@" and "&". Here every pixel is compared with its own background
(the colour of the nearest large flat area), which turns any polarity and colour, and low contrast, into
black on white; the rims between two backgrounds, straight rules and box outlines are dropped, and every
remaining mark is stretched to full contrast. Text far apart (labels in a toolbar, mixed sizes) is cut into
pieces, since one line of mixed sizes confuses Tesseract's line model, and short pieces of small text
(a button's word, without context to lean on) are upscaled. Text drawn without antialiasing (X core bitmap
fonts, as in a default xterm) is upscaled smoothly to the glyph size Tesseract reads well, and solid blocks (a
terminal's cursor) are dropped with the rules.

Everything is a function of the crop's pixels alone, so the result stays deterministic and cacheable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from PIL import Image
from scipy import ndimage

FLAT_STEP = 3  # grey step between neighbours inside one flat background (gradients of buttons, shadows)
DEEP = 2  # a background region holds a flat square of 2 * DEEP + 1 px (a glyph's stroke does not)
# Smaller flat pieces of a background's colour (counters, gaps) are not backgrounds; a strip of a pill's colour cut
# off from the pill by glyphs that nearly touch its edge (37 px over 9 px text) is one.
SAME_COLOUR_AREA = 24
RIM_SPREAD = 24  # grey difference of two backgrounds that makes the pixels between them a rim, not text
RIM_REACH = 2  # how far (px) a rim's antialiasing reaches
INK = 24  # channel distance from the local background that counts as a mark
LINE_THICKNESS = 3  # marks at most this thick...
LINE_LENGTH = 2.5  # ...and this many glyph heights long are rules
OUTLINE_HEIGHT = 1.5  # marks this many glyph heights tall...
OUTLINE_FILL = 0.35  # ...that fill this little of their box and enclose another mark are outlines
SOLID_FILL = 0.95  # marks that fill this much of their box...
SOLID_WIDTH = 0.4  # ...are at least this many times as wide as tall, and as tall as a glyph are solid blocks
DOT_SIZE = 0.5  # marks at most this many glyph heights wide and tall are dots
PIECE_GAP = 3.0  # blank columns this many glyph heights wide separate pieces...
MIN_PIECE_GAP = 16  # ...and at least this many px
PIECE_PADDING = 6  # white margin around a piece
SHORT_PIECE = 10  # a piece narrower than this many glyph heights is short...
SMALL_GLYPHS = 12  # ...and upscaled when its glyphs are shorter than this (px)
UPSCALE = 2
SOFT_SHARE = 0.05  # text whose marks have fewer half-strength pixels than this share is drawn without antialiasing...
BITMAP_GLYPH = 28  # ...(a bitmap font) and upscaled until its glyphs are about this tall (px)


@dataclass(frozen=True)
class Piece:
    """Part of a crop, ready for the engine: `image` (mode L) shows crop columns from `left`, `scale` times."""

    image: Image.Image
    left: int
    scale: int


def text_pieces(crop: Image.Image) -> list[Piece]:
    """The crop's text as black-on-white pieces, left to right; none when it holds no marks."""
    rgb = np.asarray(crop.convert("RGB"))
    grey = np.asarray(crop.convert("L"))
    ink, glyph = _clean(*_strength(rgb, grey))
    bitmap = _bitmap(ink)
    pieces = []
    for start, end in _column_runs(ink, max(MIN_PIECE_GAP, PIECE_GAP * glyph)):
        left = max(0, start - PIECE_PADDING)
        part = ink[:, left : end + PIECE_PADDING]
        image = Image.fromarray(255 - np.round(part * 255).astype(np.uint8), "L")
        scale = _scale(glyph, end - start, bitmap)
        if scale > 1:
            image = image.resize((image.width * scale, image.height * scale), Image.Resampling.BICUBIC)
        pieces.append(Piece(image, left, scale))
    return pieces


def _bitmap(ink: NDArray[np.float32]) -> bool:
    """Whether the text is drawn without antialiasing (an X core bitmap font, as xterm's default `fixed`): its
    marks are all full strength, with hardly any pixels of the soft edges smooth rendering gives."""
    marked = np.count_nonzero(ink > 0.1)
    soft = np.count_nonzero((ink > 0.25) & (ink < 0.75))
    return bool(marked > 0 and soft < SOFT_SHARE * marked)


def _scale(glyph: float, width: int, bitmap: bool) -> int:
    """How many times a piece is upscaled. Tesseract's models learnt smooth glyphs about 30 px tall: a bitmap
    font's jagged 6-9 px glyphs ('hello from' read as 'thello fran') read right once smoothly upscaled to about
    BITMAP_GLYPH. Smooth small text is upscaled only in short pieces (a button's word, with no context to lean
    on): in long lines the cost is not repaid."""
    if bitmap and glyph > 0:  # glyph 0: faint marks only, none strong enough to measure
        return max(1, math.ceil(BITMAP_GLYPH / glyph))
    return UPSCALE if glyph < SMALL_GLYPHS and width < SHORT_PIECE * glyph else 1


def _strength(rgb: NDArray[np.uint8], grey: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.bool_]]:
    """Per pixel, the largest channel distance to its local background (0 on backgrounds and their rims), and
    whether the pixel is darker than that background."""
    flat = _flat(grey)
    border = _border_colour(rgb)
    border_grey = _grey(border)
    if _one_background(flat, grey, border_grey):
        return _distance(rgb, border), grey < border_grey
    background, labels, colours = _backgrounds(flat, grey)
    _, (rows, cols) = ndimage.distance_transform_edt(~background, return_indices=True)
    strength = _distance(rgb, rgb[rows, cols])
    # A pixel near two backgrounds of different grey is the antialiased rim between them.
    region_grey = colours[labels].astype(np.int16)
    size = 2 * RIM_REACH + 1
    high = ndimage.maximum_filter(np.where(background, region_grey, -1), size=size)
    low = ndimage.minimum_filter(np.where(background, region_grey, 256), size=size)
    rim = (high >= 0) & (low <= 255) & (high - low > RIM_SPREAD) & ~background
    strength[rim] = 0
    return strength, grey < grey[rows, cols]


def _flat(grey: NDArray[np.uint8]) -> NDArray[np.bool_]:
    """Pixels within FLAT_STEP of all four neighbours."""
    flat = np.ones(grey.shape, dtype=bool)
    across = _step(grey[:, 1:], grey[:, :-1]) <= FLAT_STEP
    down = _step(grey[1:, :], grey[:-1, :]) <= FLAT_STEP
    flat[:, :-1] &= across
    flat[:, 1:] &= across
    flat[:-1, :] &= down
    flat[1:, :] &= down
    return flat


def _backgrounds(
    flat: NDArray[np.bool_], grey: NDArray[np.uint8]
) -> tuple[NDArray[np.bool_], NDArray[np.int32], NDArray[np.uint8]]:
    """(background mask, flat-region labels, grey of each region): flat regions that touch the crop's edge,
    hold a flat square too big for a stroke, or share such a region's grey and are not tiny."""
    labels, count = ndimage.label(flat)
    size = 2 * DEEP + 1
    core = ndimage.minimum_filter(flat.view(np.uint8), size=size, mode="constant", cval=0).astype(bool)
    chosen = np.zeros(count + 1, dtype=bool)
    chosen[labels[core]] = True
    edges = np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]])
    chosen[edges] = True
    chosen[0] = False
    # The grey of each region (its first pixel's), and its size.
    flat_index = np.flatnonzero(labels)
    first = np.zeros(count + 1, dtype=np.int64)
    first[labels.ravel()[flat_index[::-1]]] = flat_index[::-1]
    colours = grey.ravel()[first]
    sizes = np.bincount(labels.ravel(), minlength=count + 1)
    chosen |= np.isin(colours, colours[chosen]) & (sizes >= SAME_COLOUR_AREA)
    chosen[0] = False
    return chosen[labels], labels, colours


def _step(a: NDArray[np.uint8], b: NDArray[np.uint8]) -> NDArray[np.uint8]:
    return np.asarray(np.maximum(a, b) - np.minimum(a, b), dtype=np.uint8)


def _distance(rgb: NDArray[np.uint8], reference: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Largest per-channel distance between `rgb` and `reference` (a colour or an image of colours)."""
    reference = np.broadcast_to(reference, rgb.shape)
    steps = [_step(rgb[..., c], reference[..., c]) for c in range(3)]
    return np.maximum(np.maximum(steps[0], steps[1]), steps[2])


def _packed(rgb: NDArray[np.uint8]) -> NDArray[np.uint32]:
    """Each pixel's colour as one number (cheaper to compare and count than triples)."""
    wide = rgb.astype(np.uint32)
    return np.asarray((wide[..., 0] << 16) | (wide[..., 1] << 8) | wide[..., 2], dtype=np.uint32)


def _border_colour(rgb: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """The most common colour on the crop's edge (the block's padding)."""
    border = _packed(np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]))
    colours, counts = np.unique(border, return_counts=True)
    colour = int(colours[counts.argmax()])
    return np.array([colour >> 16, (colour >> 8) & 255, colour & 255], dtype=np.uint8)


def _grey(colour: NDArray[np.uint8]) -> int:
    """The colour's grey as PIL's convert("L") computes it (ITU-R 601-2 luma)."""
    red, green, blue = (int(v) for v in colour)
    return (red * 19595 + green * 38470 + blue * 7471 + 0x8000) >> 16


def _one_background(flat: NDArray[np.bool_], grey: NDArray[np.uint8], border_grey: int) -> bool:
    """Whether every candidate background (flat areas on the edge or too big for a stroke) has the border's
    grey: then the slower search for local backgrounds would find just that one (most blocks)."""
    core = ndimage.minimum_filter(flat.view(np.uint8), size=2 * DEEP + 1, mode="constant", cval=0).astype(bool)
    edge = np.zeros(flat.shape, dtype=bool)
    edge[[0, -1], :] = True
    edge[:, [0, -1]] = True
    candidates = grey[core | (edge & flat)].astype(np.int16)
    return bool(np.all(np.abs(candidates - border_grey) <= FLAT_STEP))


def _clean(strength: NDArray[np.uint8], darker: NDArray[np.bool_]) -> tuple[NDArray[np.float32], float]:
    """Marks (8-connected pixels at least INK from their background) without rules, box outlines and
    ellipses, each stretched so its strongest pixel is full black (1.0); faint pixels outside marks keep their
    share. A mark keeps only the pixels on its main side of the background (darker or lighter): embossed text
    (a disabled label's light shadow) would read as two overlapping copies. Also the median height of the
    marks: about a lowercase letter's (x-height and ascenders)."""
    out = strength.astype(np.float32) / np.float32(max(int(strength.max()), INK))
    labels, count = ndimage.label(strength >= INK, structure=np.ones((3, 3)))
    if count == 0:
        return out, 0.0
    boxes = np.array([(rows.start, cols.start, rows.stop, cols.stop) for rows, cols in ndimage.find_objects(labels)])
    areas = np.bincount(labels.ravel(), minlength=count + 1)[1:]
    heights = boxes[:, 2] - boxes[:, 0]
    # Glyphs fill a fair share of their box; outlines do not, and a row of outlined buttons has as many
    # outlines as letters, so they are left out of the estimate, and so are dots and rules.
    solid = (areas >= OUTLINE_FILL * heights * (boxes[:, 3] - boxes[:, 1])) & (heights > LINE_THICKNESS)
    glyph = max(float(np.median(heights[solid] if solid.any() else heights)), 3.0)
    drop = np.concatenate([[True], _rules(boxes, glyph) | _ellipses(boxes, glyph) | _solid(boxes, areas, glyph)])
    marked = labels > 0
    weight = strength.astype(np.float64)
    dark = np.bincount(labels.ravel(), weights=(weight * darker).ravel(), minlength=count + 1)
    light = np.bincount(labels.ravel(), weights=(weight * ~darker).ravel(), minlength=count + 1)
    kept = marked & (darker == (dark >= light)[labels]) & ~drop[labels]
    peaks = np.zeros(count + 1, dtype=np.float32)
    np.maximum.at(peaks, labels[kept], strength[kept])
    out[marked] = 0.0
    out[kept] = np.minimum(1.0, strength[kept] / np.maximum(peaks[labels[kept]], 1.0))
    for mark in _outlines(boxes, areas, glyph):
        # Only the outline's straight sides go: text drawn close enough to touch them stays.
        top, left, bottom, right = boxes[mark]
        window = out[top:bottom, left:right]
        window[_long_runs(labels[top:bottom, left:right] == mark + 1, OUTLINE_HEIGHT * glyph)] = 0
    return out, glyph


Boxes = NDArray[np.int64]  # one (top, left, bottom, right) row per mark


def _rules(boxes: Boxes, glyph: float) -> NDArray[np.bool_]:
    """Thin long marks: rules, underlines, a field's edge."""
    heights, widths = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    long_thin = ((widths <= LINE_THICKNESS) & (heights >= LINE_LENGTH * glyph)) | (
        (heights <= LINE_THICKNESS) & (widths >= LINE_LENGTH * glyph)
    )
    return np.asarray(long_thin, dtype=bool)


def _solid(boxes: Boxes, areas: NDArray[np.int64], glyph: float) -> NDArray[np.bool_]:
    """Filled rectangles a glyph tall or taller: a terminal's block cursor, a filled square. Left in, a cursor
    under a word glues it into one tall blob with the word ('every' next to the cursor read as ':'); a glyph
    never fills its box (a bold 'I' or 'l' does, but is far narrower than tall)."""
    heights, widths = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    solid = (areas >= SOLID_FILL * heights * widths) & (heights >= glyph) & (widths >= SOLID_WIDTH * heights)
    return np.asarray(solid & (widths > LINE_THICKNESS), dtype=bool)


def _outlines(boxes: Boxes, areas: NDArray[np.int64], glyph: float) -> list[int]:
    """Hollow tall marks around another mark: the outline of a button or a field."""
    heights, widths = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    found = []
    for mark in np.flatnonzero((heights >= OUTLINE_HEIGHT * glyph) & (areas < OUTLINE_FILL * heights * widths)):
        inside = _within(boxes, boxes[mark]) & (areas >= 4)
        inside[mark] = False
        if inside.any():
            found.append(int(mark))
    return found


def _long_runs(mask: NDArray[np.bool_], length: float) -> NDArray[np.bool_]:
    """Pixels of `mask` on a straight horizontal or vertical run at least `length` long."""
    found = np.zeros(mask.shape, dtype=bool)
    for axis in (0, 1):
        total = _run_lengths(mask, axis) + np.flip(_run_lengths(np.flip(mask, axis), axis), axis) - 1
        found |= mask & (total >= length)
    return found


def _run_lengths(mask: NDArray[np.bool_], axis: int) -> NDArray[np.int32]:
    """Per pixel, how many mask pixels in a row end at it along `axis` (0 off the mask)."""
    shape = [1, 1]
    shape[axis] = mask.shape[axis]
    position = np.arange(1, mask.shape[axis] + 1, dtype=np.int32).reshape(shape)
    last_gap = np.maximum.accumulate(np.where(mask, 0, position), axis=axis)
    return np.asarray(position - last_gap, dtype=np.int32)


def _within(boxes: Boxes, outer: NDArray[np.int64]) -> NDArray[np.bool_]:
    top, left, bottom, right = outer
    return np.asarray(
        (boxes[:, 0] >= top) & (boxes[:, 1] >= left) & (boxes[:, 2] <= bottom) & (boxes[:, 3] <= right), dtype=bool
    )


def _ellipses(boxes: Boxes, glyph: float) -> NDArray[np.bool_]:
    """Three or more free dots in a row on one baseline ("...", dot leaders): Tesseract reads them as words
    ("vee", "tee") and misreads the word next to them ("... elif" became "Clif"). A dot is free when no other
    mark is above or below it (the dot of an i, a colon)."""
    drop = np.zeros(len(boxes), dtype=bool)
    size = max(2.0, DOT_SIZE * glyph)
    dots = np.flatnonzero((boxes[:, 2] - boxes[:, 0] <= size) & (boxes[:, 3] - boxes[:, 1] <= size))
    free = []
    for candidate in dots:
        top, left, bottom, right = boxes[candidate]
        near = (
            (boxes[:, 1] < right) & (boxes[:, 3] > left) & (boxes[:, 0] < bottom + glyph) & (boxes[:, 2] > top - glyph)
        )
        if near.sum() == 1:
            free.append(int(candidate))
    free.sort(key=lambda i: (boxes[i, 2], boxes[i, 1]))
    run: list[int] = []
    for dot in free:
        last = boxes[run[-1]] if run else None
        if last is None or abs(int(boxes[dot, 2] - last[2])) > 1 or not 0 <= boxes[dot, 1] - last[3] <= glyph:
            if len(run) >= 3:
                drop[run] = True
            run = []
        run.append(dot)
    if len(run) >= 3:
        drop[run] = True
    return drop


def _column_runs(ink: NDArray[np.float32], gap: float) -> list[tuple[int, int]]:
    """Column ranges [start, end) holding marks, split where blank columns span more than `gap`."""
    columns = np.flatnonzero((ink > 0.1).any(axis=0))
    if columns.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(columns) > gap)
    starts = [int(columns[0]), *(int(columns[i + 1]) for i in breaks)]
    ends = [*(int(columns[i]) + 1 for i in breaks), int(columns[-1]) + 1]
    return list(zip(starts, ends, strict=True))
