"""MCP tools of the general grounder and the model layer: locate, model_status."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from symphony_mcp.desktop.geometry import Point, Rect
from symphony_mcp.models.registry import ModelRegistry, RoleStatus
from symphony_mcp.tools.common import READ_ONLY, caller_errors
from symphony_mcp.vision.grounding.grounder import VisionGrounder


class LocateResult(BaseModel):
    """Where a described element is. x, y are in the pixel space of `frame_id` (default screenshot size)."""

    description: str
    x: float = Field(description="use as click(x=..., y=..., frame_id=...)")
    y: float
    frame_id: str = Field(description="the capture the element was located on")
    screen: Point = Field(description="the point in absolute screen pixels (space='screen')")
    box: Rect | None = Field(None, description="the element's box in screen pixels, if the model gave one")
    raw_answer: str = Field(description="the model's answer as given")
    answers: int = Field(
        description="model answers used: one per look, plus one for each unusable answer that was asked again"
    )
    refined_from: Point | None = Field(
        None, description="the first guess in screen pixels, when a zoomed second look (refine) moved the point"
    )
    model: str
    family: str = Field(description="grounding model family used to prompt and parse")
    image_size: tuple[int, int] = Field(description="size of the image the model saw")
    model_ms: float
    overhead_ms: float = Field(description="encoding, parsing and mapping time outside the model call")


class ModelStatus(BaseModel):
    roles: list[RoleStatus]
    grounding_family: str


def register(server: MCPServer, grounder: VisionGrounder, models: ModelRegistry) -> None:
    @server.tool(annotations=READ_ONLY)
    @caller_errors
    async def locate(
        description: Annotated[
            str, Field(description="the element, described as a person would (e.g. 'the blue Save button')")
        ],
        monitor: Annotated[int | None, Field(description="monitor to look at (default from settings)")] = None,
    ) -> LocateResult:
        """Find a described element on the current screen with the grounding model; nothing is clicked."""
        found = await grounder.locate(description, monitor)
        mapping = grounder.desktop.register_frame(found.frame)
        x, y = mapping.to_image(found.screen)
        return LocateResult(
            description=found.description,
            x=round(x, 1),
            y=round(y, 1),
            frame_id=found.frame.id,
            screen=found.screen,
            box=found.box,
            raw_answer=found.answers[-1],
            answers=len(found.answers),
            refined_from=found.refined_from,
            model=found.model,
            family=found.family,
            image_size=(found.image_width, found.image_height),
            model_ms=found.model_ms,
            overhead_ms=found.overhead_ms,
        )

    @server.tool(annotations=READ_ONLY)
    @caller_errors
    async def model_status() -> ModelStatus:
        """Which agent roles have a model endpoint, and the calls, retries and tokens each has used."""
        return ModelStatus(roles=models.status(), grounding_family=grounder.settings.family)
