"""WAA's task list: `examples/<domain>/<id>.json` (OSWorld's schema, Windows paths) and `test_all.json` beside the
examples folder (domain -> ids), and why a task cannot run through this adapter.

A task runs when every setup step is one WAA's setup controller sends to a route its server has (setup.py), every
getter is one getters.py implements, and every metric is one of OSWorld's (which WAA's evaluators reuse). Most of
WAA's own getters call its Windows-only routes (UIA, File Explorer, Clock, Settings): those tasks are listed with
the reason and skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from symphony_mcp.bench.osworld.metrics import METRICS, MetricUnavailableError, function_modules, load_metric
from symphony_mcp.bench.types import BenchTask, TaskFilter
from symphony_mcp.bench.waa.getters import GETTERS
from symphony_mcp.bench.waa.setup import SETUP_STEPS
from symphony_mcp.limits import TASK_ID_PATTERN

BENCHMARK = "waa"
INFEASIBLE = "infeasible"
TASK_LIST = "test_all.json"


def load_tasks(examples: Path, task_list: Path | None = None) -> list[dict[str, Any]]:
    """The tasks `task_list` (default: test_all.json beside `examples`) names, or every JSON when there is none,
    each with its domain as `_domain`, in the list's order."""
    listing = task_list or examples.parent / TASK_LIST
    if listing.is_file():
        named = json.loads(listing.read_text(encoding="utf-8"))
        paths = [examples / domain / f"{task_id}.json" for domain, ids in named.items() for task_id in ids]
    else:
        paths = sorted(examples.glob("*/*.json"))
    tasks = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        tasks.append({**data, "_domain": path.parent.name})
    return tasks


def select(tasks: list[dict[str, Any]], selection: TaskFilter) -> list[dict[str, Any]]:
    """Ids, else domains, else every task (WAA's published score covers its whole list)."""
    if selection.task_ids:
        return [t for t in tasks if t["id"] in set(selection.task_ids)]
    if selection.domains:
        return [t for t in tasks if t["_domain"] in set(selection.domains)]
    return tasks


def skip_reason(task: dict[str, Any]) -> str | None:
    if not re.fullmatch(TASK_ID_PATTERN, str(task.get("id", ""))):
        return f"the task id {task.get('id')!r} cannot name a results folder"
    for step in task.get("config", []):
        if step["type"] not in SETUP_STEPS:
            return f"setup step {step['type']!r} has no route on WAA's server that this adapter sends"
    evaluator = task["evaluator"]
    if evaluator["func"] == INFEASIBLE:
        return None
    for step in evaluator.get("postconfig", []):
        if step["type"] not in SETUP_STEPS:
            return f"postconfig step {step['type']!r} has no route on WAA's server that this adapter sends"
    funcs = [evaluator["func"]] if isinstance(evaluator["func"], str) else evaluator["func"]
    try:
        known = function_modules(METRICS)
    except MetricUnavailableError as exc:
        return str(exc)
    for func in funcs:
        if func not in known:
            return f"metric {func!r} is WAA's own, not one of OSWorld's metric functions"
        try:
            load_metric(func)  # its module alone (bench/osworld/metrics.py): a missing dependency is said here
        except MetricUnavailableError as exc:
            return str(exc)
    for getter in _getters(evaluator):
        if getter not in GETTERS:
            return f"getter {getter!r} is not run here (WAA's own getters mostly call its Windows-only routes)"
    return None


def _getters(evaluator: dict[str, Any]) -> list[str]:
    found = []
    for key in ("result", "expected"):
        configs = evaluator.get(key) or []
        for config in configs if isinstance(configs, list) else [configs]:
            if config:
                found.append(str(config["type"]))
    return found


def to_bench_task(task: dict[str, Any]) -> BenchTask:
    try:
        reason = skip_reason(task)
    except (AttributeError, KeyError, TypeError) as exc:
        reason = f"the task JSON is not in WAA's format: {type(exc).__name__}: {exc}"
    evaluator = task.get("evaluator")
    return BenchTask(
        benchmark=BENCHMARK,
        domain=task["_domain"],
        task_id=str(task["id"]),
        instruction=task.get("instruction"),
        skip_reason=reason,
        infeasible=isinstance(evaluator, dict) and evaluator.get("func") == INFEASIBLE,
        data=task,
    )
