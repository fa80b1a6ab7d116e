"""JSON-RPC spoken raw to a server, line by line over stdio or posted over HTTP: for what the MCP client cannot
send (unparseable lines, NaN, invalid ids, batches)."""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import time
from collections.abc import Iterator
from typing import Any

from testkit.server_process import base_env, serve_command

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def read_reply(process: subprocess.Popen[bytes], timeout: float = 20.0) -> dict[str, Any]:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            line = process.stdout.readline()
            assert line, f"the server closed stdout (exit {process.poll()})"
            return json.loads(line)
    raise AssertionError(f"no reply within {timeout} s")


class RawStdio:
    """A server over stdio spoken to line by line: for what the MCP client cannot send (unparseable lines, NaN)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, line: str | bytes) -> dict[str, Any]:
        """Write one line and return the server's reply to it."""
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()
        return read_reply(self.process)


@contextlib.contextmanager
def raw_stdio_server(**env: str) -> Iterator[RawStdio]:
    """`symphony-mcp serve` with no display, initialized; stopped afterwards."""
    process = subprocess.Popen(
        [*serve_command(), "serve", "--virtual-display", "never"],
        env=base_env(**env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        server = RawStdio(process)
        assert server.send(json.dumps(INIT))["id"] == 1
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)
