"""The action value types: where an action acts (`Target`), how a named target was found, and the record of
every action the desktop performed (its producer), kept in memory per server."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from symphony_mcp.desktop.frames import Placed
from symphony_mcp.desktop.types import WindowInfo
from symphony_mcp.imaging.geometry import Point, Rect


class Grounding(BaseModel):
    """How a target was found on screen when the caller named it instead of giving coordinates."""

    method: str = Field(
        description="'ocr' (phrase matched in OCR text), 'vlm' (description grounded by a model) or "
        "'element' (an id from elements or find_element)"
    )
    query: str = Field(description="what the caller asked for (phrase or description)")
    matched_text: str | None = None
    score: float | None = None
    box: Rect | None = Field(None, description="the matched target's box")
    candidates: int = Field(1, description="how many matches there were to choose from")
    model: str | None = Field(None, description="grounding model that answered (vlm)")
    raw_answer: str | None = Field(None, description="the model's answer as given (vlm)")
    refined_from: Point | None = Field(
        None, description="the model's first guess, when a zoomed second look gave the point used (vlm)"
    )
    via: str | None = Field(
        None,
        description="how an element named by id was acted on (element): its accessibility action, or the pointer "
        "and why",
    )


@dataclass(frozen=True)
class Target:
    """Where an action acts, in screen pixels, and how the caller named it (for the record)."""

    point: Point
    given: tuple[float, float] | None = None  # the caller's x, y in its space; None when found by OCR or a model
    grounding: tuple[Grounding, ...] = ()


class ActionRecord(Placed):
    """What was done, where, and the state after; coordinates in the record's space (see space, frame_id)."""

    id: int
    action: str = Field(description="tool-level action name, e.g. click, type")
    arguments: dict[str, Any] = Field(description="the arguments as the caller gave them")
    points: list[Point] = Field(default_factory=list, description="where it acted, in the record's space")
    screen_points: list[Point] = Field(default_factory=list, description="where it acted, absolute screen pixels")
    ok: bool = True
    error: str | None = None
    started_at: float
    duration_ms: float
    cursor_after: Point | None = None
    active_window_after: WindowInfo | None = None
    summary: str = Field(description="one line a person or model can read")
    grounding: list[Grounding] = Field(default_factory=list, description="how named targets were located")
    task_step: int | None = Field(None, description="the step of the session's running task this action became")


class ActionLog:
    """Bounded, thread-safe, in-order log of the session's action records."""

    def __init__(self, max_records: int = 10_000) -> None:
        self._records: deque[ActionRecord] = deque(maxlen=max_records)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def append(self, record: ActionRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self, since_id: int = 0, limit: int | None = None) -> list[ActionRecord]:
        with self._lock:
            selected = [r for r in self._records if r.id > since_id]
        return selected[-limit:] if limit else selected
