"""OSWorld's `DesktopEnv.evaluate`, on the local desktop, with OSWorld's own getter and metric functions.

The order is OSWorld's: the postconfig steps run; an infeasible task scores 1 only when the agent's last
action was FAIL (here: the planner's fail(), not a run that ran out of steps); any other task scores 0 when
the agent's last action was FAIL; then each metric gets `metric(result, expected, **options)` (or
`metric(result, **options)` without an expected getter). Several metrics combine by `conj`: "and" (the
default) stops at the first 0, else the mean; "or" stops at the first 1, else the max. A getter's
FileNotFoundError scores 0 (with "and"; with "or" the metric gets None, as OSWorld's code ends up doing).
The getters run on a stand-in `env` whose in-VM server answers from the environment's sandbox (getters.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from symphony_mcp.bench.osworld.getters import GetterContext, GetterEnv, get, getter_env
from symphony_mcp.bench.osworld.local_setup import SandboxMachine
from symphony_mcp.bench.osworld.metrics import load_metric, quiet
from symphony_mcp.bench.osworld.setup import SetupRunner
from symphony_mcp.bench.types import Score

INFEASIBLE = "infeasible"


@dataclass(frozen=True)
class Metric:
    func: str
    result: dict[str, Any] | None
    expected: dict[str, Any] | None
    options: dict[str, Any]


def metrics_of(evaluator: dict[str, Any]) -> list[Metric]:
    """The evaluator's metrics as a list (a single func is a list of one), with their getters and options."""
    funcs = evaluator["func"]
    if isinstance(funcs, str):
        options = evaluator.get("options") or {}
        return [Metric(funcs, evaluator.get("result"), evaluator.get("expected") or None, options)]
    count = len(funcs)
    results = evaluator.get("result") or [None] * count
    expected = evaluator.get("expected") or [None] * count
    options = evaluator.get("options") or [{}] * count
    if not len(results) == len(expected) == len(options) == count:
        raise ValueError(f"evaluator lists of different lengths for {count} metrics")
    return [Metric(f, r, e or None, o or {}) for f, r, e, o in zip(funcs, results, expected, options, strict=True)]


def evaluate(evaluator: dict[str, Any], runner: SetupRunner[SandboxMachine], agent_failed: bool) -> Score:
    """A task of a local environment: its sandbox's steps and stand-in server (getters.getter_env)."""
    machine = runner.machine
    context = GetterContext(machine.sandbox, runner.cache_dir, machine.screen_size, runner.task_id, runner.offline)
    return evaluate_on(evaluator, runner.run, lambda: getter_env(context), context, agent_failed)


def evaluate_on(
    evaluator: dict[str, Any],
    run_steps: Callable[[list[dict[str, Any]]], None],
    getters: Callable[[], AbstractContextManager[GetterEnv]],
    context: GetterContext,
    agent_failed: bool,
) -> Score:
    """OSWorld's evaluation on any machine: `run_steps` runs the postconfig there, `getters` opens the env its getters
    read (a local environment's stand-in server, or a remote machine's own controller: remote.py)."""
    run_steps(evaluator.get("postconfig", []))
    if evaluator["func"] == INFEASIBLE:
        if agent_failed:
            return Score(value=1.0, detail="infeasible task: the agent said fail, as it should")
        return Score(value=0.0, detail="infeasible task: the agent did not say fail")
    if agent_failed:
        return Score(value=0.0, detail="the agent said fail on a feasible task")
    with getters() as env:
        return _score(evaluator, env, context)


def _score(evaluator: dict[str, Any], env: GetterEnv, context: GetterContext) -> Score:
    return metric_score(evaluator, lambda config: _get(env, context, config))


def metric_score(evaluator: dict[str, Any], get: Callable[[dict[str, Any] | None], Any]) -> Score:
    """The evaluator's metrics over the values `get` reads for its getter configs (None for none), combined by
    `conj` as OSWorld does (this module's docstring); shared by every benchmark scored with OSWorld's metrics."""
    conj = evaluator.get("conj", "and")
    values: list[float] = []
    details: list[str] = []
    metrics = metrics_of(evaluator)
    for metric in metrics:
        try:
            result = get(metric.result)
        except FileNotFoundError as exc:
            details.append(f"{metric.func}: result file not found ({exc})")
            if conj == "and" or len(metrics) == 1:
                return Score(value=0.0, detail="; ".join(details))
            result = None
        function = load_metric(metric.func)
        with quiet():
            if metric.expected is not None:
                value = float(function(result, get(metric.expected), **metric.options))
            else:
                value = float(function(result, **metric.options))
        details.append(f"{metric.func}({_short(result)}) = {value:g}")
        if conj == "and" and value == 0.0:
            return Score(value=0.0, detail="; ".join(details))
        if conj == "or" and value == 1.0:
            return Score(value=1.0, detail="; ".join(details))
        values.append(value)
    total = sum(values) / len(values) if conj == "and" else max(values)
    return Score(value=min(max(total, 0.0), 1.0), detail="; ".join(details))


def _get(env: GetterEnv, context: GetterContext, config: dict[str, Any] | None) -> Any:
    if config is None:
        return None
    with quiet():
        return get(env, context, config)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
