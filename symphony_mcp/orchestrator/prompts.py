"""The planner's prompt: a fixed system prompt, the current step's context, and a bounded history.

The history keeps every earlier answer as text but at most `max_images` screenshots (the current
one included; the task's first one kept when asked), so the prompt stays within the model's image
limit however long the task runs. The task, the reflection, tool results and feedback appear only in
the current step's message, never accumulated. Tutorials the searcher found are the exception: they stay
in every later step's message of the same task, their pictures counted in the image budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from symphony_mcp.memory.judgements import Reflection
from symphony_mcp.models.messages import ChatMessage, ModelImage, assistant, system, user

SYSTEM_PROMPT = """You operate a computer through its screen to complete the user's task, one action per step.
Each step you get the task, the current screenshot, a reflection on the trajectory so far, any tool
results, and your earlier answers.

{actions}

{targets}

Answer in exactly this format:
(Previous action verification)
Did the previous action have the effect you intended? Judge from the screenshot.
(Screenshot analysis)
What the screen shows that matters for the task now.
(Next action)
The one action to take now, and why, in one or two sentences.
{action_format}
Say done() only when the screenshot shows the whole task complete; fail(reason="...") when it
cannot be done."""

# What the planner is told for each kind of reflection (the reflection itself only diagnoses).
REFLECTION_RULES = {
    ("On-track", None): "Continue with your plan.",
    ("Off-track", "gui_operation_error"): (
        "The last GUI action did not have its effect. Check the target and act differently: another "
        "description of the element, a keyboard shortcut, or the text tools."
    ),
    ("Off-track", "lack_of_tutorial"): (
        "You are not making progress and may be repeating yourself. Change approach; if a search tool is "
        "available, look up how to do this in this application."
    ),
    ("Off-track", "code_error"): "The code that ran failed. Fix it, or do the step through the GUI.",
    ("Off-track", "other"): "Re-examine the screen and reconsider your plan before acting.",
    ("Completed", None): "The task looks complete. If the screenshot confirms it, answer done().",
    ("Infeasible", None): "The task looks infeasible here. If you agree, answer fail() with the reason.",
}


CODE_ACTIONS = "Actions (call exactly one per step; arguments as keywords):\n\n{actions}"
CODE_FORMAT = '(Grounded action)\n```python\nthe_action(argument="value")\n```'
FUNCTION_ACTIONS = "Actions: the functions you are given (call exactly one per step): {names}."
FUNCTION_FORMAT = "Then call exactly one of the functions: that call is your action."


DESCRIBED_TARGETS = """Name elements by description, as a person would ("the blue Save button in the dialog"):
a grounding model finds them on the screen. Coordinates, when you give them, are pixels of the latest screenshot."""
POINTED_TARGETS = """Give elements by coordinates: pixels of the latest screenshot (no grounding model is configured
to find described elements). Text on screen can also be targeted by its words with the text tools."""
NUMBERED_TARGETS = """The screenshot shows the elements of the applications' accessibility trees boxed and numbered,
and the step's message lists them ([id] role "name" ...). Name such an element by its number: click(element=12),
type(element=5, text="..."). The numbers hold for the current screenshot only.
What has no number (windows without a tree, drawn content):
{others}"""


def system_prompt(
    actions: str, function_calling: bool, names: list[str], grounding: bool = True, numbered: bool = False
) -> str:
    """`grounding`: whether element descriptions are offered (a grounding model is configured); `numbered`: whether
    the screenshot has its elements numbered and listed (dual grounding)."""
    targets = DESCRIBED_TARGETS if grounding else POINTED_TARGETS
    if numbered:
        targets = NUMBERED_TARGETS.format(others=targets)
    if function_calling:
        return SYSTEM_PROMPT.format(
            actions=FUNCTION_ACTIONS.format(names=", ".join(names)), action_format=FUNCTION_FORMAT, targets=targets
        )
    return SYSTEM_PROMPT.format(
        actions=CODE_ACTIONS.format(actions=actions), action_format=CODE_FORMAT, targets=targets
    )


def reflection_text(reflection: Reflection) -> str:
    kind = reflection.status + (f" ({reflection.error_type})" if reflection.error_type else "")
    rule = REFLECTION_RULES.get((reflection.status, reflection.error_type), "")
    return f"Reflection on the trajectory so far: {kind}. {reflection.reflection}\n{rule}".strip()


@dataclass
class Turn:
    """One earlier step as the planner saw and answered it."""

    step: int
    image: ModelImage
    answer: str
    feedback: str | None = None  # what came back after the answer (tool error, checker verdict)


@dataclass(frozen=True)
class Tutorial:
    """A searcher's result, kept for the rest of its task: the folded text and its pictures."""

    text: str
    images: tuple[ModelImage, ...] = ()


@dataclass
class StepContext:
    step: int
    max_steps: int
    instruction: str
    image: ModelImage
    elements: str | None = None  # the numbered elements the image's marks refer to, one per line (dual grounding)
    reflection: Reflection | None = None
    tool_results: list[str] = field(default_factory=list)  # folded results, shown once
    feedback: list[str] = field(default_factory=list)
    tutorials: list[Tutorial] = field(default_factory=list)  # kept for the whole task

    @property
    def final(self) -> bool:
        return self.step >= self.max_steps


def build_messages(
    system_text: str, context: StepContext, history: list[Turn], max_images: int, keep_first: bool
) -> list[ChatMessage]:
    images_left = max_images - 1  # the current screenshot always goes
    tutorial_images = _tutorial_images(context.tutorials, images_left)
    images_left -= len(tutorial_images)
    kept: set[int] = set()
    if keep_first and history and images_left > 0:
        kept.add(history[0].step)
        images_left -= 1
    for turn in reversed(history):
        if images_left <= 0:
            break
        if turn.step not in kept:
            kept.add(turn.step)
            images_left -= 1
    messages = [system(system_text)]
    for turn in history:
        if turn.step in kept:
            messages.append(user(f"Step {turn.step}. Screenshot:", turn.image))
        else:
            messages.append(user(f"Step {turn.step}. (screenshot omitted)"))
        answer = turn.answer if turn.feedback is None else f"{turn.answer}\n\n[Result: {turn.feedback}]"
        messages.append(assistant(answer))
    messages.append(user(*_current(context, tutorial_images)))
    return messages


def _tutorial_images(tutorials: list[Tutorial], room: int) -> list[ModelImage]:
    """The tutorials' pictures that fit the image budget, the newest tutorial's first."""
    pictures = [image for tutorial in reversed(tutorials) for image in tutorial.images]
    return pictures[: max(0, room)]


def _current(context: StepContext, tutorial_images: list[ModelImage]) -> list[str | ModelImage]:
    lines = [f"Task: {context.instruction}", f"Step {context.step} of {context.max_steps}."]
    if context.final:
        lines.append("This is the last step: answer done() or fail(reason=...) only.")
    if context.reflection is not None:
        lines.append(reflection_text(context.reflection))
    lines += [f"Tool result: {result}" for result in context.tool_results]
    lines += context.feedback
    parts: list[str | ModelImage] = ["\n\n".join(lines)]
    for number, tutorial in enumerate(context.tutorials, start=1):
        parts.append(f"Tutorial {number} (found for this task; follow it where it fits the screen):\n{tutorial.text}")
        parts += [image for image in tutorial.images if image in tutorial_images]
    if context.elements is None:
        return [*parts, "Current screenshot:", context.image]
    listed = f"Elements, numbered as in the screenshot:\n{context.elements}"
    return [*parts, "Current screenshot, elements numbered:", context.image, listed]


def answer_again(function_calling: bool) -> str:
    """What a usable answer is, for the planner whose answer could not be used (models/reask.py)."""
    where = "one function call" if function_calling else "exactly one action in the final ```python block"
    return f"in the required format, with {where}."
