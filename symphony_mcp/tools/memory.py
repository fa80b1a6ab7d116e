"""MCP tools and resources of the trajectory memory and the Reflection-Memory Agent."""

from __future__ import annotations

import re
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.limits import MAX_COUNTER, MAX_ID, MAX_INSTRUCTION, MAX_NOTE, TASK_ID_PATTERN
from symphony_mcp.memory.layout import EndStatus, TaskInfo
from symphony_mcp.memory.result_schemas import LoopReport, MemoryState, ReflectOutcome
from symphony_mcp.memory.trajectory import TrajectoryStep, read_trajectory
from symphony_mcp.tools.arguments import FrameId, Space, missing
from symphony_mcp.tools.common import READ_ONLY, in_latest_space
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_resource, define_tool
from symphony_mcp.tools.progress import report_step

# Writes only the server's own trajectory files; changes nothing on the desktop.
RECORD = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
# Asks the memoryer model (outside the server) and updates the memory.
REFLECT = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True)

Note = Annotated[str, Field(max_length=MAX_NOTE)]


@define_tool(RECORD)
async def start_task(
    cores: Cores,
    instruction: Annotated[
        str, Field(min_length=1, max_length=MAX_INSTRUCTION, description="the task, as given to the agent")
    ],
    task_id: Annotated[
        str | None,
        Field(
            pattern=TASK_ID_PATTERN,
            max_length=MAX_ID,
            description="id and directory name (1..128 letters, digits, . _ -, starting with a letter or digit); "
            "default: time-based",
        ),
    ] = None,
) -> TaskInfo:
    """Start recording a task in this session: every action from now on becomes a step of its
    trajectory (traj.jsonl + step_N.png), with loop checks and long-term memory."""
    return await cores.tasks.start(instruction, task_id)


@define_tool(RECORD)
async def end_task(
    cores: Cores,
    status: Annotated[EndStatus, Field(description="how it ended")],
    note: Annotated[Note | None, Field(description="a line on the outcome, kept with the task")] = None,
) -> TaskInfo:
    """End this session's task; its trajectory stays on disk."""
    return cores.tasks.end(status, note)


@define_tool(READ_ONLY)
async def list_tasks(cores: Cores) -> list[TaskInfo]:
    """Recorded tasks, newest first, with their status and step counts (`active_here`: this session's)."""
    return cores.tasks.list()


@define_tool(RECORD, refused=[missing("thought", "plan", "tool_output")])
async def record_step(
    cores: Cores,
    thought: Annotated[Note | None, Field(description="the reasoning behind the step")] = None,
    plan: Annotated[Note | None, Field(description="the plan or intent the step served")] = None,
    tool_output: Annotated[Note | None, Field(description="output worth keeping (e.g. of a code run)")] = None,
    step: Annotated[
        int | None, Field(ge=1, le=MAX_COUNTER, description="step to annotate (default: the latest)")
    ] = None,
) -> TrajectoryStep:
    """Add your thought, plan or a tool output to a step the server recorded (default: the latest).
    The step's coordinates are the latest screenshot's pixels."""
    if thought is None and plan is None and tool_output is None:
        raise InvalidInputError("give at least one of thought, plan or tool_output")
    return await in_latest_space(cores.screen, await cores.tasks.task().annotate(step, thought, plan, tool_output))


@define_tool(REFLECT)
async def reflect(cores: Cores) -> ReflectOutcome:
    """Audit the trajectory now with the memoryer model: each unchecked step is judged (success or
    failure, one-line summary), then the trajectory gets a status (On-track, Off-track with an
    error type, Completed, Infeasible), a diagnosis, the milestone flag and new facts."""
    await report_step("checking steps and auditing the trajectory")
    outcome = await cores.tasks.reflect()
    await report_step(outcome.reflection.status)
    return outcome


@define_tool(READ_ONLY)
async def memory_audit(cores: Cores, space: Space = "screenshot", frame_id: FrameId = None) -> MemoryState:
    """The running task's memory without any model: what each step did (action, target, result), step checks,
    milestones and kept screenshots, facts, loop warning, failed actions, the latest reflection. Points are
    the latest screenshot's pixels unless space/frame_id say otherwise."""
    view = await cores.screen.caller_space(space, frame_id)
    return view.express(cores.tasks.task().state())


@define_tool(READ_ONLY)
async def check_loop(cores: Cores) -> LoopReport:
    """Whether the last steps repeat an earlier window of the same actions on the same screens."""
    return cores.tasks.task().loop


@define_resource(
    "trajectory://{task_id}/steps",
    name="trajectory-steps",
    description="A task's recorded steps (JSON list), as in its traj.jsonl",
    mime_type="application/json",
)
async def trajectory_steps(cores: Cores, task_id: str) -> str:
    steps = read_trajectory(cores.tasks.directory(task_id))
    return "[" + ",".join(step.model_dump_json() for step in steps) + "]"


@define_resource(
    "trajectory://{task_id}/steps/{step}/screenshot",
    name="trajectory-step-screenshot",
    description="The screen after a step (step 0: at the start), PNG",
    mime_type="image/png",
)
async def step_screenshot(cores: Cores, task_id: str, step: str) -> bytes:
    if not re.fullmatch(r"[0-9]{1,15}", step):
        raise InvalidInputError(f"step must be a number (0 = the start), got {clip(step)}")
    return (await cores.tasks.screenshot(task_id, int(step))).read_bytes()


DEFINITIONS = (
    start_task,
    end_task,
    list_tasks,
    record_step,
    reflect,
    memory_audit,
    check_loop,
    trajectory_steps,
    step_screenshot,
)
