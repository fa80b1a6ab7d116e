"""Typed OCR values: what engines return, and what the server reports."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from symphony_mcp.desktop.frames import Placed
from symphony_mcp.imaging.geometry import Rect


@dataclass(frozen=True)
class RecognizedWord:
    """One word as an engine sees it, in pixels of the image the engine was given."""

    text: str
    left: int
    top: int
    width: int
    height: int
    confidence: float  # 0..1

    def shifted(self, dx: int, dy: int) -> RecognizedWord:
        return RecognizedWord(self.text, self.left + dx, self.top + dy, self.width, self.height, self.confidence)

    def contains(self, x: float, y: float) -> bool:
        return self.left <= x < self.left + self.width and self.top <= y < self.top + self.height

    def scaled_down(self, factor: int) -> RecognizedWord:
        """The word in the pixels of an image `factor` times smaller than the one it was read in."""
        return RecognizedWord(
            self.text,
            self.left // factor,
            self.top // factor,
            max(1, self.width // factor),
            max(1, self.height // factor),
            self.confidence,
        )


class OcrWord(BaseModel):
    id: int = Field(description="index of the word in this result")
    text: str
    box: Rect = Field(description="in the result's space")
    confidence: float = Field(ge=0, le=1)
    line_id: int


class OcrLine(BaseModel):
    id: int
    text: str
    box: Rect = Field(description="in the result's space")
    word_ids: list[int]


class OcrResult(Placed):
    """All text found in a screen area, as words grouped into lines, in reading order."""

    engine: str
    area: Rect = Field(description="the area that was read, in the result's space")
    words: list[OcrWord]
    lines: list[OcrLine]
    elapsed_ms: float
    blocks: int = Field(description="text blocks the area was split into")
    blocks_recognized: int = Field(description="blocks that needed the engine (the rest came from the cache)")
