"""The general grounder: screenshot + element description -> one screen point, via the grounder role's model.

The frame is resized for the configured family, sent, and the answer parsed and checked against the
size of the image sent. An unusable answer (no point, or outside the image) is re-asked once with
the reason (models/reask.py); a second failure is reported with both answers. With refinement on, the model looks
again at a zoomed crop around its first guess, and that answer wins when it is usable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace

from symphony_mcp.config import GroundingSettings
from symphony_mcp.desktop.capture import Frame
from symphony_mcp.desktop.records import Grounding
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.errors import InvalidInputError, ModelAnswerError
from symphony_mcp.imaging.geometry import ImageMapping, Point, Rect
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.endpoints import ResolvedEndpoint
from symphony_mcp.models.images import prepare_image
from symphony_mcp.models.messages import ModelImage
from symphony_mcp.models.reask import TOOL_REASKS, ask_until_usable
from symphony_mcp.models.registry import ModelRegistry
from symphony_mcp.vision.grounding.families import GroundingFamily, family_for
from symphony_mcp.vision.grounding.parsing import box_to_image, parse_point, to_image_point
from symphony_mcp.vision.grounding.zoom import zoom_crop

MAX_DESCRIPTION_LENGTH = 1000
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Located:
    """Where the description was found, on which frame, and what the model said."""

    description: str
    frame: Frame
    screen: Point
    box: Rect | None
    image_width: int
    image_height: int
    answers: tuple[str, ...]
    model: str
    family: str
    model_ms: float
    overhead_ms: float  # encoding, parsing and mapping: everything but waiting for the model
    refined_from: Point | None = None  # the first guess, when a zoomed second look gave `screen`

    def grounding(self) -> Grounding:
        return Grounding(
            method="vlm",
            query=self.description,
            box=self.box,
            model=self.model,
            raw_answer=self.answers[-1],
            refined_from=self.refined_from,
        )


class VisionGrounder:
    def __init__(self, screen: Screen, models: ModelRegistry, settings: GroundingSettings) -> None:
        self.screen = screen
        self.models = models
        self.settings = settings

    @property
    def family(self) -> GroundingFamily:
        return family_for(self.settings)

    async def locate(self, description: str, area: Rect) -> Located:
        """Ground `description` on a fresh capture of a screen area (what the caller is looking at)."""
        (found,) = await self.locate_all([description], area)
        return found

    async def locate_all(self, descriptions: list[str], area: Rect) -> list[Located]:
        """Ground several descriptions on one capture, concurrently (e.g. both ends of a drag)."""
        checked = [_check_description(d) for d in descriptions]
        client = self.models.client("grounder")  # no grounder configured: fail before capturing
        return await self._ground(client, checked, await self.screen.capture(area))

    async def ground(self, description: str, frame: Frame) -> Located:
        """Ground `description` on a given frame."""
        (found,) = await self._ground(self.models.client("grounder"), [_check_description(description)], frame)
        return found

    async def _ground(self, client: ChatClient, descriptions: list[str], frame: Frame) -> list[Located]:
        """The frame is sized and encoded once for all the descriptions."""
        family = self.family
        started = time.perf_counter()
        image = await asyncio.to_thread(_prepare, frame, client.endpoint, family)
        prepared = time.perf_counter() - started
        found = await asyncio.gather(*(self._ask(client, family, image, frame, d, prepared) for d in descriptions))
        if self.settings.refine:
            found = await asyncio.gather(*(self._refine(client, family, first) for first in found))
        return list(found)

    async def _refine(self, client: ChatClient, family: GroundingFamily, first: Located) -> Located:
        """Ground again on a zoomed crop around the first guess; keep the first guess if that fails."""
        started = time.perf_counter()
        crop = refinement_crop(first.frame, first.screen, family, self.settings.refine_zoom)
        image = await asyncio.to_thread(_prepare, crop, client.endpoint, family)
        prepared = time.perf_counter() - started
        try:
            second = await self._ask(client, family, image, crop, first.description, prepared)
        except ModelAnswerError as exc:
            log.warning(
                "zoomed grounding of %r gave no usable point, keeping the first guess: %s", first.description, exc
            )
            return first
        return replace(
            second,
            frame=first.frame,
            answers=first.answers + second.answers,
            model_ms=round(first.model_ms + second.model_ms, 2),
            overhead_ms=round(first.overhead_ms + second.overhead_ms, 2),
            refined_from=first.screen,
        )

    async def _ask(
        self,
        client: ChatClient,
        family: GroundingFamily,
        image: ModelImage,
        frame: Frame,
        description: str,
        prepared: float,
    ) -> Located:
        started = time.perf_counter()
        messages = family.messages(description, image)
        overhead = [prepared, time.perf_counter() - started]

        def parse(answer: str) -> tuple[Point, Rect | None]:
            parse_started = time.perf_counter()
            try:
                return read_answer(answer, family, image, frame)
            finally:
                overhead.append(time.perf_counter() - parse_started)

        answer = await ask_until_usable(
            client,
            messages,
            lambda completion: parse(completion.text),
            family.answer_again(image),
            purpose=f"point for {description!r}",
            reasks=TOOL_REASKS,
            hint=f". If the model is not a {family.name} model, set SYMPHONY_GROUNDING__FAMILY to its family",
        )
        screen, box = answer.value
        return Located(
            description=description,
            frame=frame,
            screen=screen,
            box=box,
            image_width=image.width,
            image_height=image.height,
            answers=answer.answers,
            model=answer.model,
            family=family.name,
            model_ms=answer.model_ms,
            overhead_ms=round(sum(overhead) * 1000, 2),
        )


def refinement_crop(frame: Frame, guess: Point, family: GroundingFamily, zoom: float) -> Frame:
    """The crop the second look is shown, at a size the family's model takes without resampling."""
    return zoom_crop(frame, guess, zoom, family.sizer)


def _prepare(frame: Frame, endpoint: ResolvedEndpoint, family: GroundingFamily) -> ModelImage:
    return prepare_image(frame.image, endpoint, family.sizer)


def read_answer(answer: str, family: GroundingFamily, image: ModelImage, frame: Frame) -> tuple[Point, Rect | None]:
    """The answer's point (and box) in screen pixels, checked against the image the model saw."""
    parsed = parse_point(answer)
    content = (image.content_width, image.content_height)
    x, y = to_image_point(parsed, family.convention, image.width, image.height, content)
    mapping = ImageMapping(area=frame.area, image_width=content[0], image_height=content[1])
    box = None
    corners = box_to_image(parsed, family.convention, image.width, image.height)
    if corners is not None:  # to_screen clamps corners in the padding to the screen area
        a, b = mapping.to_screen(corners[0], corners[1]), mapping.to_screen(corners[2], corners[3])
        box = Rect(left=a.x, top=a.y, width=b.x - a.x + 1, height=b.y - a.y + 1)
    return mapping.to_screen(x, y), box


def _check_description(description: str) -> str:
    description = description.strip()
    if not description:
        raise InvalidInputError("description is empty; describe the element, e.g. 'the blue Save button'")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidInputError(
            f"description is {len(description)} characters; at most {MAX_DESCRIPTION_LENGTH} are allowed"
        )
    return description
