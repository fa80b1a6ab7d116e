"""`symphony-mcp serve --transport http` as a real subprocess on a free local port, for as long as a test needs it."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from testkit.ports import free_port, port_open
from testkit.server_process import base_env, serve_command
from testkit.waiting import wait_for


@asynccontextmanager
async def http_server(*args: str, display: str) -> AsyncIterator[str]:
    """The server on `display`, listening; yields its MCP endpoint URL and stops the server afterwards."""
    port = free_port()
    process = subprocess.Popen(
        [*serve_command(), "serve", "--transport", "http", "--port", str(port), *args],
        env=base_env(DISPLAY=display),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: port_open(port) or process.poll() is not None, timeout=20)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
