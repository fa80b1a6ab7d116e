"""Where an action acts: a described element (grounded by the model) or caller coordinates.

Pointer tools accept either form so a host can use one tool whichever it has. Coordinates pass
through unchanged (the controller maps and checks them); descriptions become screen points with
the grounding recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from symphony_mcp.desktop.controller import CoordinateSpace
from symphony_mcp.errors import InvalidInputError
from symphony_mcp.memory.actions import Grounding
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

    def check(self, frame_id: str | None) -> None:
        n = self.name
        if self.description is not None and (self.x is not None or self.y is not None):
            raise InvalidInputError(f"give either {n}description or {n}x and {n}y, not both")
        if self.description is None and (self.x is None or self.y is None):
            given = f"only {n}x" if self.x is not None else f"only {n}y" if self.y is not None else "neither"
            raise InvalidInputError(
                f"give {n}description (e.g. 'the blue Save button') or both {n}x and {n}y; got {given}"
            )
        if self.description is not None and frame_id is not None:
            raise InvalidInputError(
                f"frame_id applies to {n}x/{n}y only: a {n}description is located on the current screen"
            )


@dataclass(frozen=True)
class Target:
    """Coordinates ready for the controller, with how they were found."""

    x: float
    y: float
    space: CoordinateSpace
    frame_id: str | None
    grounding: tuple[Grounding, ...] = ()


class TargetResolver:
    def __init__(self, grounder: VisionGrounder) -> None:
        self.grounder = grounder

    async def resolve(
        self, requests: list[TargetRequest], space: CoordinateSpace, frame_id: str | None
    ) -> list[Target]:
        """One target per request; all descriptions are grounded on one capture, concurrently."""
        for request in requests:
            request.check(frame_id)
        described = [r.description for r in requests if r.description is not None]
        located = iter(await self.grounder.locate_all(described) if described else [])
        targets = []
        for request in requests:
            if request.description is None:
                assert request.x is not None and request.y is not None
                targets.append(Target(request.x, request.y, space, frame_id))
            else:
                found = next(located)
                targets.append(Target(found.screen.x, found.screen.y, "screen", None, (found.grounding(),)))
        return targets
