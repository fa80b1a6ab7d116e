"""What a run leaves in its task directory besides the server's trajectory: `run.json` and `result.txt`.

Task directory layout (OSWorld-compatible): `traj.jsonl` and `step_N.png` (written by the server's
trajectory recorder), `task.json` (the server's task record), `result.txt` (1.0 on a verified success,
else 0.0; written last, so its presence means the task finished) and `run.json` (this file's models).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from symphony_mcp.memory.judgements import Reflection
from symphony_mcp.models.usage import RoleUsage

RUN_FILE = "run.json"
RESULT_FILE = "result.txt"


class State(StrEnum):
    """OSCAR's states, made explicit."""

    INIT = "Init"
    OBSERVE = "Observe"
    PLAN = "Plan"
    EXECUTE = "Execute"
    VERIFY = "Verify"
    SUCCESS = "Success"
    FAIL = "Fail"
    RESET = "Reset"
    ERROR = "Error"


# "unverified": the planner said done and no checker confirmed it; it is never counted as a success.
Outcome = Literal["success", "unverified", "fail", "error"]
CLAIMED_DONE: tuple[Outcome, ...] = ("success", "unverified")  # the agent itself says the task is done


class Transition(BaseModel):
    at: float
    step: int
    source: State
    target: State
    reason: str


class ParsedAction(BaseModel):
    name: str = Field(description="the action as the planner names it, or done / fail")
    tool: str | None = Field(None, description="the server's tool, when the planner names it otherwise")
    arguments: dict[str, Any] = Field(default_factory=dict)
    code: str = Field(description="the call as the model wrote it")


class StepTimings(BaseModel):
    observe_ms: float = 0.0
    reflect_ms: float = 0.0
    plan_ms: float = 0.0
    execute_ms: float = 0.0
    record_ms: float = 0.0
    model_ms: float = Field(0.0, description="time in model calls (planner, and the audit inside reflect)")
    overhead_ms: float = Field(0.0, description="everything but model calls")


class RunStep(BaseModel):
    """One orchestrator step: what it saw, thought, did, and what came back."""

    step: int = Field(description="1-based orchestrator step")
    frame_id: str | None = None
    screenshot_size: tuple[int, int] | None = None
    marks_file: str | None = Field(
        None, description="the screenshot with numbered elements the planner saw (dual grounding), in the task folder"
    )
    elements: str | None = Field(None, description="the numbered element list the planner saw (dual grounding)")
    reflection: Reflection | None = None
    model_output: str = Field("", description="the planner's final answer for this step")
    reasoning: str | None = Field(None, description="the thinking the model sent beside that answer, if any")
    rejected_outputs: list[str] = Field(default_factory=list, description="answers re-asked (format, schema)")
    thought: str | None = Field(None, description="the answer's prose without its action, else its reasoning")
    plan: str | None = Field(None, description="the answer's (Next action) section")
    action: ParsedAction | None = None
    tool_result: dict[str, Any] | None = Field(None, description="the tool's structured result")
    tool_error: str | None = None
    trajectory_step: int | None = Field(None, description="the server's traj.jsonl step this action became")
    screen_points: list[tuple[int, int]] = Field(default_factory=list, description="screen pixels acted on")
    verification: str | None = Field(None, description="checker feedback when the step said done")
    timings: StepTimings = Field(default_factory=StepTimings)


class RunRecord(BaseModel):
    task_id: str
    instruction: str
    started_at: float
    ended_at: float | None = None
    outcome: Outcome | None = None
    message: str | None = Field(None, description="why it failed or errored, or the checker's last word")
    max_steps: int
    screen_size: tuple[int, int] | None = None
    started_on_server: bool = Field(
        False, description="the server started the task (start_task), so it keeps the task's trajectory"
    )
    steps: list[RunStep] = Field(default_factory=list)
    transitions: list[Transition] = Field(default_factory=list)
    usage: dict[str, RoleUsage] = Field(default_factory=dict, description="per model role")
