"""Tesseract through tesserocr: the engine runs in-process, so a block costs no process start.

One API object per worker thread (the API is not thread-safe); OMP_THREAD_LIMIT=1 because
Tesseract's own OpenMP threads fight each other on small machines (13 s instead of 1.7 s here). The limit is set
only while tesserocr loads: an OpenMP runtime reads it once, when it is loaded, and left in the environment it
also capped torch's own OpenMP runtime whenever torch loaded later, so EasyOCR's boxes depended on which engine
ran first (a word's edge 6 px off), and every program the server started inherited it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from PIL import Image

from symphony_mcp.errors import SymphonyError
from symphony_mcp.vision.ocr.engine import EngineSpec
from symphony_mcp.vision.ocr.preprocess import text_pieces
from symphony_mcp.vision.ocr.types import RecognizedWord

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
        words = []
        for piece in text_pieces(image):
            for word in self._read(piece.image):
                words.append(
                    RecognizedWord(
                        word.text,
                        piece.left + word.left // piece.scale,
                        word.top // piece.scale,
                        max(1, word.width // piece.scale),
                        max(1, word.height // piece.scale),
                        word.confidence,
                    )
                )
        return words

    def _read(self, image: Image.Image) -> list[RecognizedWord]:
        from tesserocr import RIL, iterate_level

        self._api.SetImageBytes(image.tobytes(), image.width, image.height, 1, image.width)
        self._api.Recognize()
        words = []
        for item in iterate_level(self._api.GetIterator(), RIL.WORD):
            try:
                text = item.GetUTF8Text(RIL.WORD).strip()
            except RuntimeError:  # an empty result at this level
                continue
            box = item.BoundingBox(RIL.WORD)
            if not text or box is None:
                continue
            left, top, right, bottom = box
            words.append(
                RecognizedWord(text, left, top, right - left, bottom - top, round(item.Confidence(RIL.WORD) / 100, 4))
            )
        return words

    def close(self) -> None:
        self._api.End()


def tesseract_spec(language: str = "eng") -> EngineSpec:
    return EngineSpec(name="tesseract", factory=lambda: TesseractEngine(language), workers=os.cpu_count() or 1)
