"""The Reflection-Memory Agent's two model calls (memoryer role): the step check and the trajectory audit.

Both answers are JSON validated against a schema (`judgements.py`); a malformed answer is re-asked
once with what was wrong.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from PIL import Image

from symphony_mcp.imaging.encoding import draw_cursor_marker
from symphony_mcp.imaging.geometry import Point, Rect
from symphony_mcp.memory.judgements import Reflection, StepVerdict
from symphony_mcp.memory.milestones import MilestoneMemory
from symphony_mcp.models.client import ChatClient
from symphony_mcp.models.images import prepare_image
from symphony_mcp.models.messages import ChatMessage, ModelImage, system, user
from symphony_mcp.models.reask import UsableAnswer
from symphony_mcp.models.structured import ask_structured, schema_text

_CROP_FRACTION = 0.25  # the zoomed crop shows a quarter of the screen's width and height
_CROP_ZOOM = 2

STEP_CHECK_PROMPT = """You check one step of an agent that operates a computer through its screen.
You get the screen before the action, a zoomed crop of the place the action touched (a red ring
marks the point), the screen after the action, the action, and what the agent meant to achieve.
Judge only from what is visible whether the action had the intended effect: the right element was
hit and the screen changed as intended (typed text appears, a menu opened, a value changed).
Answer with one JSON object matching this schema: {schema}"""

AUDIT_PROMPT = """You audit the trajectory of an agent that operates a computer to complete a task.
From the task, the facts learnt so far, the summary of every step, the screenshots kept at
milestones, the latest step and the latest screenshot, decide the status:
- "On-track": the trajectory is making progress towards the task.
- "Off-track": it is not, with error_type "gui_operation_error" (an action missed its element or had
  no effect), "lack_of_tutorial" (the agent does not know how to go on: it repeats itself, loops or
  wanders), "code_error" (code it ran failed or did the wrong thing) or "other".
  A code_agent step ran code on files and a search_tutorial step searched the web, not GUI actions:
  judge them by their results in the step summaries (what changed or was found, how it ended), not
  by the screen.
- "Completed": the whole task is done AND the latest screenshot shows visible evidence of it.
- "Infeasible": the task cannot be done here, with evidence on screen.
The reflection diagnoses what happened and why, in at most three sentences; it never tells the
agent what to do next. is_milestone is true when the latest step reached a checkpoint whose
screenshot is worth keeping (a dialog or page opened, a file saved, a sub-goal reached).
new_facts lists facts seen on screen that later steps may need (names, paths, values), else [].
Answer with one JSON object matching this schema: {schema}"""


@dataclass(frozen=True)
class StepEvidence:
    """What the step check looks at (screens already encoded for the model; `after_image` for the crop)."""

    before: ModelImage
    after: ModelImage
    after_image: Image.Image
    area: Rect  # screen area the images show
    points: list[Point]
    action: str
    intent: str | None


@dataclass(frozen=True)
class AuditEvidence:
    instruction: str
    memory: MilestoneMemory
    milestone_images: list[tuple[int, ModelImage]]
    latest_step: int
    latest_action: str
    latest_intent: str | None
    latest_screen: ModelImage
    hints: list[str]


async def check_step(client: ChatClient, evidence: StepEvidence) -> UsableAnswer[StepVerdict]:
    crop = await asyncio.to_thread(
        lambda: prepare_image(zoomed_crop(evidence.after_image, evidence.area, evidence.points), client.endpoint)
    )
    before, after = evidence.before, evidence.after
    intent = evidence.intent or "(not stated)"
    messages: list[ChatMessage] = [
        system(STEP_CHECK_PROMPT.format(schema=schema_text(StepVerdict))),
        user(
            "Screen before the action:",
            before,
            "Zoomed crop of the screen after the action, around the action point:",
            crop,
            "Screen after the action:",
            after,
            f"Action: {evidence.action}\nIntent: {intent}",
        ),
    ]
    return await ask_structured(client, messages, StepVerdict, "step check")


async def audit(client: ChatClient, evidence: AuditEvidence) -> UsableAnswer[Reflection]:
    kept, latest = evidence.milestone_images, evidence.latest_screen
    memory = evidence.memory
    summaries = (
        "\n".join(f"step {s.step} ({'ok' if s.success else 'FAILED'}): {s.summary}" for s in memory.summaries)
        or "(no steps yet)"
    )
    facts = "\n".join(f"- {fact}" for fact in memory.facts) or "(none yet)"
    parts: list[str | ModelImage] = [
        f"Task: {evidence.instruction}\n\nFacts learnt so far:\n{facts}\n\nSteps so far:\n{summaries}"
    ]
    for step, image in kept:
        parts += [f"Kept screenshot {'at the start' if step == 0 else f'after step {step}'}:", image]
    hints = "\n".join(f"- {hint}" for hint in evidence.hints) or "- none"
    intent = evidence.latest_intent or "(not stated)"
    parts += [
        f"Latest step {evidence.latest_step}: {evidence.latest_action}\nIntent: {intent}\n\nComputed hints:\n{hints}",
        "Latest screenshot:",
        latest,
    ]
    messages = [system(AUDIT_PROMPT.format(schema=schema_text(Reflection))), user(*parts)]
    return await ask_structured(client, messages, Reflection, "trajectory audit")


def zoomed_crop(image: Image.Image, area: Rect, points: list[Point]) -> Image.Image:
    """A crop around the action point(s), enlarged, with each point marked."""
    if not points:
        return image
    xs = [p.x - area.left for p in points]
    ys = [p.y - area.top for p in points]
    width = max(round(image.width * _CROP_FRACTION), max(xs) - min(xs) + 80)
    height = max(round(image.height * _CROP_FRACTION), max(ys) - min(ys) + 80)
    left = min(max(0, (min(xs) + max(xs)) // 2 - width // 2), max(0, image.width - width))
    top = min(max(0, (min(ys) + max(ys)) // 2 - height // 2), max(0, image.height - height))
    crop = image.crop((left, top, min(image.width, left + width), min(image.height, top + height)))
    crop = crop.resize((crop.width * _CROP_ZOOM, crop.height * _CROP_ZOOM), Image.Resampling.BICUBIC)
    for x, y in zip(xs, ys, strict=True):
        crop = draw_cursor_marker(crop, (x - left + 0.5) * _CROP_ZOOM - 0.5, (y - top + 0.5) * _CROP_ZOOM - 0.5)
    return crop
