"""Tesseract through tesserocr: the engine runs in-process, so a block costs no process start.

One API object per worker thread (the API is not thread-safe); OMP_THREAD_LIMIT=1 because
Tesseract's own OpenMP threads fight each other on small machines (13 s instead of 1.7 s here). The limit is set
only while tesserocr loads: an OpenMP runtime reads it once, when it is loaded, and left in the environment it
also capped torch's own OpenMP runtime whenever torch loaded later, so EasyOCR's boxes depended on which engine
ran first (a word's edge 6 px off), and every program the server started inherited it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from symphony_mcp.errors import SymphonyError
from symphony_mcp.vision.ocr.engine import EngineSpec
from symphony_mcp.vision.ocr.preprocess import text_pieces
from symphony_mcp.vision.ocr.types import RecognizedWord

REREAD_LENGTH = 6  # a word of at most this many characters...
REREAD_CONFIDENCE = 0.75  # ...read less sure than this...
REREAD_SCALE = 2  # ...is read again this many times larger...
REREAD_HEIGHT = 24  # (px in the piece: taller words, such as upscaled bitmap text, are large enough already)
SURER_BY = 0.1  # ...and the second reading is kept when itself sure and surer by this much
INK_LEVEL = 128  # grey below which a pixel of a black-on-white piece is ink
_TESSDATA_CANDIDATES = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
)


def find_tessdata(language: str) -> str:
    """A tessdata folder holding `language`.traineddata: $TESSDATA_PREFIX first, then the usual places."""
    candidates = [os.environ.get("TESSDATA_PREFIX", ""), *_TESSDATA_CANDIDATES]
    for folder in filter(None, candidates):
        if (Path(folder) / f"{language}.traineddata").is_file():
            return folder
    raise SymphonyError(
        f"no Tesseract language data for {language!r}: install it (Debian: apt-get install tesseract-ocr-{language}) "
        "or point TESSDATA_PREFIX at a folder with the .traineddata file"
    )


@contextlib.contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """OMP_THREAD_LIMIT=1 while Tesseract's OpenMP runtime loads (a limit the user set stays as it is)."""
    if "OMP_THREAD_LIMIT" in os.environ:
        yield
        return
    os.environ["OMP_THREAD_LIMIT"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OMP_THREAD_LIMIT", None)


class TesseractEngine:
    def __init__(self, language: str = "eng") -> None:
        try:
            with _one_openmp_thread():
                from tesserocr import OEM, PSM, PyTessBaseAPI
        except ImportError as exc:
            raise SymphonyError(
                "the Tesseract engine needs tesserocr: pip install tesserocr (a dependency of symphony-mcp) and "
                "apt-get install tesseract-ocr-eng"
            ) from exc
        # LSTM only: deterministic for identical pixels (no adaptive legacy classifier state).
        self._api: Any = PyTessBaseAPI(
            path=find_tessdata(language), lang=language, oem=OEM.LSTM_ONLY, psm=PSM.SINGLE_BLOCK
        )

    def recognize(self, image: Image.Image) -> list[RecognizedWord]:
        """Words in the crop, read piece by piece from its black-on-white version (preprocess.py)."""
        words: list[RecognizedWord] = []
        for piece in text_pieces(image):
            words.extend(word.scaled_down(piece.scale).shifted(piece.left, 0) for word in self._read_piece(piece.image))
        return words

    def _read_piece(self, image: Image.Image) -> list[RecognizedWord]:
        """The piece's words, each short word read unsure read again (`_reread`). A piece read as nothing is read
        again as one line: Tesseract's block segmentation at times finds no line at all in a small piece that
        holds one short word (a chip's label 'nis'), which as a line it reads sure."""
        words = _read(self._api, image)
        if not words:
            return [word for word in self._read_as_line(image) if word.confidence >= REREAD_CONFIDENCE]
        return [kept for word in words for kept in self._reread(image, word)]

    def _read_as_line(self, image: Image.Image) -> list[RecognizedWord]:
        from tesserocr import PSM

        self._api.SetPageSegMode(PSM.SINGLE_LINE)
        try:
            return _read(self._api, image)
        finally:
            self._api.SetPageSegMode(PSM.SINGLE_BLOCK)

    def _reread(self, image: Image.Image, word: RecognizedWord) -> list[RecognizedWord]:
        """`word`, or what its surroundings read upscaled say is there when surer. A short word (a button's
        caption, a label, a code) has no context to lean on, and at screen sizes Tesseract often reads it wrong but
        unsure ('mn' for MIN, '1m' for Tm), while twice as large it reads it right and sure. A second reading that
        is itself unsure is no better evidence than the first ('oll' for OIl8 became 'oils' at 0.62)."""
        if (
            word.confidence >= REREAD_CONFIDENCE
            or len(word.text) > REREAD_LENGTH
            or word.height >= REREAD_HEIGHT
            or not _has_alnum(word.text)
        ):
            return [word]
        margin = word.height
        box = (
            max(0, word.left - margin),
            max(0, word.top - margin // 2),
            min(image.width, word.left + word.width + margin),
            min(image.height, word.top + word.height + margin // 2),
        )
        crop = image.crop(box)
        big = crop.resize((crop.width * REREAD_SCALE, crop.height * REREAD_SCALE), Image.Resampling.BICUBIC)
        again = [w.scaled_down(REREAD_SCALE).shifted(box[0], box[1]) for w in _read(self._api, big)]
        inside = [w for w in again if word.contains(w.left + w.width / 2, w.top + w.height / 2)]
        sure = min((w.confidence for w in inside), default=0.0)
        if sure >= REREAD_CONFIDENCE and sure > word.confidence + SURER_BY:
            return inside
        return [word]

    def close(self) -> None:
        self._api.End()


def _has_alnum(text: str) -> bool:
    """Whether `text` holds a letter or digit: marks read as punctuation alone ('|', '"') are a button's edge or a
    quote, and re-reading them (a third of the re-reads on button rows) cost time and found nothing."""
    return any(char.isalnum() for char in text)


def _read(api: Any, image: Image.Image) -> list[RecognizedWord]:
    """Tesseract's words in a black-on-white image, with boxes (fitted to their line, `_fitted`) and confidences
    (0-1)."""
    from tesserocr import RIL, iterate_level

    api.SetImageBytes(image.tobytes(), image.width, image.height, 1, image.width)
    api.Recognize()
    lines: list[list[RecognizedWord]] = []
    for item in iterate_level(api.GetIterator(), RIL.WORD):
        if not lines or item.IsAtBeginningOf(RIL.TEXTLINE):
            lines.append([])
        try:
            text = item.GetUTF8Text(RIL.WORD).strip()
        except RuntimeError:  # an empty result at this level
            continue
        box = item.BoundingBox(RIL.WORD)
        if not text or box is None:
            continue
        left, top, right, bottom = box
        lines[-1].append(
            RecognizedWord(text, left, top, right - left, bottom - top, round(item.Confidence(RIL.WORD) / 100, 4))
        )
    ink = np.asarray(image) < INK_LEVEL
    return [word for line in lines for word in _fitted(line, ink)]


def _fitted(line: list[RecognizedWord], ink: NDArray[np.bool_]) -> list[RecognizedWord]:
    """A line's words with boxes that hold their own glyphs only. Tesseract's LSTM sometimes stretches a word's box
    over the next word ('MAP' boxed over the button 'ON' beside it) or over the line above ('see' under 'Prices'
    boxed from the top of 'Prices'), and a click at its centre then misses the word. So a box ends where the next
    word's starts, and rows go that hold no ink of the band all the line's words share (their boxes' overlap)."""
    if not line:
        return line
    band_top = max(w.top for w in line)
    band_bottom = min(w.top + w.height for w in line)
    fitted = []
    for word, following in itertools.zip_longest(line, line[1:]):
        right = word.left + word.width
        if following is not None and word.left < following.left < right:
            right = following.left
        top, bottom = word.top, word.top + word.height
        if band_top < band_bottom:
            rows = np.asarray(ink[top:bottom, word.left : right].any(axis=1), dtype=bool)
            top, bottom = (word.top + row for row in _rows_of_band(rows, band_top - top, band_bottom - top))
        fitted.append(RecognizedWord(word.text, word.left, top, right - word.left, bottom - top, word.confidence))
    return fitted


def _rows_of_band(rows: NDArray[np.bool_], band_top: int, band_bottom: int) -> tuple[int, int]:
    """The rows [top, bottom) of the inked run (rows with ink, no blank row between) that holds the band: a word's
    ascenders and descenders stay, a line above or below it, apart by a blank row, goes. All rows when the band
    holds no ink (nothing to judge by)."""
    inked = np.flatnonzero(rows[band_top:band_bottom])
    if inked.size == 0:
        return 0, len(rows)
    top = band_top + int(inked[0])
    bottom = band_top + int(inked[-1]) + 1
    while top > 0 and rows[top - 1]:
        top -= 1
    while bottom < len(rows) and rows[bottom]:
        bottom += 1
    return top, bottom


def tesseract_spec(language: str = "eng") -> EngineSpec:
    return EngineSpec(name="tesseract", factory=lambda: TesseractEngine(language), workers=os.cpu_count() or 1)
