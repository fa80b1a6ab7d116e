"""The call pipeline (tools/pipeline.py) applies to every tool by registration alone: a throwaway tool defined
here the way the server's own are (@define_tool, then register) is refused by the policy, reports progress,
has its failure clipped, is stopped at its time bound and is audited, with no line of its own for any of it.
No display is touched: the tools do nothing on the desktop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.limits import MAX_ECHO
from symphony_mcp.server import SymphonyServer, build_server
from symphony_mcp.tools.common import DESTRUCTIVE_INPUT, READ_ONLY
from symphony_mcp.tools.cores import Cores
from symphony_mcp.tools.definition import define_tool, register

pytestmark = pytest.mark.anyio

HUGE = "n" * 1_000_000
MAX_ERROR_TEXT = 1_500
released = anyio.Event()  # what throwaway_look(mode='beat') waits for: set by the test when progress arrives


@define_tool(READ_ONLY)
async def throwaway_look(cores: Cores, mode: Literal["beat", "fail"], name: str = "") -> str:
    """Waits for the test to see progress (beat), or fails as a file system would (fail)."""
    if mode == "fail":
        raise OSError(36, "File name too long", name)
    with anyio.move_on_after(60):  # a guard against a hang, should progress never come: no timing is asserted
        await released.wait()
        return "released"
    return "no progress came"


@define_tool(DESTRUCTIVE_INPUT)
async def throwaway_act(cores: Cores) -> str:
    """Would act on the desktop; the read-only policy must refuse it before it runs."""
    raise AssertionError("a tool the policy turned off ran")


@define_tool(READ_ONLY)
async def throwaway_stuck(cores: Cores) -> str:
    """Never finishes: only its time bound ends the call."""
    await anyio.Event().wait()
    return "unreachable"


@dataclass
class Served:
    server: SymphonyServer
    audit: Path


@pytest.fixture(params=[120.0])
async def served(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Served]:
    """A server with the read-only policy, the audit log on, the given time bound, and the throwaway tools."""
    audit = tmp_path / "audit.jsonl"
    settings = load_settings(
        memory={"trajectory_dir": str(tmp_path / "trajectories")},
        policy={"read_only": True, "audit_file": str(audit), "timeout_seconds": request.param},
    )
    server = build_server(settings)
    register(server.mcp, [throwaway_look, throwaway_act, throwaway_stuck], server.cores)
    try:
        yield Served(server, audit)
    finally:
        server.close()


async def test_the_policy_refuses_a_new_tool_it_turned_off(served: Served) -> None:
    async with Client(served.server.mcp) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("throwaway_act", {})
    assert "throwaway_look" in listed and "throwaway_act" not in listed
    text = refused.content[0].text  # type: ignore[union-attr]
    assert refused.is_error and "turned off" in text and "policy.read_only" in text, text


async def test_a_new_tool_reports_progress_while_it_runs(served: Served) -> None:
    global released
    released = anyio.Event()
    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)
        released.set()

    async with Client(served.server.mcp) as client:
        result = await client.call_tool("throwaway_look", {"mode": "beat"}, progress_callback=on_progress)
    assert not result.is_error and result.structured_content == {"result": "released"}
    assert messages and messages[0] is not None and messages[0].startswith("throwaway_look: running for")


async def test_a_new_tools_failure_is_clipped_for_the_caller_and_the_log(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    async with Client(served.server.mcp) as client:
        failed = await client.call_tool("throwaway_look", {"mode": "fail", "name": HUGE})
        again = await client.call_tool("throwaway_look", {"mode": "fail"})
    text = failed.content[0].text  # type: ignore[union-attr]
    assert failed.is_error and "internal error (OSError" in text and len(text) < MAX_ERROR_TEXT, text[:300]
    assert "n" * (2 * MAX_ECHO) not in caplog.text
    assert again.is_error and "the server is still running" in again.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("served", [0.3], indirect=True)
async def test_a_new_tool_is_stopped_at_its_time_bound(served: Served) -> None:
    async with Client(served.server.mcp) as client:
        stuck = await client.call_tool("throwaway_stuck", {})
    stopped = stuck.content[0].text  # type: ignore[union-attr]
    assert stuck.is_error and "time bound of 0.3 s" in stopped and "policy.timeout_seconds" in stopped, stopped


@pytest.mark.parametrize("served", [0.3], indirect=True)
async def test_every_call_of_a_new_tool_is_audited(served: Served) -> None:
    async with Client(served.server.mcp) as client:
        await client.call_tool("throwaway_act", {})
        await client.call_tool("throwaway_look", {"mode": "fail", "name": HUGE})
        await client.call_tool("throwaway_stuck", {})
    entries = [json.loads(line) for line in served.audit.read_text(encoding="utf-8").splitlines()]
    assert [(entry["tool"], entry["outcome"]) for entry in entries] == [
        ("throwaway_act", "refused"),
        ("throwaway_look", "error"),
        ("throwaway_stuck", "timeout"),
    ]
    assert all(len(json.dumps(entry)) < 5_000 for entry in entries)
