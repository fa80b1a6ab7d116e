"""The MCP Python SDK 1.x client as a host runs it, for tests/test_client_matrix.py (runs in .venv-clients).

Usage: python python_sdk1_host.py SCENARIO_JSON stdio COMMAND ARGS... | ... SCENARIO_JSON http URL
SCENARIO_JSON: {"phrase", "text", "entry": [x, y] in screen pixels}. Prints a JSON report on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(name, arguments)
    if result.isError:
        raise RuntimeError(f"{name} failed: {result.content}")
    return result


async def main() -> None:
    scenario = json.loads(sys.argv[1])
    kind, target = sys.argv[2], sys.argv[3:]
    async with AsyncExitStack() as stack:
        if kind == "stdio":
            params = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            read, write, _ = await stack.enter_async_context(streamablehttp_client(target[0]))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        tools = [tool.name for tool in (await session.list_tools()).tools]
        shot = await call(session, "screenshot", {})
        found = (await call(session, "find_text", {"phrase": scenario["phrase"]})).structuredContent
        center = found["matches"][0]["center"]  # straight from one result into the next call
        click = (await call(session, "click", {"x": center["x"], "y": center["y"]})).structuredContent
        x, y = scenario["entry"]
        arguments = {"text": scenario["text"], "x": x, "y": y, "space": "screen", "overwrite": True}
        typed = await call(session, "type", arguments)
    report = {
        "tools": tools,
        "image_types": [block.type for block in shot.content],
        "frame_id": shot.structuredContent["frame_id"],
        "center": center,
        "click": click,
        "typed": typed.structuredContent,
    }
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
