"""Long calls report progress while they run, so clients that reset their timeout on progress keep waiting."""

from __future__ import annotations

import pytest
from mcp import Client

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.server_process import base_env, stdio_params

pytestmark = pytest.mark.anyio


async def test_a_long_wait_reports_progress_over_stdio(xdisplay: VirtualDisplay) -> None:
    received: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, total, message))

    async with Client(stdio_params(env=base_env(DISPLAY=xdisplay.name))) as client:
        result = await client.call_tool("wait", {"seconds": 3.2}, progress_callback=on_progress)
        assert not result.is_error
        assert len(received) >= 2, received
        progress = [value for value, _, _ in received]
        assert progress == sorted(set(progress)) and progress[0] > 0
        assert all(message and message.startswith("wait: running for") for _, _, message in received)
        received.clear()
        failed = await client.call_tool("wait", {"seconds": -1}, progress_callback=on_progress)
        assert failed.is_error
        assert received == []  # a quick call reports nothing
