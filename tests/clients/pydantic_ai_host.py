"""pydantic-ai as an MCP host with OpenAI strict tool schemas, for tests/test_client_matrix.py (in .venv-clients).

Usage: python pydantic_ai_host.py MODEL_URL stdio COMMAND ARGS... | ... MODEL_URL http URL
The model is the test's stand-in OpenAI-compatible server (testkit/model_server.py): it reads the tools
and results this agent sends it and answers with the tool calls. Prints the agent's final text.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import replace

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition


def strict(ctx: RunContext[None], tools: list[ToolDefinition]) -> list[ToolDefinition]:
    """OpenAI strict schemas on for every tool, as a host that wants exact arguments sets them."""
    return [replace(tool, strict=True) for tool in tools]


async def main() -> None:
    model_url, kind, target = sys.argv[1], sys.argv[2], sys.argv[3:]
    server = StdioTransport(target[0], target[1:], env=dict(os.environ)) if kind == "stdio" else target[0]
    model = OpenAIChatModel("stand-in", provider=OpenAIProvider(base_url=model_url, api_key="unused"))
    toolset = MCPToolset(server, tool_error_behavior="error")
    agent = Agent(model, toolsets=[toolset], capabilities=[PrepareTools(strict)])
    result = await agent.run("Press the 'Press me' button, then type the text into the entry field.")
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
