"""A real `symphony-mcp serve` killed or signalled mid-task: what an answered step leaves on disk.

Each server runs on its own virtual display (`--virtual-display always`) with its trajectories in
tmp, and is driven by the real MCP client over stdio. `benchmarks/crash_durability.py` does the
same many times at random points.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from symphony_mcp.memory.trajectory import read_trajectory
from symphony_mcp.orchestrator.report import write_report
from testkit.server_process import ServerProcess
from tests.conftest import call_ok

pytestmark = pytest.mark.anyio

DISPLAY_ARGS = ("--virtual-display", "always", "--resolution", "1920x1080")


def crashable(runs: Path) -> ServerProcess:
    return ServerProcess(*DISPLAY_ARGS, "--trajectory-dir", str(runs))


async def click(client: Client, i: int) -> int:
    """A left click on the empty desktop; the trajectory step it became."""
    result = await call_ok(client, "click", x=100 + 60 * i, y=400, space="screen")
    return int(result["task_step"])


async def test_answered_steps_survive_kill_9(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    server = crashable(runs)
    async with Client(server) as client:
        await call_ok(client, "start_task", instruction="Click five times", task_id="sequential")
        answered = [await click(client, i) for i in range(5)]
        os.kill(server.pid, signal.SIGKILL)  # right after the last answer: no shutdown, no flush
        await server.wait(10)
    assert answered == [1, 2, 3, 4, 5]
    assert [s.step_num for s in read_trajectory(runs / "sequential")] == answered

    # A kill between a step's line and its screenshot: the readers say so instead of failing.
    (runs / "sequential" / "step_5.png").unlink(missing_ok=True)
    async with Client(crashable(runs)) as client:
        steps = await client.read_resource("trajectory://sequential/steps")
        assert [s["step_num"] for s in json.loads(steps.contents[0].text)] == answered  # type: ignore[union-attr]
        with pytest.raises(MCPError, match=r"no screenshot for step 5: .*the server stopped before writing it"):
            await client.read_resource("trajectory://sequential/steps/5/screenshot")
    page = write_report(runs).read_text(encoding="utf-8")
    assert "sequential" in page


async def test_concurrent_answered_steps_survive_kill_9(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    server = crashable(runs)
    answered: list[int] = []

    async def one(i: int) -> None:
        answered.append(await click(client, i))

    async with Client(server) as client:
        await call_ok(client, "start_task", instruction="Click five times at once", task_id="concurrent")
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(one, i)
        os.kill(server.pid, signal.SIGKILL)
        await server.wait(10)
    assert sorted(answered) == [1, 2, 3, 4, 5]
    on_disk = read_trajectory(runs / "concurrent")
    assert sorted(s.step_num for s in on_disk) == [1, 2, 3, 4, 5]
    assert sorted(s.record.screen_points[0].x for s in on_disk) == [100 + 60 * i for i in range(5)]
