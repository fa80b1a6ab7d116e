"""MiniWoB++ end to end: its task pages in a real kiosk Chromium on an Xvfb display, seeded episodes, the reward
read from the page. The smoke policy (testkit/miniwob_smoke.py, a stand-in planner over real HTTP) solves three
tasks through the real runner, orchestrator loop and spawned server, acting on screen with OCR clicks and typing;
its scripted wrong click scores 0 by the page's own reward."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import mss
import pytest
from rich.console import Console

from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.miniwob import DEFAULT_SUBSET, MiniWobAdapter
from symphony_mcp.bench.miniwob.adapter import PROFILE_DIR
from symphony_mcp.bench.miniwob.tasks import html_directory
from symphony_mcp.bench.miniwob.window import TaskWindowError, fitted_zoom, processes_of
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.types import EVALUATION_FILE, Environment, TaskFilter
from symphony_mcp.config import DisplaySettings, load_settings
from symphony_mcp.desktop.virtual_display import start_virtual_display
from symphony_mcp.orchestrator.connection import SpawnServer, serve_command
from testkit.miniwob_elements import elements_planner
from testkit.miniwob_smoke import FAILED, SOLVED, smoke_planner
from testkit.model_server import StandInModel
from testkit.processes import descendants

MINIWOB = "symphony_mcp.bench.miniwob:MiniWobAdapter"
ELEMENTS_SEED = int(os.environ.get("SYMPHONY_MINIWOB_SEED", "0"))  # the element-id client's episode seed


def test_task_list_default_subset_seeds_and_ids() -> None:
    adapter = MiniWobAdapter(seeds=2)
    default = adapter.list_tasks(TaskFilter())
    assert [t.task_id for t in default[:3]] == ["click-button.seed-0", "click-button.seed-1", "click-link.seed-0"]
    assert len(default) == 2 * len(DEFAULT_SUBSET) == 24
    assert all(t.benchmark == "miniwob" and t.instruction is None and t.skip_reason is None for t in default)
    assert {t.domain for t in default} == {"click", "choose", "enter", "focus", "login", "navigate"}
    everything = MiniWobAdapter().list_tasks(TaskFilter(everything=True))
    assert len(everything) == len(list(html_directory().glob("*.html"))) == 130
    enter = MiniWobAdapter().list_tasks(TaskFilter(domains=("enter",)))
    assert {t.data["task"] for t in enter} >= {"enter-text", "enter-password", "enter-date", "enter-time"}
    assert all(t.domain == "enter" for t in enter)
    by_id = adapter.list_tasks(TaskFilter(task_ids=("login-user.seed-17",)))
    assert [(t.task_id, t.data) for t in by_id] == [("login-user.seed-17", {"task": "login-user", "seed": 17})]
    with pytest.raises(ValueError, match="unknown MiniWoB\\+\\+ tasks \\['click-nothing'\\]"):
        adapter.list_tasks(TaskFilter(task_ids=("click-nothing.seed-0",)))
    with pytest.raises(ValueError, match=r"use <task>\.seed-<n>"):
        adapter.list_tasks(TaskFilter(task_ids=("click-button",)))
    with pytest.raises(ValueError, match="zoom must be between"):
        MiniWobAdapter(zoom=9)
    assert fitted_zoom(4, (1920, 1080)) == 4  # the page (325x210 CSS px) fits at 1300x840
    assert fitted_zoom(4, (1280, 800)) == 3.8  # 210 x 3.8 = 798 px high


def test_adapter_options_from_the_command_line() -> None:
    """`--option KEY=VALUE` reaches the factory (seeds=2: two episodes per task); a wrong key names the right ones."""
    bench = [*serve_command(), "bench", "list", "miniwob", "--domains", "enter"]
    listed = subprocess.run([*bench, "--option", "seeds=2"], capture_output=True, text=True, timeout=60)
    lines = [line for line in listed.stdout.splitlines() if not line.startswith("#")]  # "#": the counts
    assert listed.returncode == 0 and "enter/enter-text.seed-1" in lines and len(lines) == 2 * len(
        MiniWobAdapter().list_tasks(TaskFilter(domains=("enter",)))
    )
    wrong = subprocess.run([*bench, "--option", "seed=2"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "it takes: seeds, zoom, browser" in wrong.stderr
    shapeless = subprocess.run([*bench, "--option", "seeds"], capture_output=True, text=True, timeout=60)
    assert shapeless.returncode == 2 and "must look like KEY=VALUE" in shapeless.stderr


@pytest.mark.anyio
async def test_seeded_episodes_unfinished_and_closed_windows_score_zero(xdisplay: Any, tmp_path: Path) -> None:
    adapter = MiniWobAdapter()
    environment = Environment("env-test", xdisplay.name, tmp_path, SpawnServer())
    profile = tmp_path / PROFILE_DIR
    task = adapter.list_tasks(TaskFilter(task_ids=("click-button.seed-3",)))[0]
    try:
        await adapter.setup(environment)
        first = await adapter.reset(environment, task)
        assert first.startswith('Click on the "') and first.endswith('" button.')
        with mss.MSS(display=xdisplay.name) as screen:  # reset returns once the screen shows the started episode
            assert screen.grab({"left": 40, "top": 40, "width": 1, "height": 1}).pixel(0, 0) == (255, 255, 0)
        assert await adapter.reset(environment, task) == first  # the same seed, the same episode
        others = adapter.list_tasks(TaskFilter(task_ids=tuple(f"click-button.seed-{n}" for n in range(6))))
        assert len({await adapter.reset(environment, other) for other in others}) > 1

        await adapter.reset(environment, task)
        score = await adapter.evaluate(environment, task, None)  # type: ignore[arg-type]  # the outcome is unused
        assert (score.value, score.detail) == (0.0, "episode not finished (no reward from the page)")

        for pid in processes_of(profile):  # the window goes away under the agent (as if it closed Chromium)
            os.kill(pid, signal.SIGKILL)
        score = await adapter.evaluate(environment, task, None)  # type: ignore[arg-type]
        assert (score.value, score.detail) == (0.0, "the task window was closed")
        assert await adapter.reset(environment, task) == first  # reset starts a new window
        assert processes_of(profile)
    finally:
        await adapter.teardown(environment)
        await adapter.close()
    assert processes_of(profile) == []


@pytest.mark.anyio
async def test_a_display_without_window_manager_fails_at_once_naming_it(tmp_path: Path) -> None:
    """Before, the kiosk window's full-screen wait ran 30 s into a Playwright timeout that never named the manager."""
    display = start_virtual_display(DisplaySettings(resolution="1280x800", window_manager=""))
    adapter = MiniWobAdapter()
    environment = Environment("env-test", display.name, tmp_path, SpawnServer())
    try:
        with pytest.raises(TaskWindowError, match=f"display {display.name} has no window manager") as failure:
            await adapter.setup(environment)
        assert "apt-get install -y openbox" in str(failure.value)
        assert processes_of(tmp_path / PROFILE_DIR) == []  # nothing was started
    finally:
        await adapter.teardown(environment)
        await adapter.close()
        display.stop()


def test_smoke_policy_on_two_environments_solves_three_tasks_and_a_wrong_click_scores_zero(
    stand_in: StandInModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in.script(default=smoke_planner)
    results = tmp_path / "results"
    endpoint = {"base_url": stand_in.url, "model": "stand-in-planner", "backoff_seconds": 0.05, "max_retries": 1}
    settings = load_settings(
        models={"orchestrator": endpoint},
        orchestrator={"results_dir": str(results), "reflection": False, "max_steps": 6},
    )
    ids = tuple(f"{name}.seed-0" for name in (*SOLVED, FAILED))
    # The environments' folders (and Chromium's profiles in them) go under this test's own tmp_path, so the check
    # below finds this run's processes only, orphaned ones included, whatever else runs on the machine.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    drivers = {pid for pid, command in descendants().items() if "run-driver" in command}  # Playwright's driver

    summary, _ = run_bench(
        BenchRequest(MINIWOB, TaskFilter(task_ids=ids), parallel=2, quiet=True), settings, Console(file=io.StringIO())
    )

    evaluations = {
        path.parent.name: json.loads(path.read_text()) for path in (results / "miniwob").glob(f"*/*/{EVALUATION_FILE}")
    }
    assert sorted(evaluations) == sorted(ids)
    for name in SOLVED:
        record = evaluations[f"{name}.seed-0"]
        assert (record["score"], record["outcome"], record["failure"]) == (1.0, "unverified", None), record
        assert record["detail"].startswith("raw reward 1"), record
    wrong = evaluations[f"{FAILED}.seed-0"]
    assert (wrong["score"], wrong["outcome"], wrong["failure"]) == (0.0, "unverified", "scored_zero"), wrong
    assert wrong["detail"] == "raw reward -1", wrong
    assert evaluations["enter-text.seed-0"]["steps"] == 4  # tab, type, click Submit, done
    assert evaluations["click-test.seed-0"]["steps"] == 3  # the click on START after the episode left its reward
    assert {record["environment"] for record in evaluations.values()} == {"env-0", "env-1"}
    assert (summary.overall.finished, summary.overall.successes) == (4, 3)
    assert summary.overall.failures == {"scored_zero": 1}
    assert processes_named(f"{tmp_path}/") == []  # no Chromium (its profile is in an environment folder)
    assert {pid for pid, command in descendants().items() if "run-driver" in command} <= drivers


def processes_named(fragment: str) -> list[int]:
    """Live processes with `fragment` in their command line."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if fragment.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_model_free_client_acting_by_element_id_solves_the_default_subset(
    stand_in: StandInModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dual grounding through the runner: each step's planner request carries the numbered elements of Chromium's
    accessibility tree, and the scripted planner (testkit/miniwob_elements.py) answers with element ids only. Every
    task of the default subset (seed 0, or SYMPHONY_MINIWOB_SEED) scores 1 by the page's own reward."""
    answers: list[str] = []
    stand_in.script(default=lambda request: answers.append(elements_planner(request)) or answers[-1])
    results = tmp_path / "results"
    endpoint = {"base_url": stand_in.url, "model": "stand-in-planner", "backoff_seconds": 0.05, "max_retries": 1}
    settings = load_settings(
        models={"orchestrator": endpoint},
        orchestrator={"results_dir": str(results), "reflection": False, "max_steps": 10, "dual_grounding": True},
    )
    ids = tuple(f"{name}.seed-{ELEMENTS_SEED}" for name in DEFAULT_SUBSET)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    summary, _ = run_bench(
        BenchRequest(MINIWOB, TaskFilter(task_ids=ids), parallel=2, quiet=True), settings, Console(file=io.StringIO())
    )

    evaluations = {
        path.parent.name: json.loads(path.read_text()) for path in (results / "miniwob").glob(f"*/*/{EVALUATION_FILE}")
    }
    assert sorted(evaluations) == sorted(ids)
    unsolved = {task: (r["score"], r["detail"]) for task, r in evaluations.items() if r["score"] != 1.0}
    assert unsolved == {}, unsolved
    assert summary.overall.successes == len(DEFAULT_SUBSET)
    actions = [answer.split("```python\n")[1].split("\n```")[0] for answer in answers]
    assert all("element=" in a or a.startswith(("done(", "type(text=")) for a in actions), actions  # no coordinates
