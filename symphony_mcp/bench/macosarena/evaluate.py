"""MacOSArena's evaluation (upstream `MacOSEnv.evaluate_task`): reset the apps it names, then for each check call the
getter with the task's parameters on the machine and compare its value with the metric; the checks combine with the
task's `conj` (and / or) into 1 or 0. A check whose getter or metric raises on the task's values counts as failed,
as upstream's does; a machine that cannot be reached is an evaluation error, not a score."""

from __future__ import annotations

from symphony_mcp.bench.macosarena.getters import SHELL_GETTERS, MachineShell
from symphony_mcp.bench.macosarena.metrics import apply
from symphony_mcp.bench.macosarena.tasks import ArenaTask
from symphony_mcp.bench.types import Score
from symphony_mcp.errors import clip

QUIT_TERMINAL = "osascript -e 'tell application \"Terminal\" to quit'"  # writes the shell history out
OPEN_TERMINAL = "open -a Terminal"


def reset_applications(machine: MachineShell, task: ArenaTask) -> list[str]:
    """Upstream's reset before the checks for the apps this adapter runs (Terminal, on a Mac); notes on what was not."""
    if "terminal" not in task.related_apps:
        return []
    if machine.platform != "darwin":
        return [f"Terminal not restarted before the checks (a Mac's reset; this machine is {machine.platform})"]
    machine.sh(QUIT_TERMINAL)
    machine.sh(OPEN_TERMINAL)
    return []


def evaluate(machine: MachineShell, task: ArenaTask) -> Score:
    notes = reset_applications(machine, task)
    evaluator = task.evaluator
    results: list[bool] = []
    lines: list[str] = []
    for name, parameters, expected in zip(evaluator.func, evaluator.parameters, evaluator.expected, strict=True):
        rule = f"{expected.rules.func}({clip(expected.rules.parameters, 200)})"
        try:
            value = SHELL_GETTERS[name](machine, **parameters)
        except TypeError as exc:  # the task's parameters do not fit the getter
            results.append(False)
            lines.append(f"{name}: {exc}")
            continue
        try:
            passed = apply(expected.rules.func, value, expected.rules.parameters)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            passed = False
            rule += f" raised {type(exc).__name__}: {exc}"
        results.append(passed)
        lines.append(f"{name}({clip(parameters, 200)}) = {clip(value, 200)}; {rule} -> {passed}")
    combined = all(results) if evaluator.conj == "and" else any(results)
    return Score(value=1.0 if combined else 0.0, detail="; ".join([f"conj {evaluator.conj}", *lines, *notes]))
