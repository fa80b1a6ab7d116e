"""The engine interface: what an OCR engine does, and how many instances may run at once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from symphony_mcp.errors import SymphonyError
from symphony_mcp.vision.ocr.types import RecognizedWord


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


class OcrEngineError(SymphonyError, RuntimeError):
    """An engine failed while loading or reading; the message names the engine and what to do."""

    def __init__(self, engine: str, cause: Exception) -> None:
        super().__init__(
            f"the {engine} OCR engine failed ({type(cause).__name__}: {cause}). The libraries it runs on are most "
            "likely not the releases symphony-mcp was tested with: install it from its lock (README, section "
            "'Installing from the lock'), or choose another engine with the setting ocr.engine "
            "(SYMPHONY_OCR__ENGINE=tesseract)"
        )
        self.engine = engine
