"""Task result directories: skip finished tasks, keep unfinished attempts aside, write results atomically."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from mcp import Client
from mcp.types import BlobResourceContents, TextResourceContents

from symphony_mcp.memory.layout import TRAJECTORY_FILE, step_screenshot_path, timestamp_id
from symphony_mcp.memory.trajectory import TrajectoryStep
from symphony_mcp.orchestrator.records import RESULT_FILE, RUN_FILE, RunRecord


def finished_record(task_dir: Path) -> RunRecord | None:
    """The record of a finished task (its result file exists), else None."""
    if not (task_dir / RESULT_FILE).exists() or not (task_dir / RUN_FILE).exists():
        return None
    return RunRecord.model_validate_json((task_dir / RUN_FILE).read_text(encoding="utf-8"))


def set_aside(task_dir: Path) -> Path | None:
    """Move an earlier attempt out of the way (never delete it); returns where it went."""
    if not task_dir.exists():
        return None
    target = task_dir.with_name(f"{task_dir.name}.attempt-{timestamp_id()}")
    suffix = 1
    while target.exists():
        suffix += 1
        target = target.with_name(f"{target.name}-{suffix}")
    task_dir.rename(target)
    return target


def save_record(task_dir: Path, record: RunRecord) -> None:
    """Replace run.json atomically (written after every step, so a killed run keeps its steps)."""
    task_dir.mkdir(parents=True, exist_ok=True)
    tmp = task_dir / f"{RUN_FILE}.tmp"
    tmp.write_text(record.model_dump_json(indent=1), encoding="utf-8")
    os.replace(tmp, task_dir / RUN_FILE)


def save_file(task_dir: Path, name: str, data: bytes) -> None:
    """A file the run keeps beside run.json (a step's marked screenshot); `name` is the loop's own, never a path."""
    if Path(name).name != name:
        raise ValueError(f"not a file name: {name!r}")
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / name).write_bytes(data)


def save_result(task_dir: Path, success: bool) -> None:
    """Written last: its presence marks the task finished (OSWorld's convention: 1.0 or 0.0)."""
    (task_dir / RESULT_FILE).write_text("1.0\n" if success else "0.0\n", encoding="utf-8")


async def mirror_trajectory(client: Client, task_id: str, task_dir: Path) -> int:
    """Copy a task's trajectory from a server that writes elsewhere (a remote one) through its resources."""
    listing = await client.read_resource(f"trajectory://{task_id}/steps")
    contents = listing.contents[0]
    if not isinstance(contents, TextResourceContents):
        raise ValueError("the server's trajectory resource is not JSON text")
    steps = [TrajectoryStep.model_validate(s) for s in json.loads(contents.text)]
    task_dir.mkdir(parents=True, exist_ok=True)
    with (task_dir / TRAJECTORY_FILE).open("w", encoding="utf-8") as out:
        out.writelines(step.model_dump_json() + "\n" for step in steps)
    for number in range(len(steps) + 1):
        shot = await client.read_resource(f"trajectory://{task_id}/steps/{number}/screenshot")
        blob = shot.contents[0]
        if isinstance(blob, BlobResourceContents):
            step_screenshot_path(task_dir, number).write_bytes(base64.b64decode(blob.blob))
    return len(steps)
