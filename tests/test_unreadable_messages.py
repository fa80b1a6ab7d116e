"""Lines the SDK cannot parse get a JSON-RPC error at once, over stdio and HTTP, and the server keeps serving."""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.test_transports import INIT, MCP_HEADERS, base_env, http_server, serve_command

pytestmark = pytest.mark.anyio

LONE_SURROGATE = '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"note":"\\ud800"}}'
BATCH = '[{"jsonrpc":"2.0","id":2,"method":"ping"}]'
UNREADABLE = (
    ("{not json", None, -32700),
    (BATCH, None, -32600),
    (LONE_SURROGATE, 3, -32700),
    ('{"jsonrpc":"2.0","id":5,"method":7}', 5, -32600),
)


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

    def send(self, line: str) -> dict[str, Any]:
        """Write one line and return the server's reply to it."""
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        return read_reply(self.process)


@contextlib.contextmanager
def raw_stdio_server() -> Iterator[RawStdio]:
    """`symphony-mcp serve` with no display, initialized; stopped afterwards."""
    process = subprocess.Popen(
        [*serve_command(), "serve", "--virtual-display", "never"],
        env=base_env(),
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


def test_stdio_answers_lines_it_cannot_parse() -> None:
    with raw_stdio_server() as server:
        for line, request_id, code in UNREADABLE:
            reply = server.send(line)
            assert reply["id"] == request_id and reply["error"]["code"] == code, (line, reply)
            assert len(reply["error"]["message"]) < 300
        assert server.send('{"jsonrpc":"2.0","id":9,"method":"ping"}') == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_http_answers_bodies_it_cannot_parse() -> None:
    async with http_server("--virtual-display", "never", display="") as url, httpx.AsyncClient() as http:
        for body, _, code in UNREADABLE:
            response = await http.post(url, content=body.encode(), headers=MCP_HEADERS, timeout=20)
            assert response.status_code == 400, (body, response.status_code, response.text[:300])
            assert response.json()["error"]["code"] in (code, -32602), (body, response.json())
