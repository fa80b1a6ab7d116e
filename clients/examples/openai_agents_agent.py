"""An OpenAI Agents SDK agent that uses symphony-mcp's tools: screenshot -> find_text -> click_text.

    pip install -r clients/examples/requirements.txt
    DISPLAY=:0 python clients/examples/openai_agents_agent.py --model gpt-5-mini --phrase OK
    python clients/examples/openai_agents_agent.py --server-url http://127.0.0.1:8765/mcp --phrase OK

The SDK's MCP servers wait 5 s for a call by default (client_session_timeout_seconds): an OCR warm-up, a
`wait(7)` or an `open_app` outlives that and the call fails. This example raises it to --tool-timeout.
Prints the agent's final answer.
"""

from __future__ import annotations

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp
from example_args import build_parser, model_key, server_command, server_headers, task
from openai import AsyncOpenAI


async def main() -> None:
    args = build_parser(__doc__.splitlines()[0]).parse_args()
    set_tracing_disabled(True)  # traces go to OpenAI's platform otherwise, which a local model has no key for
    server: MCPServer
    if args.server_url:
        server = MCPServerStreamableHttp(
            {"url": args.server_url, "headers": server_headers(args), "timeout": args.tool_timeout},
            client_session_timeout_seconds=args.tool_timeout,
            name="symphony",
        )
    else:
        command = server_command(args)
        server = MCPServerStdio(
            {"command": command[0], "args": command[1:], "env": dict(os.environ)},  # DISPLAY and SYMPHONY_* too
            client_session_timeout_seconds=args.tool_timeout,
            name="symphony",
        )
    model = OpenAIChatCompletionsModel(args.model, AsyncOpenAI(base_url=args.model_url, api_key=model_key(args)))
    async with server:
        agent = Agent(
            name="desktop", instructions="You operate a computer through tools.", model=model, mcp_servers=[server]
        )
        result = await Runner.run(agent, task(args))
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
