"""The bundled orchestrator end to end: a real editor window under Xvfb, a real spawned server, and
stand-in planner and memoryer models over real HTTP whose answers are scripted per step."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from symphony_mcp.config import load_settings
from symphony_mcp.memory.layout import TRAJECTORY_FILE
from symphony_mcp.memory.trajectory import read_trajectory
from symphony_mcp.orchestrator.api import run_task
from symphony_mcp.orchestrator.checker import CommandChecker
from symphony_mcp.orchestrator.connection import InMemoryServer, RemoteServer
from symphony_mcp.orchestrator.records import RunRecord, State
from symphony_mcp.orchestrator.report import write_report
from symphony_mcp.server import build_server
from testkit.model_server import ModelRequest, Reply, StandInModel
from testkit.paths import APPS
from testkit.ports import free_port
from testkit.scripted_planner import PLANNER, Script, act, on_track, settings_for
from testkit.server_process import base_env, serve_command
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio


def editor(out: Path) -> str:
    return f"{sys.executable} {APPS / 'tk_editor.py'} {out}"


async def test_editor_task_completes_through_format_retry_reflection_and_checker(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    out = tmp_path / "note.txt"
    text = "hello symphony"

    def audit(request: ModelRequest) -> str:
        if any("Latest step 2:" in t for t in request.texts()):  # after the premature save
            return json.dumps(
                {
                    "status": "Off-track",
                    "error_type": "gui_operation_error",
                    "reflection": "The file was saved while still empty.",
                    "is_milestone": False,
                    "new_facts": [],
                }
            )
        return on_track()

    script = Script(
        {
            1: ["I will open the editor now.", act(f"open_app(target={editor(out)!r}, wait_seconds=30)")],
            2: [act('hotkey(keys=["ctrl", "s"])', "Save (too early).")],
            3: [act("done()", "It looks done.")],
            4: [act(f"type(text={text!r})")],
            5: [act('agent.hotkey(keys=["ctrl", "s"])')],
            6: [act("done()")],
        },
        audit,
    )
    stand_in.script(default=script)
    settings = settings_for(stand_in, tmp_path / "results", max_steps=8, reset=True)
    checker = CommandChecker(f"test \"$(cat {out})\" = '{text}'")
    events: list[Any] = []
    outcome = await run_task(
        "Open the editor, type 'hello symphony' and save it",
        settings=settings,
        task_id="editor",
        checker=checker,
        on_event=events.append,
    )

    assert outcome.outcome == "success", outcome.record.message
    assert out.read_text() == text
    record = outcome.record
    assert len(record.steps) == 6
    assert len(record.steps[0].rejected_outputs) == 1  # the answer without an action was re-asked
    assert "no action found" in script.planner_requests[1].messages[-1]["content"]
    assert record.steps[2].reflection is not None and record.steps[2].reflection.status == "Off-track"
    step3 = script.planner_requests[3].texts()[-2]
    assert "Off-track (gui_operation_error)" in step3 and "did not have its effect" in step3
    assert record.steps[2].verification and "exited with status 1" in record.steps[2].verification
    assert "the task checker says it is not complete" in script.planner_requests[4].texts()[-2]
    states = [t.target for t in record.transitions]
    assert states.count(State.VERIFY) == 2 and states[-2:] == [State.SUCCESS, State.RESET]
    assert {e.state for e in events} >= {State.OBSERVE, State.PLAN, State.EXECUTE, State.VERIFY, State.SUCCESS}
    # Results on disk: the server's trajectory with the planner's thoughts, run.json, result.txt.
    steps = read_trajectory(outcome.directory)
    assert [s.action for s in steps] == ["open", "hotkey", "type", "hotkey"]
    assert [r.trajectory_step for r in record.steps] == [1, 2, None, 3, 4, None]
    assert steps[2].plan == "Do the next thing." and steps[0].thought and "(Screenshot analysis)" in steps[0].thought
    assert "(Grounded action)" not in steps[0].thought and "```" not in steps[0].thought  # the action is recorded
    assert (outcome.directory / "result.txt").read_text().strip() == "1.0"
    saved = RunRecord.model_validate_json((outcome.directory / "run.json").read_text())
    assert saved.outcome == "success" and saved.usage["orchestrator"].calls == 7
    assert saved.usage["memoryer"].calls >= 5
    assert all(s.timings.overhead_ms > 0 for s in saved.steps)
    # The report of the real run lists every step (tests/test_report.py opens reports in Chromium).
    index = write_report(tmp_path / "results")
    page = (index.parent / "editor.html").read_text(encoding="utf-8")
    assert all(f'id="step-{n}"' in page for n in range(1, 7))
    # Reset closed the editor the task opened.
    windows = subprocess.run(["xprop", "-root", "_NET_CLIENT_LIST"], capture_output=True, text=True).stdout
    assert "Symphony Editor" not in _window_titles(windows)


def _window_titles(client_list: str) -> str:
    ids = re.findall(r"0x[0-9a-f]+", client_list)
    return " ".join(
        subprocess.run(["xprop", "-id", wid, "WM_NAME"], capture_output=True, text=True).stdout for wid in ids
    )


async def test_last_step_allows_only_done_or_fail(xdisplay: Any, stand_in: StandInModel, tmp_path: Path) -> None:
    script = Script({1: [act("wait(seconds=0)")], 2: [act("wait(seconds=0)"), act('fail(reason="out of steps")')]})
    stand_in.script(default=script)
    settings = settings_for(stand_in, tmp_path / "results", max_steps=2, reflection=False)
    server = build_server(load_settings(memory={"trajectory_dir": str(tmp_path / "results")}))
    try:
        outcome = await run_task("Wait twice", settings=settings, task_id="last", connection=InMemoryServer(server.mcp))
    finally:
        server.close()
    assert outcome.outcome == "fail" and outcome.record.message == "out of steps"
    final = script.planner_requests[1]
    assert "This is the last step" in final.texts()[-2]
    system_prompt = final.messages[0]["content"]
    assert "done()" in system_prompt and "wait(" not in system_prompt  # only done and fail are offered
    assert "only done() or fail(reason) are allowed" in script.planner_requests[2].messages[-1]["content"]
    assert (outcome.directory / "result.txt").read_text().strip() == "0.0"


async def test_the_planner_is_offered_only_what_the_server_can_run(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    """Issue 20: call_code_agent, call_search_agent and click(description=...) were offered without their models,
    and a run's first step failed on exactly that."""
    endpoint = {"base_url": stand_in.url, "model": "stand-in-tools"}
    every_tool_model = {"grounder": endpoint, "coder": endpoint, "searcher": endpoint}
    for offered, server_models in ((False, {}), (True, every_tool_model)):
        script = Script({1: [act("done()")]})
        stand_in.script(default=script)
        results = tmp_path / f"results-{offered}"
        settings = settings_for(stand_in, results, reflection=False)
        server = build_server(load_settings(models=server_models, memory={"trajectory_dir": str(results)}))
        try:
            await run_task("Finish", settings=settings, task_id="offer", connection=InMemoryServer(server.mcp))
        finally:
            server.close()
        prompt = script.planner_requests[0].messages[0]["content"]
        for text in ("call_code_agent(", "call_search_agent(", "click(description", "a grounding model finds them"):
            assert (text in prompt) is offered, (text, offered)
        assert "click(x: float | None = None" in prompt or offered
        assert "wait(" in prompt and "type(text" in prompt


async def test_done_without_a_checker_is_unverified_and_never_counted_as_a_success(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    """Issue 20: without --checker the planner's done() was reported as SUCCESS and counted in the success rate."""
    stand_in.script(default=Script({1: [act("done()")]}))
    results = tmp_path / "results"
    settings = settings_for(stand_in, results, reflection=False)
    server = build_server(load_settings(memory={"trajectory_dir": str(results)}))
    try:
        outcome = await run_task("Finish", settings=settings, task_id="claimed", connection=InMemoryServer(server.mcp))
    finally:
        server.close()
    assert outcome.outcome == "unverified" and not outcome.success
    assert "no checker verified it" in (outcome.record.message or "")
    saved = RunRecord.model_validate_json((outcome.directory / "run.json").read_text(encoding="utf-8"))
    assert saved.outcome == "unverified"
    assert (outcome.directory / "result.txt").read_text().strip() == "0.0"
    html = write_report(results).read_text(encoding="utf-8")
    assert 'data-outcome="unverified"' in html and "0 of 1 finished tasks" in html
    assert 'outcome-unverified">unverified</span> 1' in html


async def test_unreachable_planner_is_an_error(xdisplay: Any, stand_in: StandInModel, tmp_path: Path) -> None:
    settings = load_settings(
        models={"orchestrator": {"base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "x", "max_retries": 0}},
        orchestrator={"results_dir": str(tmp_path / "results")},
    )
    server = build_server(load_settings(memory={"trajectory_dir": str(tmp_path / "results")}))
    try:
        outcome = await run_task("Anything", settings=settings, task_id="down", connection=InMemoryServer(server.mcp))
    finally:
        server.close()
    assert outcome.outcome == "error" and "cannot reach the endpoint" in (outcome.record.message or "")
    assert outcome.record.transitions[-1].target == State.ERROR
    assert (outcome.directory / "result.txt").read_text().strip() == "0.0"


async def test_a_task_past_its_time_bound_ends_as_an_error_and_is_closed(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    stand_in.script(default=lambda request: Reply(act("move_pointer(x=5, y=5)"), delay=0.8))  # a slow planner
    settings = settings_for(stand_in, tmp_path / "results", task_timeout_seconds=2, reflection=False, max_steps=50)
    server = build_server(load_settings(memory={"trajectory_dir": str(tmp_path / "results")}))
    try:
        outcome = await run_task("Anything", settings=settings, task_id="slow", connection=InMemoryServer(server.mcp))
        tasks = server.tasks.list()
    finally:
        server.close()
    assert outcome.outcome == "error" and outcome.record.message == "the task took longer than its bound of 2 s"
    assert outcome.record.transitions[-1].target == State.ERROR and 1 <= len(outcome.record.steps) < 50
    assert [(t.task_id, t.status) for t in tasks] == [("slow", "fail")]  # closed on the server, not left running


async def test_cli_run_is_killed_then_resumes_then_skips(xdisplay: Any, stand_in: StandInModel, tmp_path: Path) -> None:
    results = tmp_path / "results"
    steps = {n: [act("wait(seconds=0.5)")] for n in range(1, 4)}
    stand_in.script(default=Script({**steps, 4: [act("done()")]}))
    command, *prefix = serve_command()
    env = base_env(
        DISPLAY=xdisplay.name,
        SYMPHONY_MODELS__ORCHESTRATOR__BASE_URL=stand_in.url,
        SYMPHONY_MODELS__ORCHESTRATOR__MODEL=PLANNER,
    )
    argv = [command, *prefix, "run", "Wait a little, then finish", "--task-id", "resumable", "--results", str(results)]
    argv += ["--no-reflection", "--max-steps", "5"]
    first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    trajectory = results / "resumable" / TRAJECTORY_FILE
    wait_for(lambda: trajectory.exists() and len(trajectory.read_bytes().splitlines()) >= 2, timeout=60)
    os.killpg(first.pid, signal.SIGKILL)  # the client and the server it spawned
    first.wait(timeout=10)
    assert not (results / "resumable" / "result.txt").exists()

    stand_in.script(default=Script({**{n: [act("wait(seconds=0)")] for n in range(1, 3)}, 3: [act("done()")]}))
    second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("unverified resumable")  # done() without --checker
    attempts = [p.name for p in results.iterdir() if p.name.startswith("resumable.attempt-")]
    assert len(attempts) == 1  # the killed attempt was kept aside, not deleted
    assert len(read_trajectory(results / attempts[0])) >= 2
    assert len(read_trajectory(results / "resumable")) == 2

    third = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert third.returncode == 0 and "finished earlier" in third.stdout


async def test_remote_server_by_url_and_token_with_the_trajectory_mirrored(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    from testkit.http_server import http_server

    stand_in.script(default=Script({1: [act("wait(seconds=0)")], 2: [act("done()")]}))
    settings = settings_for(stand_in, tmp_path / "results", reflection=False)
    server_side = tmp_path / "server-trajectories"
    async with http_server("--token", "t0ken", "--trajectory-dir", str(server_side), display=xdisplay.name) as url:
        outcome = await run_task(
            "Wait, then finish", settings=settings, task_id="remote", connection=RemoteServer(url, "t0ken")
        )
    assert outcome.outcome == "unverified"  # done() with no checker: never counted as a success
    assert [s.action for s in outcome.trajectory] == ["wait"]
    assert (server_side / "remote" / "traj.jsonl").exists()  # the server wrote its own copy
    for name in ("traj.jsonl", "step_0.png", "step_1.png", "run.json", "result.txt"):
        assert (outcome.directory / name).exists(), name


async def test_native_function_calling(xdisplay: Any, stand_in: StandInModel, tmp_path: Path) -> None:
    note = "(Next action)\nWait for the window."
    script = Script(
        {
            1: [Reply(text=note, tool_calls=[("wait", {"seconds": 0})])],
            2: [
                Reply(tool_calls=[("wait", {"seconds": "soon"})]),
                Reply(text="(Next action)\nFinish.", tool_calls=[("done", {})]),
            ],
        }
    )
    stand_in.script(default=script)
    settings = settings_for(stand_in, tmp_path / "results", reflection=False, function_calling=True)
    server = build_server(load_settings(memory={"trajectory_dir": str(tmp_path / "results")}))
    try:
        outcome = await run_task(
            "Wait, then finish", settings=settings, task_id="fc", connection=InMemoryServer(server.mcp)
        )
    finally:
        server.close()
    assert outcome.outcome == "unverified"  # done() with no checker: never counted as a success
    first = script.planner_requests[0].body
    names = [t["function"]["name"] for t in first["tools"]]
    assert {"click", "type", "wait", "done", "fail"} <= set(names) and first["tool_choice"] == "required"
    assert "wait" not in script.planner_requests[0].messages[0]["content"].split("Actions:")[0]
    assert "invalid arguments for wait(): seconds" in script.planner_requests[2].messages[-1]["content"]
    assert outcome.record.steps[0].action is not None and outcome.record.steps[0].action.code == "wait(seconds=0)"
    assert outcome.record.steps[0].plan == "Wait for the window."
    assert outcome.trajectory[0].plan == "Wait for the window."
