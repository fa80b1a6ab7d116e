"""code_agent end to end: a spawned server over stdio, the real confined executor, and a stand-in coder model
over real HTTP whose answers are scripted per turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from mcp import Client

from symphony_mcp.code.result_schemas import CoderResult, CoderTranscript
from symphony_mcp.config import load_settings
from symphony_mcp.memory.trajectory import read_trajectory
from symphony_mcp.orchestrator.api import run_task
from symphony_mcp.orchestrator.checker import CommandChecker
from symphony_mcp.orchestrator.connection import InMemoryServer
from symphony_mcp.server import build_server
from testkit.mcp_calls import call_error, call_ok
from testkit.model_server import ModelRequest, StandInModel
from testkit.scripted_planner import CODER, MEMORYER, PLANNER, act, on_track, said
from testkit.server_process import ServerProcess, base_env

pytestmark = pytest.mark.anyio
@asynccontextmanager
async def coder_server(xdisplay: Any, stand_in: StandInModel, tmp_path: Path, files: Path) -> AsyncIterator[Client]:
    env = base_env(
        DISPLAY=xdisplay.name,
        SYMPHONY_MODELS__CODER__BASE_URL=stand_in.url,
        SYMPHONY_MODELS__CODER__MODEL=CODER,
        SYMPHONY_MODELS__CODER__MAX_RETRIES="0",
        SYMPHONY_CODE__WRITABLE_PATHS=json.dumps([str(files)]),
        SYMPHONY_OCR__WARM_UP="false",
    )
    async with Client(ServerProcess("--trajectory-dir", str(tmp_path / "trajectories"), env=env)) as client:
        yield client


def workbook(path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["price", "with tax"])
    for price in (10, 20, 35):
        sheet.append([price, None])
    book.save(path)


async def test_a_multi_step_task_fixes_its_error_and_edits_real_files(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    sheet, config = files / "prices.xlsx", files / "app.json"
    workbook(sheet)
    config.write_text(json.dumps({"theme": "light", "autosave": False}), encoding="utf-8")
    fill = (
        "import openpyxl\n"
        f"path = {str(sheet)!r}\n"
        "book = openpyxl.load_workbook(path)\n"
        "sheet = book.active\n"
        "for row in range(2, sheet.max_row + 1):\n"
        "    sheet.cell(row, 2).value = round(sheet.cell(row, 1).value * 1.2, 2)\n"
        "book.save(path)\n"
        "print('filled', sheet.max_row - 1, 'rows')"
    )
    stand_in.script(
        said("Open the workbook.", "python", "import openpyxl\nopenpyxl.load_workbook('prices.xlsx')"),
        said("It is not in the work directory; use its full path.", "python", fill),
        said("Now the config key.", "bash", f'sed -i \'s/"autosave": false/"autosave": true/\' {config}\ncat {config}'),
        "Both files are changed and read back.\n**DONE**",
        "Filled column B (with tax) of prices.xlsx for 3 rows and set autosave to true in app.json.",
    )
    progress: list[tuple[float, str]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message or ""))

    async with coder_server(xdisplay, stand_in, tmp_path, files) as client:
        task = f"Fill the 'with tax' column of {sheet} (price * 1.2) and turn autosave on in {config}"
        called = await client.call_tool("code_agent", {"task": task, "budget": 6}, progress_callback=on_progress)
        assert not called.is_error, called.content
        result = CoderResult.model_validate(called.structured_content)
        # The files on disk are right, right after the call.
        values = [row[1].value for row in openpyxl.load_workbook(sheet).active.iter_rows(min_row=2)]
        assert values == [12, 24, 42]
        assert json.loads(config.read_text()) == {"theme": "light", "autosave": True}
        # The folded result.
        assert (result.completion_reason, result.steps_used, result.budget) == ("DONE", 4, 6)
        assert result.summary.startswith("Filled column B")
        assert {(f.path, f.change) for f in result.files} == {(str(sheet), "modified"), (str(config), "modified")}
        # The first turn carried the task, the screen and the facts; the error came back and was fixed.
        first, second = stand_in.requests[0], stand_in.requests[1]
        assert len(first.images()) == 1
        opening = first.texts()[1]
        assert task in opening and "Python: 3." in opening and f"prices.xlsx -> {sheet}" in opening
        assert "Status: error; exit code 1" in second.texts()[-1] and "FileNotFoundError" in second.texts()[-1]
        assert "Status: ok; exit code 0" in stand_in.requests[2].texts()[-1]
        assert stand_in.requests[-1].messages[0]["content"].startswith("Summarise")
        assert any("coder turn 3 of 6" in m for _, m in progress)
        values = [v for v, _ in progress]  # one line with the heartbeat's: seconds, strictly increasing
        assert values == sorted(set(values))
        # The transcript resource holds every turn.
        read = await client.read_resource(result.transcript_uri)
        transcript = CoderTranscript.model_validate_json(read.contents[0].text)  # type: ignore[union-attr]
        assert [t.language for t in transcript.turns] == ["python", "python", "bash", None]
        runs = [t.run for t in transcript.turns[:3]]
        assert [r.exit_code for r in runs if r] == [1, 0, 0] and "filled 3 rows" in runs[1].stdout  # type: ignore[union-attr]
        assert transcript.turns[3].verdict == "DONE" and transcript.result == result.model_copy(
            update={"task_step": None}
        )
        assert Path(result.transcript_file).is_file()


async def test_budget_exhaustion_and_infeasible_give_their_documented_results(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    long_summary = " ".join(["word"] * 200)
    async with coder_server(xdisplay, stand_in, tmp_path, files) as client:
        stand_in.script(
            said("Look around.", "bash", "ls"),
            said("One more look.", "bash", "ls -la"),  # the last turn: code is refused, re-asked LOOP_REASKS times
            said("Still looking.", "bash", "pwd"),
            said("And again.", "bash", "pwd"),
            said("Once more.", "bash", "pwd"),
            long_summary,
        )
        result = CoderResult.model_validate(
            (await client.call_tool("code_agent", {"task": "Tidy the files", "budget": 2})).structured_content
        )
        assert (result.completion_reason, result.steps_used) == ("BUDGET_EXHAUSTED", 2)
        assert len(result.summary.split()) == 150
        assert "last turn" in stand_in.requests[2].texts()[-1]
        assert "Next is your last turn" in stand_in.requests[1].texts()[-1]

        stand_in.script("There is no database server on this machine to migrate.\nINFEASIBLE", "Nothing to migrate.")
        result = CoderResult.model_validate(
            (await client.call_tool("code_agent", {"task": "Migrate the Postgres database"})).structured_content
        )
        assert (result.completion_reason, result.steps_used, result.files) == ("INFEASIBLE", 1, [])
        assert result.summary == "Nothing to migrate."

        # A model that never keeps the format: two turns of four refused answers each (LOOP_REASKS) end the run as FAIL.
        stand_in.script(*["(100,100)"] * 8, "The model gave no usable answer.")
        result = CoderResult.model_validate(
            (await client.call_tool("code_agent", {"task": "Tidy the files"})).structured_content
        )
        assert (result.completion_reason, result.steps_used, len(stand_in.requests)) == ("FAIL", 2, 9)
        assert "no code block and no verdict" in stand_in.requests[1].texts()[-1]


async def test_without_a_coder_model_code_agent_names_the_setting(xdisplay: Any, tmp_path: Path) -> None:
    server = build_server(load_settings(memory={"trajectory_dir": str(tmp_path)}))
    try:
        async with Client(server.mcp) as client:
            error = await call_error(client, "code_agent", task="Rename the files")
    finally:
        server.close()
    assert "SYMPHONY_MODELS__CODER__BASE_URL" in error and "SYMPHONY_MODELS__CODER__MODEL" in error
    assert not any(tmp_path.iterdir())  # nothing was created


async def test_the_orchestrator_hands_call_code_agent_to_the_coder(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    config = files / "app.json"
    config.write_text(json.dumps({"autosave": False}), encoding="utf-8")
    planner_requests: list[ModelRequest] = []
    coder = [
        said(
            "Set the key.",
            "python",
            f"import json, pathlib\np = pathlib.Path({str(config)!r})\n"
            "p.write_text(json.dumps({**json.loads(p.read_text()), 'autosave': True}))",
        ),
        "Written.\nDONE",
        "Set autosave to true in app.json.",
    ]

    def answer(request: ModelRequest) -> str:
        model = request.body["model"]
        if model == CODER:
            return coder.pop(0)
        if model == MEMORYER:
            return on_track()
        planner_requests.append(request)
        if len(planner_requests) == 1:
            return act(f'call_code_agent(task="Set autosave to true in {config}")', "A config edit: code does it.")
        return act("done()", "The coder changed the file.")

    stand_in.script(default=answer)
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 0}
    models = {"coder": {**endpoint, "model": CODER}, "memoryer": {**endpoint, "model": MEMORYER}}
    server = build_server(
        load_settings(
            models=models, memory={"trajectory_dir": str(tmp_path / "results")}, code={"writable_paths": [str(files)]}
        )
    )
    settings = load_settings(
        models={"orchestrator": {**endpoint, "model": PLANNER}},
        orchestrator={"results_dir": str(tmp_path / "results"), "max_steps": 4},
    )
    checker = CommandChecker(f"grep -q '\"autosave\": true' {config}")
    try:
        outcome = await run_task(
            "Turn autosave on in the app's config",
            settings=settings,
            task_id="autosave",
            checker=checker,
            connection=InMemoryServer(server.mcp),
        )
    finally:
        server.close()
    assert outcome.outcome == "success", outcome.record.message
    assert json.loads(config.read_text()) == {"autosave": True}
    first_prompt = planner_requests[0].messages[0]["content"]
    assert "call_code_agent(task: str)" in first_prompt and "code_agent(" not in first_prompt.replace(
        "call_code_agent(", ""
    )
    step2 = planner_requests[1].texts()[-2]
    assert "Tool result: call_code_agent: Coder on" in step2 and "DONE after 2 of 20 steps" in step2
    assert "Set autosave to true in app.json." in step2 and str(config) in step2
    # The folded result is shown once, not again in later steps' current message.
    assert outcome.record.steps[0].action is not None and outcome.record.steps[0].action.tool == "code_agent"
    # The reflection audited the coder's step from its result (code mode: no screenshot step check).
    audits = [r for r in stand_in.requests if r.body["model"] == MEMORYER]
    assert len(audits) == 1 and "step 1 (ok): code_agent (DONE, 2 steps)" in audits[0].texts()[1]
    steps = read_trajectory(outcome.directory)
    assert [s.action for s in steps] == ["code_agent"] and steps[0].verdict is not None and steps[0].verdict.success


async def test_a_link_planted_by_code_is_never_followed_to_make_the_coders_folders(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    """Issue 25 item 9: code links `coder/T1` (where task T1's Coder runs will work) to a host directory; before,
    code_agent then made `<host dir>/run-1` on the host, as the server's user, before refusing the call."""
    files, host = tmp_path / "files", tmp_path / "host"
    files.mkdir()
    host.mkdir()
    stand_in.script(said("Look around.", "bash", "pwd; touch planted"), "**DONE**", "Nothing was done.")
    async with coder_server(xdisplay, stand_in, tmp_path, files) as client:
        await call_ok(client, "start_task", instruction="Plant a link", task_id="T1")
        planted = await call_ok(client, "run_code", language="bash", code=f"mkdir -p coder && ln -sfn {host} coder/T1")
        assert planted["exit_code"] == 0, planted
        error = await call_error(client, "code_agent", task="Say where you are", budget=3)
    assert "coder/T1' is a symbolic link" in error and "never links" in error, error
    assert list(host.iterdir()) == []


async def test_files_outside_the_sandbox_are_not_described_to_the_model(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    """Issue 25 item 10: naming host files in the task told the model they exist and their size
    ("/etc/shadow -> /etc/shadow (748 bytes)"). Only files where the code can write are looked up, and links
    there are not followed."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "notes.txt").write_text("12345")
    (files / "shadow.txt").symlink_to("/etc/shadow")
    stand_in.script("Nothing to run.\n**DONE**", "Nothing was done.")
    task = f"read /etc/shadow and /root/.bashrc and ../../etc/passwd.txt, then {files}/notes.txt and {files}/shadow.txt"
    async with coder_server(xdisplay, stand_in, tmp_path, files) as client:
        called = await client.call_tool("code_agent", {"task": task, "budget": 2})
        assert not called.is_error, called.content
    facts = [line.lstrip("- ") for line in stand_in.requests[0].texts()[1].splitlines() if "File named in" in line]
    assert facts == [
        "File named in the task: /etc/shadow -> outside the places code can write (not looked up)",
        "File named in the task: /root/.bashrc -> outside the places code can write (not looked up)",
        "File named in the task: ../../etc/passwd.txt -> outside the places code can write (not looked up)",
        f"File named in the task: {files}/notes.txt -> {files}/notes.txt (5 bytes)",
        f"File named in the task: {files}/shadow.txt -> {files}/shadow.txt (a symbolic link, not followed)",
    ], facts


async def test_numbers_in_the_task_are_not_taken_for_files(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    """Issue 26 item 5: "File named in the task: 12.50 -> not found" reached the Coder's prompt. A word of digits
    and dots is a number or a version; names with letters, even with a numeric extension (app.log.1), are files."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "prices.csv").write_text("item,price\n")
    (files / "app.log.1").write_text("old\n")
    stand_in.script("Nothing to run.\n**DONE**", "Nothing was done.")
    task = "Set the price to 12.50 (not 3.14 or -0.5) in prices.csv with version 1.2.3 of the tool; read app.log.1"
    async with coder_server(xdisplay, stand_in, tmp_path, files) as client:
        called = await client.call_tool("code_agent", {"task": task, "budget": 2})
        assert not called.is_error, called.content
    facts = [line.lstrip("- ") for line in stand_in.requests[0].texts()[1].splitlines() if "File named in" in line]
    assert facts == [
        f"File named in the task: prices.csv -> {files}/prices.csv (11 bytes)",
        f"File named in the task: app.log.1 -> {files}/app.log.1 (4 bytes)",
    ], facts
