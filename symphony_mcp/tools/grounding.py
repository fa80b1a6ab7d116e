"""MCP tools of the general grounder and the model layer: locate, model_status."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from symphony_mcp.desktop.frames import Placed
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.models.registry import ModelStatus
from symphony_mcp.tools.arguments import Described, FrameId, Monitor, Space
from symphony_mcp.tools.common import READ_ONLY
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool


class LocateResult(Placed):
    """Where a described element is, in the result's space: pass x, y to click as they are."""

    description: str
    x: int = Field(description="use as click(x=..., y=...)")
    y: int
    point: Point = Field(description="the same point (x, y)")
    screen_point: Point = Field(description="the point in absolute screen pixels")
    box: Rect | None = Field(None, description="the element's box, if the model gave one")
    raw_answer: str = Field(description="the model's answer as given")
    answers: int = Field(
        description="model answers used: one per look, plus one for each unusable answer that was asked again"
    )
    refined_from: Point | None = Field(
        None, description="the first guess, when a zoomed second look (refine) moved the point"
    )
    model: str
    family: str = Field(description="grounding model family used to prompt and parse")
    image_size: tuple[int, int] = Field(description="size of the image the model saw")
    model_ms: float
    overhead_ms: float = Field(description="encoding, parsing and mapping time outside the model call")


@define_tool(READ_ONLY)
async def locate(
    cores: Cores,
    description: Annotated[
        Described, Field(description="the element, described as a person would (e.g. 'the blue Save button')")
    ],
    space: Space = "screenshot",
    frame_id: FrameId = None,
    monitor: Annotated[
        Monitor, Field(description="look at this monitor instead (its frame becomes the latest)")
    ] = None,
) -> LocateResult:
    """Find a described element with the grounding model on a fresh capture of the area of the latest
    screenshot (or frame_id, or monitor); nothing is clicked. x, y are in that screenshot's pixels."""
    view = await cores.screen.caller_space(space, frame_id, monitor)
    found = await cores.grounder.locate(description, view.area)
    point = view.point(found.screen)
    located = LocateResult(
        description=found.description,
        x=point.x,
        y=point.y,
        point=found.screen,
        screen_point=found.screen,
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
    return view.express(located)


@define_tool(READ_ONLY)
async def model_status(cores: Cores) -> ModelStatus:
    """Which agent roles have a model endpoint, and the calls, retries and tokens each has used."""
    return ModelStatus(roles=cores.models.status(), grounding_family=cores.grounder.settings.family)


DEFINITIONS = (
    locate,
    model_status,
)
