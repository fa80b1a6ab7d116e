"""Grounding model families: how each is asked for a point, and in which coordinates it answers.

Facts from each family's public model card or reference code (restated, not copied):
- UI-TARS-1.5: no system prompt, image then "Query:..." text; pixels of the Qwen smart-resized
  image (factor 28, 100*28*28 .. 16384*28*28 pixels). OS-Symphony's grounder.
- UI-TARS 1.0: same prompt; thousandths (0..1000) of the image.
- Qwen2.5-VL: JSON `point_2d`/`bbox_2d` in pixels of the smart-resized image (28, 3136 .. 12845056).
- Qwen3-VL: the same JSON, in thousandths (0..1000); image size does not matter to the answer.
- GTA1: a system prompt that states the resized image size; `(x,y)` in resized pixels (28, 3136 .. 4096*2160).
- OpenCUA: a pyautogui system prompt; `pyautogui.click(x=.., y=..)` in resized pixels (28, 3136 .. 12845056).
- ScaleCUA: an `<action>click(x=.., y=..)</action>` answer in resized pixels (28, 3136 .. 2109744 = 1080p).
- pixels: any instruction-following VLM, asked for `(x, y)` in pixels of the image as sent.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from symphony_mcp.config import GroundingSettings
from symphony_mcp.models.images import Sizer
from symphony_mcp.models.messages import ChatMessage, ModelImage, system, user
from symphony_mcp.vision.grounding.parsing import Convention
from symphony_mcp.vision.grounding.resize import SmartResize

_QWEN25 = SmartResize(factor=28, min_pixels=3136, max_pixels=12_845_056)


@dataclass(frozen=True)
class GroundingFamily:
    """Prompt and coordinate convention of one family; templates may use {description}, {width}, {height}."""

    name: str
    convention: Convention
    resize: SmartResize | None
    instruction: str
    answer_format: str
    system_prompt: str | None = None

    @property
    def sizer(self) -> Sizer | None:
        """The image size this family's model takes for a screen size, if it has a resize rule."""
        return self.resize.size if self.resize else None

    def messages(self, description: str, image: ModelImage) -> list[ChatMessage]:
        fields = {"description": description, "width": image.width, "height": image.height}
        turns = [system(self.system_prompt.format(**fields))] if self.system_prompt else []
        return [*turns, user(image, self.instruction.format(**fields))]

    def answer_again(self, image: ModelImage) -> str:
        """What a usable answer is, for the model whose answer could not be used (models/reask.py)."""
        return f"with only {self.answer_format.format(width=image.width, height=image.height)}."


_PIXEL_POINT = "one point as (x,y) in pixels of the {width}x{height} image"
_JSON_POINT = 'JSON like [{{"point_2d": [x, y], "label": "..."}}]'

FAMILIES: dict[str, GroundingFamily] = {
    family.name: family
    for family in (
        GroundingFamily(
            name="ui-tars-1.5",
            convention="pixels",
            resize=SmartResize(factor=28, min_pixels=100 * 28 * 28, max_pixels=16384 * 28 * 28),
            instruction="Query:{description}\nOutput only the coordinate of one point in your response.\n",
            answer_format=_PIXEL_POINT,
        ),
        GroundingFamily(
            name="ui-tars-1.0",
            convention="relative-1000",
            resize=None,
            instruction="Query:{description}\nOutput only the coordinate of one point in your response.\n",
            answer_format="one point as (x,y) in thousandths (0..1000) of the image width and height",
        ),
        GroundingFamily(
            name="qwen2.5-vl",
            convention="pixels",
            resize=_QWEN25,
            instruction=(
                'Locate the UI element "{description}" in the screenshot and output its point coordinates '
                "in JSON format: " + _JSON_POINT + "."
            ),
            answer_format=_JSON_POINT + " with x, y in pixels of the {width}x{height} image",
        ),
        GroundingFamily(
            name="qwen3-vl",
            convention="relative-1000",
            resize=None,
            instruction=(
                'Locate the UI element "{description}" in the screenshot and output its point coordinates '
                "in JSON format: " + _JSON_POINT + "."
            ),
            answer_format=_JSON_POINT + " with x, y in thousandths (0..1000) of the image",
        ),
        GroundingFamily(
            name="gta1",
            convention="pixels",
            resize=SmartResize(factor=28, min_pixels=3136, max_pixels=4096 * 2160),
            system_prompt=(
                "You locate user interface elements. Given a screenshot and the description of one element, "
                "give the element's position as a single (x,y) point. The image is {width} pixels wide and "
                "{height} pixels high. For an element with an area, give its centre.\n\n"
                "Output exactly one coordinate pair:\n(x,y)"
            ),
            instruction="{description}",
            answer_format=_PIXEL_POINT,
        ),
        GroundingFamily(
            name="opencua",
            convention="pixels",
            resize=_QWEN25,
            system_prompt=("You are a GUI agent. You see a screenshot and a task; act with a single pyautogui action."),
            instruction="Click on {description}",
            answer_format="one action pyautogui.click(x=..., y=...) in pixels of the {width}x{height} image",
        ),
        GroundingFamily(
            name="scalecua",
            convention="pixels",
            resize=SmartResize(factor=28, min_pixels=3136, max_pixels=2_109_744),
            system_prompt=(
                "You are a GUI agent. Locate the element the user describes on the screenshot and click it. "
                "Output exactly one action as <action>click(x=..., y=...)</action> with x, y in pixels of "
                "the screenshot."
            ),
            instruction="{description}",
            answer_format="<action>click(x=..., y=...)</action> in pixels of the {width}x{height} image",
        ),
        GroundingFamily(
            name="pixels",
            convention="pixels",
            resize=None,
            instruction=(
                "The screenshot is {width}x{height} pixels. Find this user interface element: {description}\n"
                "Answer with only its centre point as (x,y) in pixels of this image."
            ),
            answer_format=_PIXEL_POINT,
        ),
    )
}


def family_for(settings: GroundingSettings) -> GroundingFamily:
    """The configured family with the coordinate and pixel-budget overrides applied."""
    family = FAMILIES[settings.family]
    if settings.coordinates != "auto":
        family = dataclasses.replace(family, convention=settings.coordinates)
    if settings.max_pixels is not None and family.resize is not None:
        family = dataclasses.replace(family, resize=dataclasses.replace(family.resize, max_pixels=settings.max_pixels))
    return family
