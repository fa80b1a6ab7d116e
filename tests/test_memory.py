"""Trajectory memory and the Reflection-Memory Agent through the real MCP client, on a real Tk window.

Model calls go to the stand-in model server over real HTTP; it tells step checks from audits by
their system prompt and answers from a script.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS
from PIL import Image

from symphony_mcp.config import load_settings
from symphony_mcp.desktop.records import ActionRecord
from symphony_mcp.memory.layout import TRAJECTORY_FILE
from symphony_mcp.memory.milestones import MilestoneMemory
from symphony_mcp.memory.trajectory import TrajectoryStep, TrajectoryWriter, read_trajectory
from symphony_mcp.server import SymphonyServer, build_server
from testkit.mcp_calls import call_error, call_ok
from testkit.model_server import ModelRequest, Reply, StandInModel
from testkit.tk_probe import TkProbe

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def memory_server(
    tmp_path: Path, stand_in: StandInModel | None = None, **memory: Any
) -> AsyncIterator[tuple[Client, SymphonyServer]]:
    models = {}
    if stand_in is not None:
        models = {"memoryer": {"base_url": stand_in.url, "model": "stand-in-memoryer", "backoff_seconds": 0.05}}
    settings = load_settings(memory={"trajectory_dir": str(tmp_path / "runs"), **memory}, models=models)
    built = build_server(settings)
    try:
        async with Client(built.mcp) as client:
            yield client, built
    finally:
        built.close()


# The red and blue swatch screens measure SSIM 0.991 at the detector's print size: the swatch is 3% of
# the screen. That is on the default 0.99 threshold, so whether they count as the same screen came down
# to pHash, which missed the change when other windows were on screen. Loop tests on the swatch use a
# threshold halfway between it and identical screens (1.0), as a user would tune SYMPHONY_MEMORY__LOOP_MIN_SSIM.
SWATCH_SSIM = 0.995


def verdict(success: bool = True, summary: str = "The click hit the button.") -> str:
    return json.dumps({"success": success, "summary": summary})


def reflection(status: str = "On-track", error_type: str | None = None, milestone: bool = False, facts=()) -> str:
    return json.dumps(
        {
            "status": status,
            "error_type": error_type,
            "reflection": "The agent pressed the button and the window reacted.",
            "is_milestone": milestone,
            "new_facts": list(facts),
        }
    )


def by_role(
    check: Callable[[ModelRequest], str], audit: Callable[[ModelRequest], str]
) -> Callable[[ModelRequest], str]:
    """Answer step checks and audits (told apart by their system prompt) with separate scripts."""

    def reply(request: ModelRequest) -> str:
        prompt = request.messages[0]["content"]
        return check(request) if prompt.startswith("You check one step") else audit(request)

    return reply


async def test_actions_become_steps_on_disk_with_annotations(tk_probe: TkProbe, tmp_path: Path) -> None:
    async with memory_server(tmp_path) as (client, _):
        info = await call_ok(client, "start_task", instruction="Press the button, then type hello", task_id="t-1")
        assert info["active_here"] and info["status"] == "running"
        bx, by = tk_probe.centre("button")
        await call_ok(client, "click", x=bx, y=by, space="screen")
        ex, ey = tk_probe.centre("entry")
        await call_ok(client, "type", text="hello", x=ex, y=ey, space="screen")
        await call_ok(client, "hotkey", keys=["ctrl", "shift", "k"])
        await call_ok(client, "screenshot")  # an observation, not a step
        step = await call_ok(client, "record_step", thought="the shortcut should register", plan="finish")
        assert step["step_num"] == 3 and step["thought"] == "the shortcut should register"
        await call_ok(client, "record_step", step=1, thought="press it first")  # an older step: whole-file rewrite
        state = await call_ok(client, "memory_audit")
        assert state["steps"] == 3 and state["image_steps"] == [0] and state["unchecked_steps"] == [1, 2, 3]
        listed = await call_ok(client, "list_tasks")
        assert [t["task_id"] for t in listed["result"]] == ["t-1"] and listed["result"][0]["active_here"]
        # While the task runs, the resources read every answered step's line; a screenshot waits for its PNG.
        steps_json = await client.read_resource("trajectory://t-1/steps")
        shot = await client.read_resource("trajectory://t-1/steps/3/screenshot")
        ended = await call_ok(client, "end_task", status="success", note="done")
    assert ended["status"] == "success" and ended["steps"] == 3
    directory = tmp_path / "runs" / "t-1"
    steps = read_trajectory(directory)
    assert [s.action for s in steps] == ["click", "type", "hotkey"]
    assert steps[0].thought == "press it first" and steps[2].plan == "finish"
    assert steps[1].record.screen_points[0].x == ex
    for number in range(4):
        with Image.open(directory / f"step_{number}.png") as image:
            assert image.size == (1920, 1080)
    assert json.loads(steps_json.contents[0].text)[2]["thought"] == "the shortcut should register"  # type: ignore[union-attr]
    assert shot.contents[0].mime_type == "image/png"
    assert json.loads((directory / "task.json").read_text())["status"] == "success"
    assert tk_probe.state()["hotkeys"] == ["ctrl+shift+k"]


async def test_a_real_loop_is_detected_and_left(tk_probe: TkProbe, tmp_path: Path) -> None:
    sx, sy = tk_probe.centre("swatch")
    async with memory_server(tmp_path, loop_min_ssim=SWATCH_SSIM) as (client, _):
        await call_ok(client, "start_task", instruction="Make the swatch green")
        reports = []
        for _ in range(5):  # red -> blue -> red ...: the same clicks on the same two screens
            await call_ok(client, "click", x=sx, y=sy, space="screen")
            reports.append(await call_ok(client, "check_loop"))
        assert [r["detected"] for r in reports] == [False, False, False, False, True]
        assert reports[-1]["window"] == [3, 4, 5] and reports[-1]["earlier"] == [1, 2, 3]
        state = await call_ok(client, "memory_audit")
        assert state["loop"]["detected"]
        ex, ey = tk_probe.centre("entry")
        await call_ok(client, "type", text="green", x=ex, y=ey, space="screen")  # something new: out of the loop
        assert not (await call_ok(client, "check_loop"))["detected"]
        await call_ok(client, "end_task", status="fail")  # the writer has written every step once it returns
    steps = read_trajectory(Path(state["task"]["directory"]))
    assert [s.loop for s in steps] == [False, False, False, False, True, False]


async def test_different_clicks_on_the_same_screen_are_not_a_loop(tk_probe: TkProbe, tmp_path: Path) -> None:
    canvas = tk_probe.state()["widgets"]["canvas"]
    async with memory_server(tmp_path) as (client, _):
        await call_ok(client, "start_task", instruction="Click around the canvas")
        for i in range(8):  # the canvas does not change, but each click is >2% of the diagonal apart
            await call_ok(client, "click", x=canvas["left"] + 20 + 45 * i, y=canvas["top"] + 150, space="screen")
        assert not (await call_ok(client, "check_loop"))["detected"]


async def test_resource_uris_naming_no_task_or_step_are_invalid_params(tmp_path: Path) -> None:
    """A URI that names no task, a refused id or no step is the caller's mistake: JSON-RPC -32602 (invalid params,
    the SDK's resource not found), not -32603 (internal error), which clients take for the server's fault."""
    async with memory_server(tmp_path) as (client, _):
        for uri, said in (
            ("trajectory://nope/steps", "no task 'nope'"),
            ("trajectory://probe%0A/steps", "is not allowed"),
            ("trajectory://nope/steps/1/screenshot", "no task 'nope'"),
            ("trajectory://nope/steps/x/screenshot", "step must be a number"),
        ):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == INVALID_PARAMS, (uri, refused.value.error)
            assert said in refused.value.error.message


def test_milestone_budget_keeps_first_and_newest_milestones() -> None:
    memory = MilestoneMemory(budget=4)
    memory.keep_first(0)
    kept = []
    for step in range(1, 21):
        if step % 3 == 0:
            memory.add_milestone(step)
        kept.append(memory.image_steps())
    assert kept[2] == [0, 3] and kept[8] == [0, 3, 6, 9]
    assert kept[11] == [0, 6, 9, 12]  # full: the oldest milestone (3) goes, never the first image
    assert kept[-1] == [0, 12, 15, 18] and memory.evicted == [3, 6, 9]
    assert memory.add_facts(["File is report.odt", "file is REPORT.odt ", "Port 8080"]) == [
        "File is report.odt",
        "Port 8080",
    ]


async def test_reflect_checks_steps_and_audits_with_milestones_under_budget(
    tk_probe: TkProbe, stand_in: StandInModel, tmp_path: Path
) -> None:
    milestones = {2, 4, 5, 7, 8}
    audits = iter(reflection(milestone=n in milestones, facts=[f"fact {n}"]) for n in range(1, 9))
    stand_in.script(default=by_role(lambda _: verdict(), lambda _: next(audits)))
    canvas = tk_probe.state()["widgets"]["canvas"]
    async with memory_server(tmp_path, stand_in, image_budget=3) as (client, _):
        await call_ok(client, "start_task", instruction="Click eight places on the canvas")
        kept = []
        for i in range(8):  # different places, so no loop
            x, y = canvas["left"] + 20 + 45 * i, canvas["top"] + 150
            await call_ok(client, "click", x=x, y=y, space="screen")
            outcome = await call_ok(client, "reflect")
            assert outcome["reflection"]["status"] == "On-track" and len(outcome["checked"]) == 1
            kept.append((await call_ok(client, "memory_audit"))["image_steps"])
        state = await call_ok(client, "memory_audit")
    # Budget 3: the first screenshot plus the two newest milestones; a full memory still takes new ones.
    assert kept == [[0], [0, 2], [0, 2], [0, 2, 4], [0, 4, 5], [0, 4, 5], [0, 5, 7], [0, 7, 8]]
    assert state["evicted_milestones"] == [2, 4, 5] and state["facts"] == [f"fact {n}" for n in range(1, 9)]
    assert [s["step"] for s in state["summaries"]] == list(range(1, 9)) and state["unchecked_steps"] == []
    audit_request = stand_in.requests[-1]
    assert len(audit_request.images()) == 4  # three kept screenshots + the latest
    assert any("step 8 (ok)" in text for text in audit_request.texts())
    check_request = stand_in.requests[-2]
    assert len(check_request.images()) == 3  # before, zoomed crop, after
    assert check_request.images()[1].size == (960, 540)  # a quarter of 1920x1080, zoomed twice


async def test_malformed_answers_are_reasked_and_a_loop_overrides_the_audit(
    tk_probe: TkProbe, stand_in: StandInModel, tmp_path: Path
) -> None:
    sx, sy = tk_probe.centre("swatch")
    async with memory_server(tmp_path, stand_in, loop_min_ssim=SWATCH_SSIM) as (client, _):
        await call_ok(client, "start_task", instruction="Make the swatch green")
        for _ in range(5):
            await call_ok(client, "click", x=sx, y=sy, space="screen")
        checks = iter(["The step worked.", *[verdict(False, "The colour did not turn green.")] * 5])
        # the audit answers after 1.3 s, so the call's heartbeat reports between reflect's own two reports
        off_track = '{"status": "Off-track", "reflection": "wrong colour", "is_milestone": false}'
        audits = iter([Reply(off_track, delay=1.3), reflection()])
        stand_in.script(default=by_role(lambda _: next(checks), lambda _: next(audits)))
        progress: list[tuple[float, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, message))

        result = await client.call_tool("reflect", {}, progress_callback=on_progress)
        assert not result.is_error and result.structured_content is not None
        outcome = result.structured_content
    assert progress[0][1] == "checking steps and auditing the trajectory"
    assert progress[-1][1] == "Off-track"
    values = [v for v, _ in progress]  # one line with the heartbeat's: strictly increasing (MCP)
    assert values == sorted(set(values))
    assert len(outcome["checked"]) == 5 and not outcome["checked"][0]["success"]
    reflected = outcome["reflection"]
    assert (reflected["status"], reflected["error_type"]) == ("Off-track", "lack_of_tutorial")
    assert reflected["reflection"].startswith("loop: steps 3-5 repeat steps 1-3")
    assert any(h.startswith("Loop detected") for h in outcome["hints"])
    assert any("failed according to the step check" in h for h in outcome["hints"])
    # The malformed step check and the schema-violating audit were each asked again with the reason.
    feedback = [r.messages[-1]["content"] for r in stand_in.requests if len(r.messages) > 2]
    assert len(feedback) == 2
    assert "no JSON object found" in feedback[0] and "needs an error_type" in feedback[1]


async def test_reflect_errors_and_model_free_parts_without_a_memoryer(tk_probe: TkProbe, tmp_path: Path) -> None:
    async with memory_server(tmp_path) as (client, _):
        assert "start_task first" in await call_error(client, "memory_audit")
        await call_ok(client, "start_task", instruction="Anything", task_id="same")
        assert "act first" in await call_error(client, "reflect")
        bx, by = tk_probe.centre("button")
        await call_ok(client, "click", x=bx, y=by, space="screen")
        message = await call_error(client, "reflect")
        assert "SYMPHONY_MODELS__MEMORYER__BASE_URL" in message
        assert (await call_ok(client, "memory_audit"))["steps"] == 1
        assert "still running" in await call_error(client, "start_task", instruction="Another")
        assert "Input should be 'success', 'fail', 'infeasible' or 'abandoned'" in await call_error(
            client, "end_task", status="running"
        )
        await call_ok(client, "end_task", status="fail")
        assert "already exists" in await call_error(client, "start_task", instruction="Again", task_id="same")
        assert "should match pattern" in await call_error(client, "start_task", instruction="x", task_id="../escape")
        assert (await client.read_resource("trajectory://same/steps")).contents
        with pytest.raises(MCPError, match="list_tasks shows the ids"):
            await client.read_resource("trajectory://missing/steps")
        with pytest.raises(MCPError, match="has no screenshot for step 9"):
            await client.read_resource("trajectory://same/steps/9/screenshot")


async def test_two_malformed_audits_are_reported(tk_probe: TkProbe, stand_in: StandInModel, tmp_path: Path) -> None:
    stand_in.script(default=by_role(lambda _: verdict(), lambda _: "I think it is fine"))
    async with memory_server(tmp_path, stand_in) as (client, _):
        await call_ok(client, "start_task", instruction="Press the button")
        bx, by = tk_probe.centre("button")
        await call_ok(client, "click", x=bx, y=by, space="screen")
        message = await call_error(client, "reflect")
        assert "no usable trajectory audit" in message and "'I think it is fine'" in message
        assert (await call_ok(client, "memory_audit"))["summaries"][0]["success"]  # the step check was kept


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    (tmp_path / TRAJECTORY_FILE).write_text('{"step_num": 1, "act', encoding="utf-8")
    assert read_trajectory(tmp_path) == []


def test_annotations_rewrite_lines_in_place_and_whole(tmp_path: Path) -> None:
    """A shorter rewrite of the last line leaves no tail; a rewrite of an older one keeps later appends right."""

    def step(number: int) -> TrajectoryStep:
        record = ActionRecord(id=number, action="move", arguments={}, started_at=0.0, duration_ms=1.0, summary="m")
        return TrajectoryStep(step_num=number, action_timestamp="x", action="move", summary="m", record=record)

    writer = TrajectoryWriter(tmp_path)
    steps = [step(1), step(2)]
    for each in steps:
        writer.append(each, None)

    def annotate(number: int, **fields: str) -> None:
        steps[number - 1] = steps[number - 1].model_copy(update=fields)
        writer.update(steps[number - 1], steps)
        assert (tmp_path / TRAJECTORY_FILE).read_bytes() == b"".join(
            s.model_dump_json().encode() + b"\n" for s in steps
        )

    annotate(2, thought="x" * 500)
    annotate(2, thought="short")  # in place, shorter: the file is cut after it
    annotate(1, plan="older")  # the whole file, atomically
    steps.append(step(3))
    writer.append(steps[-1], None)
    annotate(3, thought="latest")  # in place again, at the offsets of the rewritten file
    assert read_trajectory(tmp_path) == steps
    writer.close()
    assert read_trajectory(tmp_path) == steps
