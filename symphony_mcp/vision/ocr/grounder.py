"""Text-grounded actions: read the screen, find a phrase, act on it precisely, record the choice.

The OCR grounder of OS-Symphony: click a phrase, put the caret at the start or end of a
phrase, select the span from one phrase to another. Matching needs no model.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from symphony_mcp.config import OcrSettings
from symphony_mcp.desktop.actions import DesktopActions
from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.frames import CallerSpace, Placed
from symphony_mcp.desktop.records import ActionRecord, Grounding, Target
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.desktop.types import MouseButton
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.imaging.geometry import Point, Region
from symphony_mcp.vision.ocr.first_match import FirstMatch
from symphony_mcp.vision.ocr.matching import TextMatch, closest_texts, find_phrase, rank
from symphony_mcp.vision.ocr.pipeline import OcrPipeline, PartialReading, is_loaded, shared_pipeline
from symphony_mcp.vision.ocr.types import OcrResult, OcrWord

CaretPosition = Literal["start", "end"]


@dataclass(frozen=True)
class TextSearch:
    """Where to look (the caller's area, or a region of it), which match to prefer, and what counts as found."""

    view: CallerSpace
    region: Region | None = None  # in the caller's space
    near: tuple[float, float] | None = None  # prefer matches nearest this point (caller's space)
    approximate: bool = False  # acting tools may act on a match that differs from the phrase


class FoundText(Placed):
    phrase: str
    matches: list[TextMatch] = Field(description="best first (or nearest first when near_x/near_y are given)")
    complete: bool = Field(
        description="true: the whole area was read and matches lists every match; false: reading stopped at an "
        "exact match that a whole reading ranks first as well, so the first match is final but the others come "
        "only from the text read until then (the screen above it and around it)"
    )
    ocr_ms: float
    engine: str


class SpanSelection(Placed):
    start: TextMatch
    end: TextMatch
    selection: ActionRecord
    replacement: ActionRecord | None = None


@dataclass(frozen=True)
class _LastSearch:
    """The phrase searched last and its matches in one reading. A host polling an unchanged screen for a phrase
    asks the same search of the same reading again: the pipeline answers a repeated frame with its cached reading,
    whose word list is the very same object, so that identity (held here, so it cannot be reused) says the words
    are the same without comparing them."""

    words: list[OcrWord]
    phrase: str
    min_score: float
    matches: list[TextMatch]

    def answers(self, result: OcrResult, phrase: str, min_score: float) -> bool:
        return self.words is result.words and self.phrase == phrase and self.min_score == min_score


class OcrGrounder:
    """Owns one OCR pipeline per engine (built lazily, kept for the process) and acts through the desktop's actions."""

    def __init__(self, screen: Screen, actions: DesktopActions, settings: OcrSettings) -> None:
        self.screen = screen
        self.actions = actions
        self.settings = settings
        self._last_search: _LastSearch | None = None

    def pipeline(self, engine: str | None = None) -> OcrPipeline:
        return shared_pipeline(engine or self.settings.engine, self.settings.language)

    def is_loaded(self, engine: str | None = None) -> bool:
        return is_loaded(engine or self.settings.engine, self.settings.language)

    async def warm_up(self, engine: str | None = None) -> None:
        await asyncio.to_thread(self.pipeline(engine).warm_up)

    async def read(self, search: TextSearch, engine: str | None = None) -> tuple[Frame, OcrResult]:
        """OCR of a fresh capture of the caller's area (its latest screenshot's), or of a region of it."""
        frame = await self._capture(search)
        pipeline = self.pipeline(engine)
        return frame, await asyncio.to_thread(pipeline.read, frame.image, frame.area)

    async def _capture(self, search: TextSearch) -> Frame:
        area = search.view.area if search.region is None else search.view.region_to_screen(search.region)
        return await self.screen.capture(area)

    async def find(self, phrase: str, search: TextSearch, engine: str | None = None) -> FoundText:
        reading = await self._read_for(phrase, search, engine)
        result = reading.result
        matches = await self._matches(result, phrase, search)
        return FoundText(
            phrase=phrase, matches=matches, complete=reading.complete, ocr_ms=result.elapsed_ms, engine=result.engine
        )

    async def _read_for(self, phrase: str, search: TextSearch, engine: str | None = None) -> PartialReading:
        """A reading of the caller's area for the first match of `phrase`: top first, stopped once that match is
        certain (see `FirstMatch`); a nearest-first search reads the whole area, since a match anywhere may be
        nearer."""
        frame = await self._capture(search)
        goal = FirstMatch(phrase, self._find_phrase) if search.near is None else None
        return await asyncio.to_thread(self.pipeline(engine).read_until, frame.image, frame.area, goal)

    async def _matches(self, result: OcrResult, phrase: str, search: TextSearch) -> list[TextMatch]:
        """Matches of `phrase` in one reading, ranked; none is an error that shows the closest text."""
        if not phrase.strip():
            raise InvalidInputError("phrase is empty; give the text to look for, e.g. 'Save as'")
        near = None if search.near is None else search.view.to_screen(*search.near)
        matches = rank(self._find_phrase(result, phrase), near=near)
        if not matches:
            seen = closest_texts(result, phrase)
            hint = "; ".join(repr(t) for t in seen) if seen else "no text at all"
            where = " in that region" if search.region is not None else ""
            raise InvalidInputError(f"{clip(phrase)} is not on screen{where}. Closest text seen: {hint}")
        return matches

    def _find_phrase(self, result: OcrResult, phrase: str) -> list[TextMatch]:
        min_score = self.settings.min_score
        last = self._last_search
        if last is not None and last.answers(result, phrase, min_score):
            return list(last.matches)
        matches = find_phrase(result, phrase, min_score)
        self._last_search = _LastSearch(result.words, phrase, min_score, matches)
        return matches

    async def _pick(
        self, phrase: str, search: TextSearch, index: int, result: OcrResult | None = None
    ) -> tuple[TextMatch, Grounding]:
        """The chosen match and how it was chosen; reads the screen unless given a reading (for the first match, only
        as far as `find` would)."""
        if result is None:
            result = (await self._read_for(phrase, search)).result if index == 0 else (await self.read(search))[1]
        matches = await self._matches(result, phrase, search)
        if not search.approximate:
            exact = [m for m in matches if m.exact]
            if not exact:
                raise InvalidInputError(
                    f"{clip(phrase)} is not on screen exactly; the closest match is {_differences(matches[0])}. "
                    "Give the phrase as it appears, or pass approximate=true to act on the closest match"
                )
            matches = exact
        if not 0 <= index < len(matches):
            listing = "; ".join(f"{i}: {m.text!r} at {_at(search.view, m.center)}" for i, m in enumerate(matches))
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
        return await self._click(search.view, match.center, grounding, button=button, count=count)

    async def locate_cursor(
        self, phrase: str, position: CaretPosition, search: TextSearch, index: int = 0
    ) -> ActionRecord:
        """Click at the edge of the phrase so the caret lands right before (start) or after (end) it."""
        match, grounding = await self._pick(phrase, search, index)
        return await self._click(search.view, match.start if position == "start" else match.end, grounding)

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
            end_y, start_y = search.view.point(end.end).y, search.view.point(start.start).y
            raise InvalidInputError(
                f"{clip(end_phrase)} (at y {end_y}) comes before {clip(start_phrase)} (at y {start_y}); "
                "the span must run forward in reading order (pick other matches with start_index/end_index)"
            )
        selection = await self.actions.drag(
            Target(start.start, None, (start_grounding,)), Target(end.end, None, (end_grounding,)), search.view
        )
        replacement = None
        if replace_with == "":
            replacement = await self.actions.hotkey(["backspace"])
        elif replace_with is not None:
            replacement = await self.actions.type_text(replace_with, search.view)
        return SpanSelection(start=start, end=end, selection=selection, replacement=replacement)

    async def _click(
        self, view: CallerSpace, point: Point, grounding: Grounding, button: MouseButton = "left", count: int = 1
    ) -> ActionRecord:
        return await self.actions.click(Target(point, None, (grounding,)), view, button=button, count=count)


def _at(view: CallerSpace, point: Point) -> str:
    shown = view.point(point)
    return f"({shown.x}, {shown.y})"


def _differences(match: TextMatch) -> str:
    """A near miss for an error message: what was seen and which tokens differ."""
    differing = ", ".join(f"{d.seen!r} for {d.expected!r}" for d in match.differences) or "case or spacing"
    return f"{match.text!r} (score {match.score:g}; differs: {differing})"


def _before(a: TextMatch, b: TextMatch) -> bool:
    """Whether match `a` ends before match `b` starts in reading order (line first, then x)."""
    a_line, b_line = a.boxes[-1], b.boxes[0]
    if a_line.top + a_line.height <= b_line.top:
        return True
    same_line = a_line.top < b_line.top + b_line.height and b_line.top < a_line.top + a_line.height
    return same_line and a.end.x < b.start.x
