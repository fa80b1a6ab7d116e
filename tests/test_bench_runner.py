"""The benchmark runner end to end: `symphony-mcp bench` as a real process, two environments (each its own
Xvfb and spawned server), the real orchestrator loop driven by a stand-in planner over real HTTP that
opens a real Tk editor on the environment's display, types and saves; a small real adapter scores the
saved file. The runner is killed mid-run with SIGKILL and rerun: only the unfinished tasks run again.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from rich.console import Console

from symphony_mcp.bench.command import run_bench
from symphony_mcp.bench.progress import ProgressObserver, progress_view
from symphony_mcp.bench.report import write_bench_report
from symphony_mcp.bench.request import BenchRequest
from symphony_mcp.bench.summary import SUMMARY_FILE, BenchSummary
from symphony_mcp.bench.types import (
    EVALUATION_FILE,
    SCORE_FILE,
    BenchTask,
    TaskEvaluation,
    TaskFilter,
)
from symphony_mcp.config import load_settings
from symphony_mcp.orchestrator.connection import serve_command
from testkit.chromium import QUIET_ARGS, chromium_executable
from testkit.file_tasks import ADAPTER, CRASH_VARIABLE, FILES_VARIABLE, TASKS, Planner
from testkit.model_server import StandInModel
from testkit.scripted_planner import MEMORYER, PLANNER, act
from testkit.server_process import base_env
from testkit.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = chromium_executable()


def bench(stand_in: StandInModel, results: Path, files: Path, *extra: str) -> subprocess.Popen[str]:
    env = base_env(
        PYTHONPATH=str(ROOT),
        SYMPHONY_OCR__WARM_UP="false",
        **{FILES_VARIABLE: str(files)},
    )
    command = [
        *serve_command(),
        "bench",
        "--adapter",
        ADAPTER,
        "--parallel",
        "2",
        "--results",
        str(results),
        "--max-steps",
        "6",
        "--no-reflection",
        "--reset",
        "--resolution",
        "1280x800",
        "--orchestrator-url",
        stand_in.url,
        "--orchestrator-model",
        PLANNER,
        "--memoryer-url",
        stand_in.url,
        "--memoryer-model",
        MEMORYER,
        *extra,
    ]
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(results: Path, task: str) -> Path | None:
    found = list(results.glob(f"files/*/{task}/{EVALUATION_FILE}"))
    return found[0] if found else None


def evaluation(results: Path, task: str) -> dict[str, Any]:
    path = finished(results, task)
    assert path is not None, f"{task} has no evaluation"
    return json.loads(path.read_text())


def wait_until(predicate: Callable[[], Any], process: subprocess.Popen[str], timeout: float) -> None:
    def ready() -> Any:
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"the runner exited with {process.returncode}:\n{out}\n{err[-3000:]}")
        return predicate()

    wait_for(ready, timeout=timeout)


def test_kill_and_resume_runs_only_unfinished_tasks(stand_in: StandInModel, tmp_path: Path) -> None:
    results, files = tmp_path / "results", tmp_path / "files"
    planner = Planner()
    planner.held = {"t3", "t4"}
    stand_in.script(default=planner)

    first = bench(stand_in, results, files)
    try:
        # t1 and t2 finish; t3 and t4 are then in flight on the two environments, waiting for the model
        wait_until(lambda: finished(results, "t1") and finished(results, "t2"), first, timeout=90)
        wait_until(lambda: {"t3", "t4"} <= set(planner.asked), first, timeout=60)
        displays = children(first.pid, "Xvfb")
        assert len(displays) == 2
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.communicate()
    wait_for(lambda: not any(alive(pid) for pid in displays), timeout=10)  # tied to the runner: gone with it
    assert finished(results, "t3") is None and finished(results, "t4") is None
    kept = {task: finished(results, task).stat().st_mtime_ns for task in ("t1", "t2")}  # type: ignore[union-attr]

    planner.held = set()
    planner.asked.clear()
    second = bench(stand_in, results, files)
    out, err = second.communicate(timeout=150)
    assert second.returncode == 0, err[-3000:]

    assert set(planner.asked) == {"t3", "t4", "t5", "t6"}  # never t1 or t2 again
    assert {task: finished(results, task).stat().st_mtime_ns for task in kept} == kept  # type: ignore[union-attr]
    for task in TASKS:
        record = evaluation(results, task)
        assert record["score"] == 1.0, record
        assert record["failure"] is None and record["outcome"] == "unverified"
        assert record["steps"] == 4 and record["tokens"]["orchestrator"] > 0
        folder = finished(results, task).parent  # type: ignore[union-attr]
        assert (folder / SCORE_FILE).read_text().strip() == "1.0"
        assert (folder / "run.json").exists() and (folder / "traj.jsonl").exists()
    t3 = finished(results, "t3").parent  # type: ignore[union-attr]
    assert list(t3.parent.glob("t3.attempt-*")), "the killed attempt is set aside, not deleted"
    environments = {evaluation(results, task)["environment"] for task in TASKS}
    assert environments == {"env-0", "env-1"}

    broken = evaluation(results, "t-broken")
    assert broken["failure"] == "setup_error" and "fixture file is missing" in broken["message"]
    assert broken["score"] == 0.0 and broken["steps"] == 0

    summary = BenchSummary.model_validate_json((results / "files" / SUMMARY_FILE).read_text())
    assert summary.overall.finished == 7 and summary.overall.successes == 6
    assert summary.overall.failures == {"setup_error": 1}
    assert summary.ran_now == 5
    assert [(s.task_id, s.reason) for s in summary.skipped] == [("t-online", "needs the network")]
    assert {d.domain: (d.successes, d.finished) for d in summary.domains} == {"notes": (3, 3), "memos": (3, 4)}
    assert summary.tokens["orchestrator"] > 0
    # The figures say what they cover: the benchmark's tasks this machine runs, never the benchmark's score.
    scope = "Files local: 7 of 8 tasks, 0 infeasible (the selected tasks this machine can run; not Files's score)"
    assert summary.scope == scope and f"{scope}: 6/7 succeeded" in out
    page = Path(out.strip().splitlines()[-1])
    assert page == results / "files" / "report" / "index.html"
    page.unlink()
    rewritten = subprocess.run(
        [*serve_command(), "report", str(results)], env=base_env(), capture_output=True, text=True, timeout=60
    )  # the results root: each benchmark folder in it gets its page
    assert rewritten.returncode == 0 and rewritten.stdout.split() == [str(page)], rewritten.stderr
    check_report(page)


def check_report(page: Path) -> None:
    """In real Chromium: every task in the table with a link that opens its trajectory page, the skipped one
    with its reason, the domain table."""
    assert CHROMIUM is not None, "Chromium is needed (scripts/install.sh --dev installs it)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(QUIET_ARGS))
        try:
            view = browser.new_page()
            view.goto(page.as_uri())
            assert (view.locator("#scope").text_content() or "").startswith("Files local: 7 of 8 tasks, 0 infeasible")
            rows = view.locator("#tasks tr.task")
            assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.task)")) == sorted([*TASKS, "t-broken"])
            assert "setup_error" in (view.locator("#tasks tr[data-task=t-broken]").text_content() or "")
            skipped = view.locator("#skipped tr.skipped")
            assert skipped.count() == 1 and "needs the network" in skipped.inner_text()
            assert view.locator("#domains tr[data-domain=memos]").inner_text().split("\t")[1:3] == ["4", "3"]
            links = view.locator("#tasks a.task-link").evaluate_all("as => as.map(a => a.href)")
            assert len(links) == len(TASKS)  # t-broken never ran: no trajectory to link to
            for link in links:
                view.goto(link)
                assert view.locator("h1").count() == 1 and view.title(), link
            view.goto(links[2])
            assert view.locator("img").count() > 0  # the trajectory's screenshots load from the domain folder
            assert view.locator("img").first.evaluate("i => i.naturalWidth") == 1280
        finally:
            browser.close()


def children(pid: int, name: str) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid), "-x", name], capture_output=True, text=True, check=False)
    return [int(line) for line in found.stdout.split()]


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_sigterm_stops_in_flight_tasks_and_the_displays(stand_in: StandInModel, tmp_path: Path) -> None:
    """SIGTERM mid-run: the runner stops its servers and displays, exits 130, and leaves the tasks in flight
    unfinished (no evaluation) so the next run runs them."""
    results, files = tmp_path / "results", tmp_path / "files"
    planner = Planner()
    planner.held = {"t1", "t2"}
    stand_in.script(default=planner)
    runner = bench(stand_in, results, files, "--tasks", "t1,t2,t3")
    try:
        wait_until(lambda: {"t1", "t2"} <= set(planner.asked), runner, timeout=60)
        displays = children(runner.pid, "Xvfb")
        servers = children(runner.pid, "symphony-mcp")
        assert len(displays) == 2 and len(servers) == 2
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=30)
    finally:
        runner.kill()
    assert runner.returncode == 130, err[-3000:]
    assert "stopped; unfinished tasks run again next time" in err
    assert not any(alive(pid) for pid in [*displays, *servers])
    assert not list(results.glob(f"files/*/*/{EVALUATION_FILE}"))
    assert {p.name for p in results.glob("files/*/*")} == {"t1", "t2"}  # started, unfinished


def test_list_names_skipped_tasks_and_unknown_benchmarks_fail_clearly(tmp_path: Path) -> None:
    env = base_env(PYTHONPATH=str(ROOT), **{FILES_VARIABLE: str(tmp_path)})
    listing = subprocess.run(
        [*serve_command(), "bench", "list", "--adapter", ADAPTER, "--domains", "notes"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines() == [
        "notes/t1",
        "notes/t-online  SKIPPED: needs the network",
        "notes/t3",
        "notes/t5",
        "# 3 of 4 selected tasks runnable here, 0 of them infeasible",
    ]
    unknown = subprocess.run([*serve_command(), "bench", "nosuch"], env=env, capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "unknown benchmark 'nosuch'" in unknown.stderr  # usage
    assert "miniwob" in unknown.stderr

    (tmp_path / "needs_more.py").write_text("import symphony_test_missing_dependency\n")
    env["PYTHONPATH"] = f"{ROOT}:{tmp_path}"
    for spec, message, status in (  # 3: something to install; 2: the command line is wrong
        ("needs_more:Adapter", "cannot import needs_more (symphony_test_missing_dependency is missing)", 3),
        ("json:no_such_factory", "json has no callable 'no_such_factory'", 2),
        ("no_such_module:Adapter", "no module no_such_module in this installation", 3),
        ("no-colon", "--adapter must look like package.module:Factory", 2),
        (f"{ADAPTER} --parallel 0", "--parallel must be at least 1", 2),
        (f"{ADAPTER} --ray-address auto", "--ray-address needs --backend ray", 2),
    ):
        failed = subprocess.run(
            [*serve_command(), "bench", "--adapter", *spec.split()], env=env, capture_output=True, text=True, timeout=60
        )
        assert failed.returncode == status and message in failed.stderr, (spec, failed.stderr)


@pytest.mark.timeout(300)
def test_ray_backend_gives_the_same_results_layout(
    stand_in: StandInModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local Ray cluster of 2 CPUs started here (its state in a temporary folder and HOME, auth off, so
    nothing is left behind): one actor per environment, the same folders, evaluations and summary.

    The work is long by nature: Ray's own processes (GCS, raylet, dashboard, agents, monitors: 7, 5 of them
    Python), an actor worker and a desktop per environment, then 3 tasks. Beside other tests and two busy loops
    (load average 15) it took 31 s to start Ray, 116 s to set up the actors and 32 s for the tasks, past the
    suite's 120 s. So the actors load a light adapter module (testkit/file_tasks.py, not a test module), and the
    settings reach them as inherited environment: a runtime_env made Ray start two more workers for the actors
    beside the two it prestarts for num_cpus=2."""
    ray = pytest.importorskip("ray", reason="the Ray backend needs ray: pip install -e '.[dev]' installs it")
    results, files, home = tmp_path / "results", tmp_path / "files", tmp_path / "home"
    home.mkdir()
    variables = {
        "HOME": str(home),
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": str(ROOT),
        "SYMPHONY_OCR__WARM_UP": "false",
        FILES_VARIABLE: str(files),
        CRASH_VARIABLE: "1",
    }
    for name, value in variables.items():  # the raylet inherits them, and its workers from it
        monkeypatch.setenv(name, value)
    stand_in.script(default=Planner())
    settings = load_settings(
        models={
            "orchestrator": {"base_url": stand_in.url, "model": PLANNER},
            "memoryer": {"base_url": stand_in.url, "model": MEMORYER},
        },
        orchestrator={"results_dir": str(results), "max_steps": 6, "reflection": False, "reset": True},
        display={"resolution": "1280x800"},
    )
    selection = TaskFilter(task_ids=("t-crash", "t1", "t2", "t3", "t-online", "t-broken"))
    request = BenchRequest(ADAPTER, selection, parallel=2, backend="ray", quiet=True)
    ray_temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=ray_temp,
        )
        summary, path = run_bench(request, settings, Console(file=io.StringIO()))
        workers = list(Path(ray_temp).glob("session_latest/logs/worker-*.out"))
    finally:
        ray.shutdown()
        shutil.rmtree(ray_temp, ignore_errors=True)

    assert len(workers) == 2, f"Ray started workers beyond the two it prestarts: {[w.name for w in workers]}"

    assert path == results / "files" / SUMMARY_FILE
    for task in ("t1", "t2", "t3"):
        record = evaluation(results, task)
        assert record["score"] == 1.0 and record["failure"] is None, record
        folder = finished(results, task).parent  # type: ignore[union-attr]
        assert folder.parent.parent == results / "files"
        assert {"run.json", "traj.jsonl", SCORE_FILE, EVALUATION_FILE, "step_1.png"} <= {
            p.name for p in folder.iterdir()
        }
    assert evaluation(results, "t-broken")["failure"] == "setup_error"
    assert finished(results, "t-crash") is None  # its actor died with it: left for the next run
    assert summary.not_run == ["memos/t-crash"]
    assert (summary.overall.finished, summary.overall.successes, summary.ran_now) == (4, 3, 4)
    assert [s.task_id for s in summary.skipped] == ["t-online"]
    assert not (home / ".ray").exists(), "Ray left its auth token in HOME"


def test_the_benchmark_verdict_is_the_one_shown(
    stand_in: StandInModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20: a done() that the benchmark scored 0 showed a green SUCCESS on its task page, and the progress
    line read `(scored_zero: )`; the benchmark's reason reached neither summary.json nor the report."""
    results, files = tmp_path / "results", tmp_path / "files"
    monkeypatch.setenv(FILES_VARIABLE, str(files))
    monkeypatch.setenv("SYMPHONY_OCR__WARM_UP", "false")
    stand_in.script(default=lambda request: act("done()"))  # claims the task done without saving anything
    settings = load_settings(
        models={"orchestrator": {"base_url": stand_in.url, "model": PLANNER}},
        orchestrator={"results_dir": str(results), "max_steps": 3, "reflection": False},
        display={"resolution": "1280x800"},
    )
    screen = io.StringIO()
    request = BenchRequest(ADAPTER, TaskFilter(task_ids=("t1",)))
    summary, _ = run_bench(request, settings, Console(file=screen, width=200))
    reason = "t1.txt holds None"
    [row] = summary.tasks
    assert (row.score, row.outcome, row.failure, row.message) == (0.0, "unverified", "scored_zero", reason)
    assert evaluation(results, "t1")["message"] == reason
    assert f"score 0 (scored_zero: {reason})" in screen.getvalue()

    page = write_bench_report(results / "files")
    assert reason in page.read_text(encoding="utf-8")
    task_page = results / "files" / "notes" / "report" / "t1.html"
    html = task_page.read_text(encoding="utf-8")
    assert 'class="outcome outcome-fail" id="outcome">fail</span>' in html
    assert f"benchmark score 0 (scored_zero): {reason}" in html and "the agent said unverified" in html


def test_live_view_shows_progress_per_environment_and_an_eta() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    with progress_view(console, 3, ["env-0", "env-1"], quiet=False) as observer:
        observer.started("env-0", BenchTask("files", "notes", "t1"))
        observer.started("env-1", BenchTask("files", "memos", "t2"))
        assert isinstance(observer, ProgressObserver)
        assert observer.progress.eta_seconds() is None
        frame = io.StringIO()
        Console(file=frame, width=120).print(observer.progress)
        assert "0/3 done" in frame.getvalue() and "notes/t1" in frame.getvalue() and "memos/t2" in frame.getvalue()
        observer.finished(
            TaskEvaluation(
                benchmark="files", domain="notes", task_id="t1", instruction="", score=1.0, environment="env-0"
            )
        )
        assert observer.progress.eta_seconds() is not None
        frame = io.StringIO()
        Console(file=frame, width=120).print(observer.progress)
        assert "1/3 done · success 1/1 (100%)" in frame.getvalue() and "notes/t1" not in frame.getvalue()
    assert "[env-0] notes/t1 score 1" in screen.getvalue()
    quiet = io.StringIO()
    with progress_view(Console(file=quiet), 1, ["env-0"], quiet=True) as observer:
        observer.finished(
            TaskEvaluation(
                benchmark="files", domain="notes", task_id="t1", instruction="", score=1.0, environment="env-0"
            )
        )
    assert quiet.getvalue() == ""
