"""A real `symphony-mcp serve` killed or signalled mid-task: what an answered step leaves on disk.

Each server runs on its own virtual display (`--virtual-display always`) with its trajectories in
tmp, and is driven by the real MCP client over stdio. `benchmarks/robustness/crash_durability.py` does the
same many times at random points.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from symphony_mcp.memory.owner import this_process
from symphony_mcp.memory.trajectory import read_trajectory
from symphony_mcp.orchestrator.report import write_report
from testkit.mcp_calls import call_ok
from testkit.ports import free_port, port_open
from testkit.server_process import ServerProcess, base_env, children, names, serve_command, wait_gone
from testkit.waiting import wait_for

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
        display = server.children()
        os.kill(server.pid, signal.SIGKILL)  # right after the last answer: no shutdown, no flush
        await server.wait(10)
    assert answered == [1, 2, 3, 4, 5]
    assert [s.step_num for s in read_trajectory(runs / "sequential")] == answered
    # The Xvfb and openbox it started die with it.
    assert names(display) == ["Xvfb", "at-spi-bus-laun", "dbus-daemon", "openbox"]
    assert wait_gone(display) == set()

    # A kill while step 5's screenshot was being written: its half-written file under the temporary name, none
    # under its own (the writer renames it when whole). The next server removes the one and marks the step lost.
    task = runs / "sequential"
    (task / "step_5.png").unlink(missing_ok=True)  # the kill may have come before the writer got there anyway
    (task / "step_5.png.tmp").write_bytes(b"\x89PNG\r\n\x1a\n half")
    (task / "step_4.png").unlink(missing_ok=True)  # a kill before the writer reached step 4 at all
    lost = [n for n in answered if not (task / f"step_{n}.png").exists()]  # 4, 5 and any the writer had not done
    async with Client(crashable(runs)) as client:
        steps = await client.read_resource("trajectory://sequential/steps")
        listed_steps = json.loads(steps.contents[0].text)  # type: ignore[union-attr]
        assert [s["step_num"] for s in listed_steps] == answered
        assert [s["step_num"] for s in listed_steps if s["screenshot_lost"]] == lost
        with pytest.raises(MCPError, match=r"no screenshot for step 5: .*the server stopped before writing it"):
            await client.read_resource("trajectory://sequential/steps/5/screenshot")
        # The restarted server ended the task the killed one left running, and says why.
        (listed,) = (await call_ok(client, "list_tasks"))["result"]
    assert listed["status"] == "abandoned" and listed["steps"] == 5
    assert f"pid {server.pid}" in listed["note"] and "killed or crashed" in listed["note"]
    assert f"without the screenshots of steps {', '.join(map(str, lost))} (lost)" in listed["note"]
    assert not list(task.glob("*.tmp"))
    for step in read_trajectory(task):  # every step's picture is there, or the step says it was lost
        assert (step.screenshot_file is not None and (task / step.screenshot_file).exists()) != step.screenshot_lost
    assert json.loads((runs / "sequential" / "task.json").read_text())["status"] == "abandoned"
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


STOPS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT]


@pytest.mark.parametrize("stop", STOPS, ids=[stop.name for stop in STOPS])
async def test_a_stop_signal_ends_the_task_and_exits_0_with_stdin_open(tmp_path: Path, stop: signal.Signals) -> None:
    runs = tmp_path / "runs"
    server = crashable(runs)
    async with Client(server) as client:
        await call_ok(client, "start_task", instruction="Click once", task_id="stopped")
        await click(client, 0)
        display = server.children()
        os.kill(server.pid, stop)
        assert await server.wait(15) == 0  # the client is still connected: its stdin stays open
    info = json.loads((runs / "stopped" / "task.json").read_text())
    assert info["status"] == "abandoned" and info["note"] == f"the server stopped ({stop.name})"
    assert [s.step_num for s in read_trajectory(runs / "stopped")] == [1]
    assert (runs / "stopped" / "step_1.png").exists()  # the writer was flushed
    assert display and wait_gone(display) == set()  # its Xvfb and openbox were stopped


GATED_XVFB = """#!/bin/sh
# Xvfb held until the test opens the gate: the server is then inside its start-up, waiting for its display.
touch "$XVFB_STARTED"
while [ ! -e "$XVFB_GATE" ]; do sleep 0.05; done
exec "$REAL_XVFB" "$@"
"""


@pytest.mark.parametrize("stop", STOPS, ids=[stop.name for stop in STOPS])
def test_a_stop_signal_during_start_up_exits_0_without_a_traceback(tmp_path: Path, stop: signal.Signals) -> None:
    """A signal while the server starts (here: waiting for its virtual display) ended it with -15, or -2 and a
    KeyboardInterrupt traceback; now start-up unwinds, stops the display it began, and the process exits 0."""
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "Xvfb").write_text(GATED_XVFB)
    (shims / "Xvfb").chmod(0o755)
    started = tmp_path / "xvfb-started"
    real_xvfb = shutil.which("Xvfb")
    assert real_xvfb is not None
    env = base_env(XVFB_STARTED=str(started), XVFB_GATE=str(tmp_path / "gate"), REAL_XVFB=real_xvfb)
    env["PATH"] = f"{shims}:{env.get('PATH', os.defpath)}"
    process = subprocess.Popen(
        [*serve_command(), "serve", *DISPLAY_ARGS, "--trajectory-dir", str(tmp_path / "runs")],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: started.exists() or process.poll() is not None, timeout=60)
        assert process.poll() is None, process.communicate()
        display = children(process.pid)
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    errors = stderr.decode(errors="replace")
    assert process.returncode == 0, errors
    assert f"{stop.name} received while starting; stopped" in errors and "Traceback" not in errors, errors
    assert display and wait_gone(display) == set()


async def test_sigterm_stops_an_http_server_cleanly(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    port = free_port()
    command = [*serve_command(), "serve", *DISPLAY_ARGS, "--trajectory-dir", str(runs)]
    process = subprocess.Popen([*command, "--transport", "http", "--port", str(port)], env=base_env())
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_for(lambda: port_open(port) or process.poll() is not None, timeout=30)
        async with Client(url) as client:
            await call_ok(client, "start_task", instruction="Click once", task_id="http")
            await click(client, 0)
            display = children(process.pid)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0  # with the client's session still open
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    info = json.loads((runs / "http" / "task.json").read_text())
    assert info["status"] == "abandoned" and info["note"] == "the server stopped (SIGTERM)"
    assert display and wait_gone(display) == set()


def test_a_task_owner_is_gone_only_when_that_very_process_is() -> None:
    me = this_process()
    assert not me.gone()
    assert me.model_copy(update={"started": (me.started or 0) + 1}).gone()  # same pid, another process: reused
    assert me.model_copy(update={"boot_id": "another-boot"}).gone()
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert me.model_copy(update={"pid": ended.pid, "started": None}).gone()  # no such process any more
    assert not me.model_copy(update={"host": "another-host", "started": 1}).gone()  # cannot tell: left alone
