"""A task's directory on disk (OSWorld's result layout) and task ids: names only, no heavy imports.

Both the server's recorder and the orchestrator's results read and write this layout, so its names
are spelled here once: `traj.jsonl` (one line per step), `step_N.png` (the screen after step N;
step 0 is the start), `task.json` (the task record).
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.limits import TASK_ID_PATTERN
from symphony_mcp.memory.owner import TaskOwner

TRAJECTORY_FILE = "traj.jsonl"
TASK_FILE = "task.json"
EndStatus = Literal["success", "fail", "infeasible", "abandoned"]
TaskStatus = Literal["running", EndStatus]
_TASK_ID = re.compile(TASK_ID_PATTERN)


class TaskInfo(BaseModel):
    task_id: str
    instruction: str
    directory: str
    started_at: float
    ended_at: float | None = None
    status: TaskStatus = "running"
    note: str | None = None
    steps: int = 0
    owner: TaskOwner | None = Field(
        None, description="the server process recording it; a running task whose owner is gone is marked abandoned"
    )
    active_here: bool = Field(False, description="the running task of the caller's session")


def step_screenshot(step: int) -> str:
    """The file name of the screen after `step` (0: at the start)."""
    return f"step_{step}.png"


def step_screenshot_path(directory: Path, step: int) -> Path:
    return directory / step_screenshot(step)


def timestamp_id() -> str:
    """A sortable, time-based name part, e.g. for task ids and set-aside attempts."""
    return time.strftime("%Y%m%d-%H%M%S")


def new_task_id() -> str:
    return f"{timestamp_id()}-{secrets.token_hex(3)}"


def check_task_id(task_id: str) -> None:
    """Task ids are directory names: refuse anything that could leave the results directory."""
    if not _TASK_ID.fullmatch(task_id):  # match() would let '$' accept a trailing newline
        raise InvalidInputError(
            f"task id {clip(task_id)} is not allowed: use 1..128 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
