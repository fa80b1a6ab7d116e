"""What the memory tools return: light schemas (no image libraries) the server fills and the orchestrator reads."""

from __future__ import annotations

from pydantic import BaseModel, Field

from symphony_mcp.desktop.frames import Placed
from symphony_mcp.imaging.geometry import Point
from symphony_mcp.memory.judgements import Reflection
from symphony_mcp.memory.layout import TaskInfo
from symphony_mcp.memory.milestones import StepSummary


class LoopReport(BaseModel):
    detected: bool
    window: list[int] = Field(default_factory=list, description="step numbers of the repeating window")
    earlier: list[int] = Field(default_factory=list, description="step numbers of the earlier window it repeats")
    message: str


class StepAction(BaseModel):
    """What one step did, for a reader without a model: the action, its target and its result."""

    step: int
    action: str
    target: str | None = Field(description="what it acted on: a phrase, description, text, keys, app or window")
    points: list[Point] = Field(description="where it acted, in the result's space")
    ok: bool = Field(description="false: the action raised an error")
    result: str = Field(description="what happened, or the error")


class MemoryState(Placed):
    """The trajectory as the memory holds it, without any model call."""

    task: TaskInfo
    steps: int
    actions: list[StepAction] = Field(description="every step's action, target and result, oldest first")
    summaries: list[StepSummary] = Field(description="step checks so far (from `reflect`)")
    unchecked_steps: list[int] = Field(description="steps not yet checked by the memoryer model")
    image_steps: list[int] = Field(description="steps whose screenshots are in memory (0 = start), oldest first")
    milestones: list[int]
    evicted_milestones: list[int]
    facts: list[str]
    loop: LoopReport
    failed_actions: list[int] = Field(description="steps whose action raised an error or whose check failed")
    latest_reflection: Reflection | None = None


class ReflectOutcome(BaseModel):
    step: int = Field(description="the latest step, which the reflection is about")
    reflection: Reflection
    checked: list[StepSummary] = Field(description="steps checked by this call")
    hints: list[str] = Field(description="computed facts given to the audit (failed action, loop)")
    loop: LoopReport
    model_ms: float
