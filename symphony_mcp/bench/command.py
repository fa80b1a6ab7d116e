"""`symphony-mcp bench`: plan, run on the chosen backend, write the summary and its page.

SIGTERM and SIGINT cancel the run: the tasks in flight stop (their folders stay unfinished and run
again next time), the environments' displays are stopped, and nothing finished is lost.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

from rich.console import Console

from symphony_mcp.bench.environments import started_environments
from symphony_mcp.bench.machines import check_schemes, machine_environments
from symphony_mcp.bench.progress import progress_view
from symphony_mcp.bench.registry import AdapterOptions, load_adapter
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.results_layout import benchmark_dir
from symphony_mcp.bench.runner import Plan, RunObserver, RunResult, make_plan, run_local
from symphony_mcp.bench.summary import BenchSummary, MachineScope, scope_of, summarise, write_summary
from symphony_mcp.bench.types import (
    Adapter,
    DrivesMachines,
    Environment,
    ExplainsListing,
    TaskFilter,
    brings_own_display,
)
from symphony_mcp.config import Settings
from symphony_mcp.errors import SettingsError
from symphony_mcp.stop_signals import STOP_SIGNALS

T = TypeVar("T")


def results_root(settings: Settings) -> Path:
    return settings.orchestrator.results_dir.expanduser().resolve()


def list_tasks(spec: str, selection: TaskFilter, options: AdapterOptions = ()) -> list[str]:
    """`bench list`: one line per selected task, skipped ones with their reason; then, after `#`, how many are
    runnable and what the adapter's task set covers and leaves out (ExplainsListing)."""
    adapter = load_adapter(spec, options)
    try:
        tasks = adapter.list_tasks(selection)
    finally:
        asyncio.run(adapter.close())
    lines = [f"{t.domain}/{t.task_id}" + (f"  SKIPPED: {t.skip_reason}" if t.skip_reason else "") for t in tasks]
    runnable = [t for t in tasks if not t.skip_reason]
    infeasible = sum(t.infeasible for t in runnable)
    lines.append(f"# {len(runnable)} of {len(tasks)} selected tasks runnable here, {infeasible} of them infeasible")
    if isinstance(adapter, ExplainsListing):
        lines += [f"# {note}" for note in adapter.listing_notes()]
    return lines


def run_bench(request: BenchRequest, settings: Settings, console: Console) -> tuple[BenchSummary, Path]:
    """Run what the request selects; returns the summary and where it was written."""
    results = results_root(settings)
    adapter = load_adapter(request.spec, request.options)
    try:
        _check_machines(adapter, request)
        plan = make_plan(adapter, request.selection, results, request.force)
    except BaseException:
        asyncio.run(adapter.close())
        raise
    environments = [f"env-{i}" for i in range(min(_slots(request), len(plan.pending)))]
    with progress_view(console, len(plan.pending), environments, request.quiet) as observer:
        if request.backend == "ray" and plan.pending:
            asyncio.run(adapter.close())  # the actors make their own
            from symphony_mcp.bench.ray_backend import run_ray

            result = run_ray(request, plan, settings, results, observer)
        else:
            result = _run_in_environments(adapter, request, plan, settings, results, observer)
    runnable = len(plan.pending) + len(plan.earlier)
    counts = (runnable, runnable + len(plan.skipped), plan.infeasible)
    scope = scope_of(plan.title, *counts, _machines(adapter, request))
    summary = summarise(
        plan.benchmark,
        [*plan.earlier, *result.evaluations],
        plan.skipped,
        result.not_run,
        result.seconds,
        len(result.evaluations),
        scope,
    )
    return summary, write_summary(benchmark_dir(results, plan.benchmark), summary)


def _run_in_environments(
    adapter: Adapter, request: BenchRequest, plan: Plan, settings: Settings, results: Path, observer: RunObserver
) -> RunResult:
    """The pending tasks in their environments (_environments); everything async of the adapter (setup, tasks,
    teardown, close) in one event loop."""

    async def closing(run: Awaitable[RunResult]) -> RunResult:
        try:
            return await run
        finally:
            await adapter.close()

    if not plan.pending:
        return run_until_signalled(lambda: closing(asyncio.sleep(0, RunResult(plan))))
    with _environments(adapter, request, len(plan.pending), settings) as environments:
        return run_until_signalled(lambda: closing(run_local(adapter, environments, plan, settings, results, observer)))


def _environments(
    adapter: Adapter, request: BenchRequest, pending: int, settings: Settings
) -> AbstractContextManager[list[Environment]]:
    """One environment per machine of --machines (no display here), else --parallel ones on this host."""
    if request.machines:
        machines = request.machines[:pending]
        return machine_environments(machines, settings, server_args=request.server_args, reset=request.machine_reset)
    count = min(request.parallel, pending)
    own = brings_own_display(adapter)
    return started_environments(count, settings, server_args=request.server_args, own_display=own)


def _check_machines(adapter: Adapter, request: BenchRequest) -> None:
    """Remote machines for an adapter that drives them, displays here for the others."""
    if request.machines and not isinstance(adapter, DrivesMachines):
        raise SettingsError(
            f"{adapter.name} runs on this host's displays: --machines is for osworld-vm, waa and macosarena"
        )
    if isinstance(adapter, DrivesMachines):
        if not request.machines:
            schemes = " or ".join(f"{scheme}://..." for scheme in adapter.machine_schemes)
            raise SettingsError(f"{adapter.name} runs on remote machines: give them with --machines {schemes},...")
        check_schemes(adapter.name, request.machines, adapter.machine_schemes)


def _slots(request: BenchRequest) -> int:
    """Environments at once: one per machine given, else --parallel."""
    return len(request.machines) or request.parallel


def _machines(adapter: Adapter, request: BenchRequest) -> MachineScope | None:
    if not request.machines or not isinstance(adapter, DrivesMachines):
        return None
    return MachineScope(len(request.machines), request.machine_reset is not None, adapter.machine_note)


def run_until_signalled(make: Callable[[], Awaitable[T]]) -> T:
    """asyncio.run(make()), with SIGTERM/SIGINT cancelling it (KeyboardInterrupt raised after cleanup)."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for number in STOP_SIGNALS:
            loop.add_signal_handler(number, task.cancel)
        try:
            return await make()
        finally:
            for number in STOP_SIGNALS:
                loop.remove_signal_handler(number)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        raise KeyboardInterrupt(signal.Signals.SIGTERM.name) from None
