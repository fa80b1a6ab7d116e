"""Runs of OSWorld tasks through the benchmark runner with a scripted stand-in planner (shared by the OSWorld tests)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from symphony_mcp.bench.environments import started_environments
from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.results_layout import read_evaluation, task_dir
from symphony_mcp.bench.runner import make_plan, run_local
from symphony_mcp.bench.types import TaskEvaluation, TaskFilter
from symphony_mcp.config import Settings, load_settings
from testkit.model_server import ModelRequest, StandInModel
from testkit.scripted_planner import PLANNER

Answer = str | Callable[[], str]


class Planner:
    """The stand-in planner: what each task's run does is chosen per task id before a run. An answer may be
    a function, called when the planner is asked (e.g. to look at the end state before saying done)."""

    def __init__(self, instructions: dict[str, str]) -> None:
        self.instructions = instructions
        self.plans: dict[str, list[Answer]] = {}

    def __call__(self, request: ModelRequest) -> str:
        text = "\n".join(request.texts())
        task = next(t for t, instruction in self.instructions.items() if instruction in text)
        answer = self.plans[task].pop(0)
        return answer if isinstance(answer, str) else answer()


def settings_for(stand_in: StandInModel, max_steps: int = 5, coder: str = "") -> Settings:
    """The runner's settings: the stand-in planner (and Coder, when `coder` names its model), no reflection."""
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 0}
    models = {"orchestrator": {**endpoint, "model": PLANNER}}
    if coder:
        models["coder"] = {**endpoint, "model": coder}
    return load_settings(
        models=models,
        orchestrator={"max_steps": max_steps, "reflection": False},
        ocr={"warm_up": False},
    )


async def run(adapter: OSWorldAdapter, settings: Settings, results: Path, *ids: str) -> dict[str, TaskEvaluation]:
    plan = make_plan(adapter, TaskFilter(task_ids=ids), results, force=True)
    assert {t.task_id for t in plan.pending} == set(ids), [(t.task_id, t.skip_reason) for t in plan.skipped]
    with started_environments(1, settings, results / "environments", own_display=True) as environments:
        await run_local(adapter, environments, plan, settings, results)
    evaluations = {}
    for task in plan.pending:
        evaluation = read_evaluation(task_dir(results, task))
        assert evaluation is not None
        assert (task_dir(results, task) / "result.txt").read_text().strip() == str(evaluation.score)
        evaluations[task.task_id] = evaluation
    return evaluations
