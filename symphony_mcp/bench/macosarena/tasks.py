"""MacOSArena's task JSONs (`tasks/<app>/<n>.json` in OpenGVLab/ScaleCUA `evaluation/MacOSArena`, or
`evaluation_examples/macosarena/examples/<app>/<n>.json` in OS-Symphony's copy), read as data, and whether this
adapter can run each (else every reason why not).

A task runs here when its setup steps are `cmd` steps (commands over SSH), its checks are shell-level getters
(getters.SHELL_GETTERS) compared by MacOSArena's `common` metrics, and no app it names must be reset by AppleScript
before the checks (upstream resets System Settings and Clock; Terminal's reset is done here, on a Mac).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from symphony_mcp.bench.macosarena.getters import SHELL_GETTERS
from symphony_mcp.bench.macosarena.metrics import METRIC_MODULE, METRICS
from symphony_mcp.bench.types import BenchTask, TaskFilter
from symphony_mcp.errors import InvalidInputError

BENCHMARK = "macosarena"
SETUP_COMMAND = "cmd"  # the one step type MacOSArena's tasks use; others name functions of its utils/basic.py
APPS_RESET_BY_APPLESCRIPT = frozenset({"mac_system_settings", "clock"})  # reset_applications' other apps
MACOS_APP_STATE = (
    "reads macOS application state (osascript, plists, app databases): only a real Mac running MacOSArena's own "
    "evaluator checks it (this adapter runs the shell-level checks)"
)


class Rules(BaseModel):
    func: str
    parameters: Any = Field(default_factory=list)


class Expected(BaseModel):
    type: str
    rules: Rules


class Evaluator(BaseModel):
    func: list[str]
    conj: Literal["and", "or"] = "and"
    parameters: list[dict[str, Any]]
    expected: list[Expected]

    @model_validator(mode="after")
    def _same_lengths(self) -> Evaluator:
        if not len(self.func) == len(self.parameters) == len(self.expected):
            raise ValueError("the evaluator's func, parameters and expected lists differ in length")
        return self


class Step(BaseModel):
    type: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class ArenaTask(BaseModel):
    """One task JSON as MacOSArena writes it (unknown keys kept out)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    instruction: str
    config: list[Step] = Field(default_factory=list)
    related_apps: list[str] = Field(default_factory=list)
    evaluator: Evaluator

    def commands(self) -> list[str]:
        """The setup's commands in order (steps of type `cmd`)."""
        return [
            str(command)
            for step in self.config
            if step.type == SETUP_COMMAND
            for command in step.parameters.get("command", [])
        ]


def skip_reasons(task: ArenaTask) -> list[str]:
    """Every reason this adapter cannot run the task; none when it can."""
    reasons = [
        f"setup step {step.type!r} is a function of MacOSArena's utils/basic.py; only `cmd` steps run here"
        for step in task.config
        if step.type != SETUP_COMMAND
    ]
    reasons += [f"the getter {name} {MACOS_APP_STATE}" for name in task.evaluator.func if name not in SHELL_GETTERS]
    for expected in task.evaluator.expected:
        if expected.type != METRIC_MODULE or expected.rules.func not in METRICS:
            reasons.append(f"no metric {expected.type}.{expected.rules.func} in MacOSArena's metrics")
    reasons += [
        f"{app} is reset by AppleScript before the checks (upstream's reset_applications), not done here"
        for app in task.related_apps
        if app in APPS_RESET_BY_APPLESCRIPT
    ]
    return list(dict.fromkeys(reasons))


def task_id(domain: str, path: Path) -> str:
    """`<app>_<file stem>`: upstream's own ids (`terminal_1`) for one-app tasks, unique across the folders."""
    return f"{domain}_{path.stem}"


def load(tasks_dir: Path) -> list[BenchTask]:
    """Every task JSON under `tasks_dir` (`<app>/<n>.json`), in a stable order, each with its skip reasons."""
    folder = tasks_dir.expanduser()
    if not folder.is_dir():
        raise InvalidInputError(
            f"no MacOSArena task folder at {folder}: give tasks_dir=<ScaleCUA>/evaluation/MacOSArena/tasks "
            "(--option tasks_dir=...)"
        )
    tasks = []
    for path in sorted(folder.glob("*/*.json")):
        domain = path.parent.name
        try:
            arena = ArenaTask.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the task"
            reason = f"not a MacOSArena task JSON ({where}: {first['msg']})"
            tasks.append(BenchTask(BENCHMARK, domain, task_id(domain, path), skip_reason=reason))
            continue
        except ValueError as exc:
            reason = f"not a MacOSArena task JSON ({str(exc).splitlines()[0]})"
            tasks.append(BenchTask(BENCHMARK, domain, task_id(domain, path), skip_reason=reason))
            continue
        reasons = skip_reasons(arena)
        tasks.append(
            BenchTask(
                BENCHMARK,
                domain,
                task_id(domain, path),
                instruction=arena.instruction,
                skip_reason="; ".join(reasons) or None,
                data={"task": arena.model_dump(), "file": str(path)},
            )
        )
    return tasks


def select(tasks: list[BenchTask], selection: TaskFilter) -> list[BenchTask]:
    """MacOSArena has no subset: every task, narrowed by ids and domains."""
    return [
        task
        for task in tasks
        if (not selection.task_ids or task.task_id in selection.task_ids)
        and (not selection.domains or task.domain in selection.domains)
    ]


def listing_notes(tasks: list[BenchTask]) -> list[str]:
    """How many tasks each kind of reason keeps out (a task may have several)."""
    kinds: Counter[str] = Counter()
    for task in tasks:
        kinds.update({_kind(reason) for reason in (task.skip_reason or "").split("; ") if reason})
    return [f"{count} tasks: {kind}" for kind, count in kinds.most_common()]


def _kind(reason: str) -> str:
    """The reason without what names one task's getter or fault, so that alike reasons count together."""
    if reason.endswith(MACOS_APP_STATE):
        return f"a getter that {MACOS_APP_STATE}"
    return reason.split(" (")[0] if reason.startswith("not a") else reason
