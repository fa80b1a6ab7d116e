"""A pydantic-ai agent that uses symphony-mcp's tools: screenshot -> find_text -> click_text.

    pip install -r clients/examples/requirements.txt
    DISPLAY=:0 python clients/examples/pydantic_ai_agent.py --model gpt-5-mini --phrase OK
    python clients/examples/pydantic_ai_agent.py --server-url http://127.0.0.1:8765/mcp --phrase OK

--strict turns on OpenAI strict tool schemas (every argument required, exact types), which symphony-mcp's
schemas support. Prints the agent's final answer.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace

from example_args import START_TIMEOUT, build_parser, model_key, server_command, server_headers, task
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
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
    parser = build_parser(__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="OpenAI strict tool schemas")
    args = parser.parse_args()
    if args.server_url:
        server = StreamableHttpTransport(args.server_url, headers=server_headers(args))
    else:
        command = server_command(args)
        server = StdioTransport(command[0], command[1:], env=dict(os.environ))  # DISPLAY and SYMPHONY_* too
    model = OpenAIChatModel(args.model, provider=OpenAIProvider(base_url=args.model_url, api_key=model_key(args)))
    # pydantic-ai waits 5 s for the server to start by default: too little for a server starting its own display.
    toolset = MCPToolset(
        server, tool_error_behavior="error", init_timeout=START_TIMEOUT, read_timeout=max(300, args.tool_timeout)
    )
    capabilities = [PrepareTools(strict)] if args.strict else []
    agent = Agent(model, toolsets=[toolset], capabilities=capabilities)
    result = await agent.run(task(args))
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
