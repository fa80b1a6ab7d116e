"""A LangGraph agent that uses symphony-mcp's tools through langchain-mcp-adapters: screenshot -> find_text ->
click_text.

    pip install -r clients/examples/requirements.txt
    DISPLAY=:0 python clients/examples/langgraph_agent.py --model gpt-5-mini --phrase OK
    python clients/examples/langgraph_agent.py --server-url http://127.0.0.1:8765/mcp --phrase OK

The graph is the usual tool loop: the model node answers or asks for tool calls, the tool node runs them on
the MCP server, and the answer goes back to the model. Prints the agent's final answer.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from typing import Any

from example_args import build_parser, model_key, server_command, server_headers, task
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


async def main() -> None:
    args = build_parser(__doc__.splitlines()[0]).parse_args()
    # Each call gets --tool-timeout: the MCP session's read timeout bounds every request.
    session = {"read_timeout_seconds": timedelta(seconds=args.tool_timeout)}
    connection: dict[str, Any]
    if args.server_url:
        connection = {
            "transport": "streamable_http",
            "url": args.server_url,
            "headers": server_headers(args),
            "session_kwargs": session,
        }
    else:
        command = server_command(args)
        env = dict(os.environ)  # DISPLAY and SYMPHONY_* too
        connection = {"transport": "stdio", "command": command[0], "args": command[1:], "env": env}
        connection["session_kwargs"] = session
    client = MultiServerMCPClient({"symphony": connection})  # type: ignore[dict-item]
    # One session for the whole run: symphony-mcp keeps state per session (the latest screenshot's space, the
    # recorded task), and get_tools() alone would start a new session, a new stdio server, for every call.
    async with client.session("symphony") as session:
        tools = await load_mcp_tools(session)
        model = ChatOpenAI(model=args.model, base_url=args.model_url, api_key=model_key(args)).bind_tools(tools)

        async def think(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", think)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
        result = await graph.compile().ainvoke({"messages": [("user", task(args))]})
    print(result["messages"][-1].content)


if __name__ == "__main__":
    asyncio.run(main())
