"""OCR details that decide a click on strangers' screens (issue 26 item 3): word boxes from the Tesseract engine hold
their own glyphs (Tesseract's LSTM at times stretches a word's box over the next word or the line above, and a click
at the box's centre then misses the word), and text in a colour of its background's grey is seen.

Text is rendered with DejaVu Sans (one of the tests' fonts, tests/fonts/fonts.conf) by Pillow, so the pixels are the
same on every machine set up by scripts/install.sh.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.vision.ocr.engines import engine_spec
from symphony_mcp.vision.ocr.matching import find_phrase
from symphony_mcp.vision.ocr.pipeline import OcrPipeline
from symphony_mcp.vision.ocr.tesseract_engine import INK_LEVEL, TesseractEngine, _fitted
from symphony_mcp.vision.ocr.types import RecognizedWord

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def two_lines(first: str, second: str, size: int = 22) -> tuple[Image.Image, list[tuple[int, int, int, int]]]:
    """Black on white, two lines 4 px apart; the inked box (left, top, right, bottom) of every word of `second`."""
    font = ImageFont.truetype(FONT, size)
    image = Image.new("L", (40 + 16 * size * max(len(first), len(second)) // 20, 3 * size + 40), 255)
    draw = ImageDraw.Draw(image)
    draw.text((20, 20), first, font=font, fill=0)
    top = 20 + size + 4
    boxes, x = [], 20
    for word in second.split():
        box = draw.textbbox((x, top), word, font=font)
        draw.text((x, top), word, font=font, fill=0)
        boxes.append(tuple(int(v) for v in box))
        x = box[2] + int(draw.textlength(" ", font=font))
    return image, boxes


def test_a_box_stretched_over_the_line_above_and_the_next_word_is_cut_back_to_its_word() -> None:
    image, (see_box, terms_box, of_box) = two_lines("Prices exclude delivery", "see terms of")
    ink = np.asarray(image) < INK_LEVEL
    terms, of = (word(text, box) for text, box in (("terms", terms_box), ("of", of_box)))
    # As Tesseract boxed it on a real form: from the top of the line above, and reaching into 'terms'.
    stretched = RecognizedWord("see", see_box[0], 18, terms_box[0] + 10 - see_box[0], see_box[3] + 2 - 18, 0.56)
    see, *rest = _fitted([stretched, terms, of], ink)
    assert see.left == see_box[0] and see.left + see.width == terms_box[0]  # ends where the next word starts
    assert abs(see.top - see_box[1]) <= 1 and abs(see.top + see.height - see_box[3]) <= 1  # its own line's rows
    assert rest == [terms, of]  # boxes that were right stay as they were


def word(text: str, box: tuple[int, int, int, int]) -> RecognizedWord:
    return RecognizedWord(text, box[0], box[1], box[2] - box[0], box[3] - box[1], 0.9)


def test_words_keep_their_ascenders_and_descenders() -> None:
    image, boxes = two_lines("above the line", "a dog jumps high")
    ink = np.asarray(image) < INK_LEVEL
    words = [
        RecognizedWord(t, b[0], b[1] - 3, b[2] - b[0], b[3] - b[1] + 6, 0.9)
        for t, b in zip(["a", "dog", "jumps", "high"], boxes, strict=True)
    ]
    for fitted, (_, top, _, bottom) in zip(_fitted(words, ink), boxes, strict=True):
        assert abs(fitted.top - top) <= 1 and abs(fitted.top + fitted.height - bottom) <= 1


def test_the_engine_boxes_each_word_of_the_second_line_on_that_line() -> None:
    image, boxes = two_lines("Prices exclude delivery and local taxes", "see terms of service", size=11)
    engine = TesseractEngine()
    try:
        words = {w.text: w for w in engine.recognize(image.convert("RGB"))}
    finally:
        engine.close()
    for text, (left, top, right, bottom) in zip(("see", "terms", "of", "service"), boxes, strict=True):
        read = words[text]
        centre = read.left + read.width / 2, read.top + read.height / 2
        assert left <= centre[0] < right and top <= centre[1] < bottom, (text, read)


def test_text_of_another_hue_at_its_background_grey_is_read() -> None:
    """A button word in olive on purple: both about the same grey (134 and 138), so a layout that looks at grey
    steps only sees no text there; the colour channels step by 150."""
    image = Image.new("RGB", (400, 120), (250, 250, 250))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((100, 40, 190, 76), 5, fill=(137, 126, 204), outline=(150, 150, 150))
    font = ImageFont.truetype(FONT, 16)
    draw.text((123, 48), "END", font=font, fill=(134, 133, 53))
    left, top, right, bottom = (int(v) for v in draw.textbbox((123, 48), "END", font=font))
    grey = np.asarray(image.convert("L"))
    assert abs(int(grey[60, 105]) - int(grey[top + 2 : bottom, left:right].min())) < 24  # the same grey, as said
    pipeline = OcrPipeline(engine_spec("tesseract"))
    try:
        result = pipeline.read(image, Rect(left=0, top=0, width=image.width, height=image.height))
    finally:
        pipeline.close()
    [match, *_] = find_phrase(result, "END")
    assert match.exact and left <= match.center.x < right and top <= match.center.y < bottom
