"""Tool calls through the real MCP client that must succeed or must fail: the result or the error text."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call_ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error; return the error text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]


async def run_code(client: Client, language: str, code: str, **arguments: Any) -> dict[str, Any]:
    """`run_code` that must succeed; its result."""
    return await call_ok(client, "run_code", language=language, code=code, **arguments)
