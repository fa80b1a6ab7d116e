"""Runs of OSWorld-shaped tasks through the benchmark runner with a scripted stand-in planner (shared by the OSWorld
and WindowsAgentArena tests and the runner's throughput benchmark)."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from rich.console import Console

from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.environments import started_environments
from symphony_mcp.bench.osworld import OSWorldAdapter
from symphony_mcp.bench.registry import adapter_spec
from symphony_mcp.bench.request import Backend, BenchRequest
from symphony_mcp.bench.results_layout import read_evaluation, task_dir
from symphony_mcp.bench.runner import make_plan, run_local
from symphony_mcp.bench.summary import BenchSummary
from symphony_mcp.bench.types import EVALUATION_FILE, TaskEvaluation, TaskFilter
from symphony_mcp.config import Settings, load_settings
from testkit.model_server import ModelRequest, StandInModel
from testkit.scripted_planner import PLANNER, act
from testkit.waiting import wait_for

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


def in_xterm(command: str, finished: Callable[[], bool]) -> list[Answer]:
    """Open a terminal on the machine, type the command, press Enter; say done once it has run there (what it makes
    is there: a real planner would see the prompt come back)."""

    def done() -> str:
        wait_for(finished, timeout=30)
        return act("done()", "The command has run.")

    return [
        act("open_app(target='xterm -e bash --norc --noprofile', wait_seconds=30)", "Open a terminal."),
        act(f"type(text={command!r})", "Type the command."),
        act('hotkey(keys=["enter"])', "Run it."),
        done,
    ]


def bench_on_machines(
    benchmark: str,
    options: Mapping[str, object],
    machines: Sequence[str],
    settings: Settings,
    results: Path,
    *,
    ids: Sequence[str] = (),
    force: bool = True,
    reset: str | None = None,
    backend: Backend = "local",
    parallel: int = 1,
) -> tuple[BenchSummary, dict[str, TaskEvaluation]]:
    """`symphony-mcp bench BENCHMARK --option ... --machines URL,... [--machine-reset CMD] [--tasks ...]` run here
    into `results` (no machines: `--parallel N` local environments): its summary and every finished task's
    evaluation there, by task id."""
    request = BenchRequest(
        adapter_spec(benchmark, None),
        TaskFilter(task_ids=tuple(ids)),
        tuple(options.items()),
        parallel=parallel,
        force=force,
        quiet=True,
        machines=tuple(machines),
        machine_reset=reset,
        backend=backend,
    )
    orchestrator = settings.orchestrator.model_copy(update={"results_dir": results})
    run_settings = settings.model_copy(update={"orchestrator": orchestrator})
    summary, written = run_bench(request, run_settings, Console(file=io.StringIO()))
    evaluations = {}
    for found in written.parent.glob(f"*/*/{EVALUATION_FILE}"):  # <benchmark>/<domain>/<task>/
        evaluation = read_evaluation(found.parent)
        assert evaluation is not None, found
        if found.parent.name == evaluation.task_id:  # not a <task>.attempt-<time> folder set aside by a rerun
            evaluations[evaluation.task_id] = evaluation
    return summary, evaluations
