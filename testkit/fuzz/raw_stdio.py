"""A minimal JSON-RPC client over the server's stdin/stdout that sends what the MCP client cannot.

The SDK's client serialises NaN and Infinity as null and refuses lone surrogates; a hostile client sends them
as raw JSON tokens (`NaN`, `Infinity`, `"\\ud800"`), which Python's json module writes from floats and str, and
arrays nested deeper than Python's json can write (`values.Nested`), and requests with ids JSON-RPC does not allow.
It offers `call_tool` like `mcp.Client`, so the harness checks it the same way.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ErrorData, ListResourceTemplatesResult, ListToolsResult

from testkit.fuzz.values import Nested

PROTOCOL_VERSION = "2025-06-18"
MAX_LINE = 64 * 1024 * 1024
_NESTED = re.compile(r'"\\u2063nested-(\d+)\\u2063"')  # a Nested token as json.dumps writes it (ensure_ascii)


class RawStdioClient:
    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = BufferedByteReceiveStream(process.stdout)
        self.next_id = 0

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, params: StdioServerParameters) -> AsyncIterator[RawStdioClient]:
        process = await anyio.open_process([params.command, *params.args], env=params.env, cwd=params.cwd, stderr=None)
        try:
            client = cls(process)
            await client.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "symphony-fuzz-raw", "version": "0"},
                },
            )
            await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield client
        finally:
            await process.stdin.aclose() if process.stdin else None
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()

    async def send(self, message: dict[str, Any]) -> None:
        # allow_nan writes NaN/Infinity tokens; ensure_ascii writes lone surrogates as \\ud800 escapes.
        line = json.dumps(message, allow_nan=True, ensure_ascii=True, default=_token)
        line = _NESTED.sub(lambda found: "[" * int(found.group(1)) + "]" * int(found.group(1)), line) + "\n"
        await self.stdin.send(line.encode("ascii"))

    async def call_with_invalid_id(self, request_id: Any, name: str, arguments: dict[str, Any]) -> None:
        """A tools/call whose id is not a string or an integer: the answer must be an error with id null (raised
        as MCPError); a result, or an error with another id, is a protocol violation (AssertionError)."""
        params = {"name": name, "arguments": arguments}
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        while True:
            message = json.loads(await self.stdout.receive_until(b"\n", MAX_LINE))
            if "id" not in message:
                continue  # a notification
            if message["id"] is not None or "error" not in message:
                raise AssertionError(f"a request with id {request_id!r} was answered with {str(message)[:300]}")
            raise MCPError.from_error_data(ErrorData.model_validate(message["error"]))

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and wait for the answer with its id; a JSON-RPC error is raised as MCPError."""
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = await self.stdout.receive_until(b"\n", MAX_LINE)
            message = json.loads(line)
            if message.get("id") != self.next_id:
                continue  # a notification or a request from the server
            if "error" in message:
                raise MCPError.from_error_data(ErrorData.model_validate(message["error"]))
            return message["result"]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return CallToolResult.model_validate(await self.request("tools/call", {"name": name, "arguments": arguments}))

    async def read_resource(self, uri: str) -> Any:
        return await self.request("resources/read", {"uri": uri})

    async def list_tools(self) -> ListToolsResult:
        return ListToolsResult.model_validate(await self.request("tools/list", {}))

    async def list_resource_templates(self) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult.model_validate(await self.request("resources/templates/list", {}))


def _token(value: Any) -> str:
    if isinstance(value, Nested):
        return value.token
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
