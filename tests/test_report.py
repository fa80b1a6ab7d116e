"""The static HTML report of a real results directory, opened in real headless Chromium.

The results come from the server itself: a task with three real actions on the Tk probe window (plus
the run.json an orchestrator would write for it) and a second task left running. The report must show
every step with its screenshot loaded and its action points marked, and show model text as text.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
from mcp import Client
from playwright.async_api import Page, async_playwright

from symphony_mcp.config import load_settings
from symphony_mcp.memory.judgements import Reflection
from symphony_mcp.memory.trajectory import read_trajectory
from symphony_mcp.models.usage import RoleUsage
from symphony_mcp.orchestrator.records import (
    RESULT_FILE,
    RUN_FILE,
    ParsedAction,
    RunRecord,
    RunStep,
    State,
    StepTimings,
    Transition,
)
from symphony_mcp.orchestrator.report import report_command, write_report
from symphony_mcp.server import build_server
from testkit.chromium import QUIET_ARGS, chromium_executable
from testkit.display import SCREEN
from testkit.mcp_calls import call_ok
from testkit.tk_probe import TkProbe
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio

CHROMIUM = chromium_executable()
INJECTED = "<script>alert(1)</script>"
INJECTED_IMG = "<img src=x onerror=alert(2)>"
INSTRUCTION = "Press the button, type hello, then press ctrl+shift+k <b>now</b>"


def run_record(results: Path, task_id: str) -> RunRecord:
    """What an orchestrator would have written for the task: the real trajectory steps and points."""
    steps = read_trajectory(results / task_id)
    assert [s.action for s in steps] == ["click", "type", "hotkey"]
    points = [[(p.x, p.y) for p in s.record.screen_points] for s in steps]
    assert len(points[0]) == 1 and len(points[1]) == 1 and points[2] == []
    (bx, by), (ex, ey) = points[0][0], points[1][0]
    t0 = steps[0].record.started_at - 1.0
    run_steps = [
        RunStep(
            step=1,
            model_output=f"The button is at the top left. {INJECTED_IMG}\nclick(x={bx}, y={by})",
            plan=f"Press the button first {INJECTED}",
            action=ParsedAction(name="click", arguments={"x": bx, "y": by}, code=f"click(x={bx}, y={by})"),
            tool_result={"summary": steps[0].record.summary, "ok": True},
            trajectory_step=1,
            screen_points=points[0],
            reflection=Reflection(status="On-track", reflection="Nothing done yet.", is_milestone=False),
            timings=StepTimings(observe_ms=40, plan_ms=1500, execute_ms=120, model_ms=1450, overhead_ms=210),
        ),
        RunStep(
            step=2,
            model_output=f'type(text="hello", x={ex}, y={ey})',
            plan="Type hello into the entry",
            action=ParsedAction(name="type", arguments={"text": "hello"}, code=f'type(text="hello", x={ex}, y={ey})'),
            tool_result={"summary": steps[1].record.summary},
            trajectory_step=2,
            screen_points=points[1],
            reflection=Reflection(
                status="Off-track",
                error_type="gui_operation_error",
                reflection="The button press did not change the <em>window</em>.",
                is_milestone=True,
                new_facts=["The probe window is titled Symphony Probe"],
            ),
        ),
        RunStep(
            step=3,
            model_output='hotkey(keys=["ctrl", "shift", "k"])',
            plan="Press the shortcut",
            action=ParsedAction(name="hotkey", arguments={"keys": ["ctrl", "shift", "k"]}, code="hotkey(ctrl+shift+k)"),
            tool_error="pretend the tool said <b>no</b>",
            trajectory_step=3,
        ),
        RunStep(
            step=4,
            model_output="done()",
            action=ParsedAction(name="done", code="done()"),
            verification="The checker sees hello in the entry & the shortcut registered.",
        ),
    ]
    states = [State.INIT, State.OBSERVE, State.PLAN, State.EXECUTE, State.VERIFY, State.SUCCESS]
    transitions = [
        Transition(at=t0 + n, step=max(n - 1, 0), source=a, target=b, reason=f"reason {n} <i>x</i>")
        for n, (a, b) in enumerate(pairwise(states))
    ]
    return RunRecord(
        task_id=task_id,
        instruction=INSTRUCTION,
        started_at=t0,
        ended_at=t0 + 83.0,
        outcome="success",
        message="<u>checker</u>: the entry says hello",
        max_steps=15,
        screen_size=SCREEN,
        steps=run_steps,
        transitions=transitions,
        usage={
            "planner": RoleUsage(calls=4, prompt_tokens=12000, completion_tokens=345, total_tokens=12345),
            "memoryer": RoleUsage(calls=2, failed_calls=1, total_tokens=2222, model_ms=900.0),
        },
    )


async def make_results(tk_probe: TkProbe, results: Path) -> None:
    built = build_server(load_settings(memory={"trajectory_dir": str(results)}))
    try:
        async with Client(built.mcp) as client:
            await call_ok(client, "start_task", instruction=INSTRUCTION, task_id="probe-run")
            bx, by = tk_probe.centre("button")
            await call_ok(client, "click", x=bx, y=by, space="screen")
            ex, ey = tk_probe.centre("entry")
            await call_ok(client, "type", text="hello", x=ex, y=ey, space="screen")
            await call_ok(client, "hotkey", keys=["ctrl", "shift", "k"])
            tk_probe.wait(lambda s: s.get("entry") == "hello" and s.get("hotkeys") == ["ctrl+shift+k"])
            await call_ok(client, "end_task", status="success", note="done")
            # A second task, still running while the report is written: only the server's files.
            await call_ok(client, "start_task", instruction="Left running", task_id="probe-unfinished")
            sx, sy = tk_probe.centre("swatch")
            await call_ok(client, "click", x=sx, y=sy, space="screen")
            unfinished = results / "probe-unfinished"
            wait_for(lambda: len(read_trajectory(unfinished)) == 1 and (unfinished / "step_1.png").exists())
            record = run_record(results, "probe-run")
            (results / "probe-run" / RUN_FILE).write_text(record.model_dump_json(indent=2), encoding="utf-8")
            (results / "probe-run" / RESULT_FILE).write_text("1.0\n", encoding="utf-8")
            assert not (unfinished / RUN_FILE).exists()
            write_report(results)
    finally:
        built.close()


async def loaded_images(page: Page) -> list[int]:
    """The natural widths of the screenshots once the page has loaded, none scrolled into view: a printout or a
    headless capture shows every one (lazy-loaded images stayed blank there)."""
    await page.wait_for_load_state("load")
    images = page.locator("section.step img")
    return await images.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")


async def marker_centres(page: Page, step: str) -> list[tuple[float, float]]:
    """Each marker's centre as a fraction of its screenshot's displayed size."""
    return await page.evaluate(
        """id => {
            const section = document.getElementById(id);
            const img = section.querySelector('.shot img').getBoundingClientRect();
            return [...section.querySelectorAll('.marker')].map(m => {
                const r = m.getBoundingClientRect();
                return [(r.left + r.width / 2 - img.left) / img.width, (r.top + r.height / 2 - img.top) / img.height];
            });
        }""",
        step,
    )


def file_of(url: str) -> Path:
    return Path(url2pathname(urlparse(url).path))


async def test_report_opens_in_headless_chromium_with_every_step(tk_probe: TkProbe, tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed (apt-get install chromium)")
    results = tmp_path / "results"
    await make_results(tk_probe, results)
    index = results / "report" / "index.html"
    assert index.exists()
    points = [[(p.x, p.y) for p in s.record.screen_points] for s in read_trajectory(results / "probe-run")]

    dialogs: list[str] = []
    requests: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(QUIET_ARGS))
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        page.on("request", lambda request: requests.append(request.url))
        await page.goto(index.as_uri())

        rows = page.locator("tr.task")
        assert await rows.evaluate_all("rows => rows.map(r => [r.dataset.task, r.dataset.outcome])") == [
            ["probe-run", "success"],
            ["probe-unfinished", "unfinished"],
        ]
        run_row, unfinished_row = rows.nth(0), rows.nth(1)
        assert await run_row.locator(".outcome").inner_text() == "SUCCESS"  # upper-cased by CSS
        assert await run_row.locator("td.steps").inner_text() == "4 / 15"
        usage = await run_row.locator(".usage").inner_text()
        assert "planner: 4 calls, 12,345 tokens" in usage and "memoryer: 2 calls (+1 failed), 2,222 tokens" in usage
        assert await run_row.locator(".instruction").inner_text() == INSTRUCTION
        assert "1 min 23 s" in await run_row.inner_text()
        assert await unfinished_row.locator("td.steps").inner_text() == "1 / —"
        assert await unfinished_row.locator(".instruction").inner_text() == "Left running"
        summary = await page.locator("#summary").inner_text()
        assert "100.0 %" in summary and "1 of 1 finished" in summary and "50.0 % of all 2" in summary
        await assert_inert(page)

        await run_row.locator("a.task-link").click()
        await page.wait_for_url("**/probe-run.html")
        assert await page.locator("#outcome").inner_text() == "SUCCESS"
        assert await page.locator("#message").inner_text() == "<u>checker</u>: the entry says hello"
        transitions = await page.locator("#transitions").inner_text()
        assert "Init → Observe" in transitions and "Verify → Success" in transitions and "<i>x</i>" in transitions
        assert await page.locator("#usage tbody tr").count() == 2

        blocks = page.locator("section.step")
        assert await blocks.evaluate_all("s => s.map(e => e.id)") == ["step-1", "step-2", "step-3", "step-4"]
        assert await loaded_images(page) == [SCREEN[0]] * 4
        sources = await page.locator("section.step img").evaluate_all("imgs => imgs.map(i => i.src)")
        # Each step shows the screen it acted on; the final "done" shows the latest one recorded.
        assert [Path(s).name for s in sources] == ["step_0.png", "step_1.png", "step_2.png", "step_3.png"]
        assert all(file_of(s).parent == results / "probe-run" for s in sources)
        after = await page.locator("section.step a.after").evaluate_all("links => links.map(a => a.href)")
        assert [file_of(a) for a in after] == [results / "probe-run" / f"step_{n}.png" for n in (1, 2, 3)]

        for step, expected in (("step-1", points[0]), ("step-2", points[1]), ("step-3", []), ("step-4", [])):
            centres = await marker_centres(page, step)
            assert len(centres) == len(expected), step
            for (fx, fy), (x, y) in zip(centres, expected, strict=True):
                assert abs(fx - x / SCREEN[0]) < 0.003 and abs(fy - y / SCREEN[1]) < 0.003, (step, fx, fy, x, y)

        step1, step2 = page.locator("#step-1"), page.locator("#step-2")
        assert await step1.locator("pre.plan").inner_text() == f"Press the button first {INJECTED}"
        output = step1.locator("details.model-output pre")
        assert not await output.is_visible()
        await step1.locator("details.model-output summary").click()
        assert INJECTED_IMG in await output.inner_text()
        assert "Tool output" in await step1.inner_text()
        reflection = await step2.locator(".reflection").inner_text()
        for text in ("Off-track", "gui_operation_error", "milestone", "<em>window</em>", "Symphony Probe"):
            assert text in reflection
        assert "pretend the tool said <b>no</b>" in await page.locator("#step-3 pre.tool-error").inner_text()
        assert "& the shortcut" in await page.locator("#step-4 pre.verification").inner_text()
        assert "plan 1.50 s" in await step1.locator(".timings").inner_text()
        await assert_inert(page)

        await page.go_back()
        await page.locator("tr.task").nth(1).locator("a.task-link").click()
        await page.wait_for_url("**/probe-unfinished.html")
        assert await page.locator("#outcome").inner_text() == "UNFINISHED"
        assert await page.locator("section.step").evaluate_all("s => s.map(e => e.id)") == ["step-1"]
        assert await loaded_images(page) == [SCREEN[0]]
        assert len(await marker_centres(page, "step-1")) == 1
        await assert_inert(page)
        await browser.close()

    assert dialogs == []
    assert requests and all(url.startswith("file://") for url in requests), requests


async def assert_inert(page: Page) -> None:
    """No script element, no injected element: run text stayed text."""
    counts: dict[str, Any] = await page.evaluate(
        """() => ({scripts: document.querySelectorAll('script').length,
                   injected: document.querySelectorAll('img[src="x"], b, em, u, i').length})"""
    )
    assert counts == {"scripts": 0, "injected": 0}


def test_report_command_and_odd_task_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_command(tmp_path / "missing") == 2
    assert "no results directory" in capsys.readouterr().err
    (tmp_path / "index").mkdir()  # a task named like the index page must not overwrite it
    (tmp_path / "index" / "traj.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / RUN_FILE).write_text("{not json", encoding="utf-8")
    (tmp_path / "not-a-task").mkdir()
    attempt = tmp_path / "broken.attempt-20260101-120000"  # set aside by a rerun: listed, not counted
    attempt.mkdir()
    (attempt / "traj.jsonl").write_text("", encoding="utf-8")
    assert report_command(tmp_path) == 0
    index = Path(capsys.readouterr().out.strip())
    assert index == tmp_path / "report" / "index.html"
    pages = ["broken.attempt-20260101-120000.html", "broken.html", "index-2.html", "index.html"]
    assert sorted(p.name for p in index.parent.iterdir()) == pages
    html = index.read_text(encoding="utf-8")
    assert "run.json is unreadable" in html and 'href="index-2.html"' in html
    assert html.count('<tr class="task"') == 2 and html.count('<tr class="attempt"') == 1
    assert "of all 2)" in html
    assert write_report(tmp_path, tmp_path / "elsewhere").parent == tmp_path / "elsewhere"
    (tmp_path / "report" / "traj.jsonl").write_text("", encoding="utf-8")  # a task named "report"
    index = write_report(tmp_path)
    assert index == tmp_path / "_report" / "index.html" and (tmp_path / "_report" / "report.html").exists()
