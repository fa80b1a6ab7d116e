"""The engine registry: engines by name, their heavy imports deferred until one is built."""

from __future__ import annotations

from symphony_mcp.vision.ocr.engine import EngineSpec


def engine_spec(name: str, language: str = "eng") -> EngineSpec:
    """The spec of a named engine; its heavy imports happen only when an engine is built."""
    if name == "tesseract":
        from symphony_mcp.vision.ocr.tesseract_engine import tesseract_spec

        return tesseract_spec(language)
    if name == "easyocr":
        from symphony_mcp.vision.ocr.easyocr_engine import easyocr_spec

        return easyocr_spec()
    raise ValueError(f"unknown OCR engine {name!r}: use tesseract or easyocr")
