"""Where an action acts: a described element (grounded by the model) or caller coordinates.

Pointer tools accept either form so a host can use one tool whichever it has. Coordinates are
mapped from the caller's space (and checked); descriptions are located on the area the caller is
looking at (its latest screenshot's) and become screen points with the grounding recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from symphony_mcp.desktop.frames import CallerSpace
from symphony_mcp.desktop.records import Target
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.vision.grounding.grounder import VisionGrounder


@dataclass(frozen=True)
class TargetRequest:
    """One target as the caller gave it; `name` prefixes parameter names in messages (e.g. 'start_')."""

    description: str | None
    x: float | None
    y: float | None
    name: str = ""

    @property
    def is_empty(self) -> bool:
        return self.description is None and self.x is None and self.y is None

    def check_none_with_element_id(self, element: int | None) -> None:
        """An element id names the target by itself: a description or coordinates beside it are refused."""
        if element is not None and not self.is_empty:
            n = self.name
            raise InvalidInputError(f"give {n}element, {n}description or {n}x and {n}y: one of them, not several")

    def check(self) -> None:
        n = self.name
        if self.description is not None and (self.x is not None or self.y is not None):
            raise InvalidInputError(f"give either {n}description or {n}x and {n}y, not both")
        if self.description is None and (self.x is None or self.y is None):
            given = f"only {n}x" if self.x is not None else f"only {n}y" if self.y is not None else "neither"
            raise InvalidInputError(
                f"give {n}description (e.g. 'the blue Save button') or both {n}x and {n}y; got {given}"
            )


class TargetResolver:
    def __init__(self, grounder: VisionGrounder) -> None:
        self.grounder = grounder

    async def resolve(self, requests: list[TargetRequest], view: CallerSpace) -> list[Target]:
        """One target per request; all descriptions are grounded on one fresh capture of the caller's area."""
        for request in requests:
            request.check()
        targets = {}
        for index, request in enumerate(requests):  # bad coordinates fail before any model call
            if request.x is not None and request.y is not None:
                targets[index] = Target(view.to_screen(request.x, request.y), (request.x, request.y))
        described = [(i, r.description) for i, r in enumerate(requests) if r.description is not None]
        if described:
            located = await self.grounder.locate_all([d for _, d in described], view.area)
            for (index, _), found in zip(described, located, strict=True):
                targets[index] = Target(found.screen, None, (found.grounding(),))
        return [targets[i] for i in range(len(requests))]
