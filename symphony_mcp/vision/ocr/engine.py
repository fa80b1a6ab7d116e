"""The engine interface and the registry that builds engines by name, lazily, once per process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from symphony_mcp.vision.ocr.models import RecognizedWord


class OcrEngine(Protocol):
    """Recognises the words in an image. An instance is used by one thread at a time."""

    def recognize(self, image: Image.Image) -> list[RecognizedWord]: ...


@dataclass(frozen=True)
class EngineSpec:
    """How to build an engine and how many instances may run at once.

    `workers` instances are created, one per worker thread: engines that are single-threaded
    inside (Tesseract with OMP_THREAD_LIMIT=1) use one per core; engines that parallelise
    internally (torch, onnxruntime) use one.
    """

    name: str
    factory: Callable[[], OcrEngine]
    workers: int


def engine_spec(name: str, language: str = "eng") -> EngineSpec:
    """The spec of a named engine; its heavy imports happen only when an engine is built."""
    if name == "tesseract":
        from symphony_mcp.vision.ocr.tesseract_engine import tesseract_spec

        return tesseract_spec(language)
    if name == "easyocr":
        from symphony_mcp.vision.ocr.easyocr_engine import easyocr_spec

        return easyocr_spec()
    raise ValueError(f"unknown OCR engine {name!r}: use tesseract or easyocr")
