"""Texts from models, tasks and pages are printed as data, never read as rich markup (issue 20, item 6)."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from symphony_mcp.bench.progress import progress_view
from symphony_mcp.bench.types import BenchTask
from symphony_mcp.orchestrator.live import live_view
from symphony_mcp.orchestrator.loop import RunEvent
from symphony_mcp.orchestrator.records import State
from testkit.model_server import StandInModel
from testkit.scripted_planner import PLANNER, Script, act
from testkit.server_process import base_env, serve_command

MARKUP = '[/bold] hi [red]not red[/red] [link=x]'


@pytest.mark.parametrize("terminal", [False, True])
def test_live_view_prints_task_ids_and_model_text_literally(terminal: bool) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=terminal, width=200)  # markup on: the views must not depend on it
    with live_view(console) as sink:
        sink(RunEvent("[probe-plain]", 1, 5, State.OBSERVE, message="screenshot taken"))
        sink(RunEvent("[probe-plain]", 1, 5, State.EXECUTE, message=f'type(text="{MARKUP}")'))
    printed = screen.getvalue()
    assert "[probe-plain]" in printed and MARKUP in printed
    assert "[]Observe" not in printed and "Observe" in printed


def test_bench_view_shows_idle_and_task_ids_literally() -> None:
    frame = io.StringIO()
    with progress_view(Console(file=io.StringIO()), 2, ["env-0", "env-1"], quiet=True) as observer:
        observer.started("env-0", BenchTask("files", "[notes]", "[t1]"))
        Console(file=frame, width=120).print(observer.progress)  # type: ignore[attr-defined]
    assert "[notes]/[t1]" in frame.getvalue()
    assert "idle" in frame.getvalue() and "[dim]" not in frame.getvalue()


def test_cli_run_survives_markup_in_the_planner_answer(xdisplay: Any, stand_in: StandInModel, tmp_path: Path) -> None:
    """Without a terminal this crashed with rich.errors.MarkupError, exit 1, no run.json."""
    results = tmp_path / "results"
    stand_in.script(default=Script({1: [act(f'type(text="{MARKUP}")')], 2: [act("done()")]}))
    command, *prefix = serve_command()
    env = base_env(
        DISPLAY=xdisplay.name,
        SYMPHONY_MODELS__ORCHESTRATOR__BASE_URL=stand_in.url,
        SYMPHONY_MODELS__ORCHESTRATOR__MODEL=PLANNER,
    )
    argv = [command, *prefix, "run", "Type it", "--task-id", "probe-plain", "--results", str(results)]
    done = subprocess.run([*argv, "--no-reflection", "--max-steps", "3"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "MarkupError" not in done.stderr and "[probe-plain] step 1/3" in done.stderr
    assert MARKUP in done.stderr
    assert (results / "probe-plain" / "run.json").exists()
