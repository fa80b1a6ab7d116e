"""Run one task: the Python API behind `symphony-mcp run` and the benchmark adapters.

    outcome = await run_task("Open the editor and save a note", settings=load_settings(), checker=...)

The task's directory `<results_dir>/<task_id>` receives the server's trajectory (`traj.jsonl`,
`step_N.png`), `run.json` and finally `result.txt`. A finished task (with `result.txt`) is skipped
unless `force`; an unfinished one (a killed run) is moved aside to `<task_id>.attempt-<time>` and
run again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from symphony_mcp.config import Settings
from symphony_mcp.memory.layout import TRAJECTORY_FILE, check_task_id, new_task_id
from symphony_mcp.memory.trajectory import TrajectoryStep, read_trajectory
from symphony_mcp.models.registry import ModelRegistry
from symphony_mcp.orchestrator.checker import Checker
from symphony_mcp.orchestrator.connection import ServerConnection, SpawnServer, connect
from symphony_mcp.orchestrator.loop import EventSink, Orchestrator
from symphony_mcp.orchestrator.records import Outcome, RunRecord
from symphony_mcp.orchestrator.task_folders import (
    finished_record,
    mirror_trajectory,
    save_file,
    save_record,
    save_result,
    set_aside,
)

# Settings a spawned server needs from the client's settings (the orchestrator's own stay here).
_SERVER_GROUPS = ("display", "screenshot", "input", "ocr", "models", "grounding", "memory")


@dataclass(frozen=True)
class TaskOutcome:
    task_id: str
    outcome: Outcome
    skipped: bool  # finished earlier; nothing was run
    directory: Path
    record: RunRecord
    trajectory: list[TrajectoryStep]

    @property
    def success(self) -> bool:
        return self.outcome == "success"


async def run_task(
    instruction: str,
    *,
    settings: Settings,
    task_id: str | None = None,
    connection: ServerConnection | None = None,
    checker: Checker | None = None,
    force: bool = False,
    on_event: EventSink | None = None,
) -> TaskOutcome:
    """Run `instruction` to Success, Fail or Error through a symphony-mcp server (spawned by default)."""
    results = settings.orchestrator.results_dir.expanduser().resolve()
    task_id = task_id or new_task_id()
    check_task_id(task_id)
    task_dir = results / task_id
    previous = None if force else finished_record(task_dir)
    if previous is not None and previous.outcome is not None:
        return TaskOutcome(task_id, previous.outcome, True, task_dir, previous, read_trajectory(task_dir))
    set_aside(task_dir)
    models = ModelRegistry(settings.models)
    try:
        planner = models.client("orchestrator")
        connection = connection or spawned_server(settings)
        async with connect(connection) as client:
            orchestrator = Orchestrator(
                client,
                planner,
                models.usage,
                settings.orchestrator,
                checker,
                on_event,
                save=lambda record: save_record(task_dir, record),
                save_file=lambda name, data: save_file(task_dir, name, data),
            )
            record = await orchestrator.run(instruction, task_id)
            # The server keeps trajectories elsewhere; a task that ended before the server started it has none.
            if record.started_on_server and not (task_dir / TRAJECTORY_FILE).exists():
                await mirror_trajectory(client, task_id, task_dir)
    finally:
        await models.aclose()
    assert record.outcome is not None
    save_record(task_dir, record)
    save_result(task_dir, record.outcome == "success")
    return TaskOutcome(task_id, record.outcome, False, task_dir, record, read_trajectory(task_dir))


def spawned_server(settings: Settings, *args: str) -> SpawnServer:
    """`symphony-mcp serve ARGS` with the client's settings (SYMPHONY_* variables), writing into the results."""
    env: dict[str, str] = {}
    for group in _SERVER_GROUPS:
        _flatten(f"SYMPHONY_{group.upper()}", getattr(settings, group), env)
    env["SYMPHONY_MEMORY__TRAJECTORY_DIR"] = str(settings.orchestrator.results_dir.expanduser().resolve())
    return SpawnServer(args, env)


def _flatten(prefix: str, value: Any, env: dict[str, str]) -> None:
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _flatten(f"{prefix}__{name.upper()}", getattr(value, name), env)
    elif value is None:
        return
    elif isinstance(value, SecretStr):
        env[prefix] = value.get_secret_value()
    elif isinstance(value, (dict, list)):
        env[prefix] = json.dumps(value)
    elif isinstance(value, bool):
        env[prefix] = "true" if value else "false"
    else:
        env[prefix] = str(value)
