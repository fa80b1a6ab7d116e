"""Text-grounded actions: read the screen, find a phrase, act on it precisely, record the choice.

The OCR grounder of OS-Symphony: click a phrase, put the caret at the start or end of a
phrase, select the span from one phrase to another. Matching needs no model.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, Field

from symphony_mcp.config import OcrSettings
from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.controller import CoordinateSpace, DesktopController
from symphony_mcp.desktop.geometry import Point
from symphony_mcp.desktop.models import MouseButton
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.memory.actions import ActionRecord, Grounding
from symphony_mcp.vision.ocr.matching import TextMatch, closest_texts, find_phrase, rank
from symphony_mcp.vision.ocr.models import OcrResult
from symphony_mcp.vision.ocr.pipeline import OcrPipeline, is_loaded, shared_pipeline

CaretPosition = Literal["start", "end"]


class TextSearch(BaseModel):
    """Where to look and which match to prefer."""

    region: tuple[float, float, float, float] | None = Field(None, description="[left, top, width, height]")
    near: tuple[float, float] | None = Field(None, description="prefer matches nearest this point")
    space: CoordinateSpace = "screenshot"
    frame_id: str | None = None
    monitor: int | None = None


class FoundText(BaseModel):
    phrase: str
    matches: list[TextMatch] = Field(description="best first (or nearest first when `near` is given)")
    ocr_ms: float
    engine: str


class SpanSelection(BaseModel):
    start: TextMatch
    end: TextMatch
    selection: ActionRecord
    replacement: ActionRecord | None = None


class OcrGrounder:
    """Owns one OCR pipeline per engine (built lazily, kept for the process) and acts through the controller."""

    def __init__(self, desktop: DesktopController, settings: OcrSettings) -> None:
        self.desktop = desktop
        self.settings = settings

    def pipeline(self, engine: str | None = None) -> OcrPipeline:
        return shared_pipeline(engine or self.settings.engine, self.settings.language)

    def is_loaded(self, engine: str | None = None) -> bool:
        return is_loaded(engine or self.settings.engine, self.settings.language)

    async def warm_up(self, engine: str | None = None) -> None:
        await asyncio.to_thread(self.pipeline(engine).warm_up)

    async def read(self, search: TextSearch, engine: str | None = None) -> tuple[Frame, OcrResult]:
        """OCR of a fresh capture of the monitor or region."""
        region = None
        if search.region is not None:
            region = await self.desktop.region_to_screen(search.region, search.space, search.frame_id)
        frame = await self.desktop.capture(search.monitor, region)
        pipeline = self.pipeline(engine)
        return frame, await asyncio.to_thread(pipeline.read, frame.image, frame.area)

    async def find(self, phrase: str, search: TextSearch, engine: str | None = None) -> FoundText:
        _, result = await self.read(search, engine)
        matches = await self._matches(result, phrase, search)
        return FoundText(phrase=phrase, matches=matches, ocr_ms=result.elapsed_ms, engine=result.engine)

    async def _matches(self, result: OcrResult, phrase: str, search: TextSearch) -> list[TextMatch]:
        """Matches of `phrase` in one reading, ranked; none is an error that shows the closest text."""
        if not phrase.strip():
            raise InvalidInputError("phrase is empty; give the text to look for, e.g. 'Save as'")
        near = None
        if search.near is not None:
            near, _ = await self.desktop.to_screen(*search.near, search.space, search.frame_id)
        matches = rank(find_phrase(result, phrase, self.settings.min_score), near=near)
        if not matches:
            seen = closest_texts(result, phrase)
            hint = "; ".join(repr(t) for t in seen) if seen else "no text at all"
            raise InvalidInputError(
                f"{phrase!r} is not on screen{' in that region' if search.region else ''}. Closest text seen: {hint}"
            )
        return matches

    async def _pick(
        self, phrase: str, search: TextSearch, index: int, result: OcrResult | None = None
    ) -> tuple[TextMatch, Grounding]:
        """The chosen match and how it was chosen; reads the screen unless given a reading."""
        if result is None:
            _, result = await self.read(search)
        matches = await self._matches(result, phrase, search)
        if not 0 <= index < len(matches):
            listing = "; ".join(f"{i}: {m.text!r} at ({m.center.x}, {m.center.y})" for i, m in enumerate(matches))
            raise InvalidInputError(f"index {index} is out of range: {len(matches)} match(es): {listing}")
        match = matches[index]
        grounding = Grounding(
            method="ocr",
            query=phrase,
            matched_text=match.text,
            score=match.score,
            box=match.box,
            candidates=len(matches),
        )
        return match, grounding

    async def click_text(
        self, phrase: str, search: TextSearch, index: int = 0, button: MouseButton = "left", count: int = 1
    ) -> ActionRecord:
        match, grounding = await self._pick(phrase, search, index)
        return await self._click(match.center, button=button, count=count, grounding=grounding)

    async def locate_cursor(
        self, phrase: str, position: CaretPosition, search: TextSearch, index: int = 0
    ) -> ActionRecord:
        """Click at the edge of the phrase so the caret lands right before (start) or after (end) it."""
        match, grounding = await self._pick(phrase, search, index)
        return await self._click(match.start if position == "start" else match.end, grounding=grounding)

    async def highlight_span(
        self,
        start_phrase: str,
        end_phrase: str,
        search: TextSearch,
        start_index: int = 0,
        end_index: int = 0,
        replace_with: str | None = None,
    ) -> SpanSelection:
        """Drag from the start of `start_phrase` to the end of `end_phrase`; optionally type over it."""
        _, result = await self.read(search)  # one reading for both ends
        start, start_grounding = await self._pick(start_phrase, search, start_index, result)
        end, end_grounding = await self._pick(end_phrase, search, end_index, result)
        if _before(end, start):
            raise InvalidInputError(
                f"{end_phrase!r} (at y {end.end.y}) comes before {start_phrase!r} (at y {start.start.y}); "
                "the span must run forward in reading order (pick other matches with start_index/end_index)"
            )
        selection = await self.desktop.drag(
            (start.start.x, start.start.y),
            (end.end.x, end.end.y),
            space="screen",
            grounding=[start_grounding, end_grounding],
        )
        replacement = None
        if replace_with == "":
            replacement = await self.desktop.hotkey(["backspace"])
        elif replace_with is not None:
            replacement = await self.desktop.type_text(replace_with)
        return SpanSelection(start=start, end=end, selection=selection, replacement=replacement)

    async def _click(
        self, point: Point, grounding: Grounding, button: MouseButton = "left", count: int = 1
    ) -> ActionRecord:
        return await self.desktop.click(
            point.x, point.y, button=button, count=count, space="screen", grounding=[grounding]
        )


def _before(a: TextMatch, b: TextMatch) -> bool:
    """Whether match `a` ends before match `b` starts in reading order (line first, then x)."""
    a_line, b_line = a.boxes[-1], b.boxes[0]
    if a_line.top + a_line.height <= b_line.top:
        return True
    same_line = a_line.top < b_line.top + b_line.height and b_line.top < a_line.top + a_line.height
    return same_line and a.end.x < b.start.x
