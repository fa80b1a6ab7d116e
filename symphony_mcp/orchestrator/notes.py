"""What the trajectory keeps of a planner answer besides its action: the thought and the plan.

Real models answer in many shapes: a bare code block, prose before or after it, a native tool call with
or without content, their thinking in a separate reasoning field. The thought is the answer's prose
without the action (the model's reasoning when there is no prose); the plan is its (Next action) section.
An answer that is nothing but its action leaves both empty: the server has recorded what was done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from symphony_mcp.limits import MAX_NOTE
from symphony_mcp.models.calls import action_block
from symphony_mcp.models.client import Completion
from symphony_mcp.orchestrator.action_space import section

# The header the prompt asks for right above the action block (prompts.CODE_FORMAT): it labels the removed block.
_ACTION_HEADER = re.compile(r"\(\s*Grounded action\s*\)\s*\Z", re.I)


@dataclass(frozen=True)
class StepNotes:
    thought: str | None
    plan: str | None


def step_notes(completion: Completion, function_calling: bool) -> StepNotes:
    """The thought and plan of an answer whose action was accepted (so a written one has its block)."""
    text = completion.text
    if function_calling:
        prose = text.strip()
    else:
        block = action_block(text)
        prose = "\n\n".join(part for part in (_ACTION_HEADER.sub("", block.before).strip(), block.after) if part)
    return StepNotes(
        thought=_clipped(prose or completion.reasoning.strip()), plan=_clipped(section(text, "Next action"))
    )


def _clipped(text: str | None) -> str | None:
    """The text as record_step takes it (at most MAX_NOTE characters: a reasoning model thinks at length)."""
    return text[:MAX_NOTE] if text else None
