"""How many bytes `tools/list` costs a host, as sent (concise schemas) and as the SDK would generate them.

Run from the repository root: `.venv/bin/python -m benchmarks.size.tools_list_size` (no display needed);
the report goes to benchmarks/results/tools_list_size.md and stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
from pathlib import Path

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ListToolsResult, Tool

from benchmarks.common import REPO
from symphony_mcp.config import load_settings
from symphony_mcp.server import build_server


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _row(label: str, tools: list[Tool]) -> str:
    total = len(ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True).encode())
    inputs = sum(_size(tool.input_schema) for tool in tools)
    outputs = sum(_size(tool.output_schema) for tool in tools if tool.output_schema)
    descriptions = sum(len((tool.description or "").encode()) for tool in tools)
    largest = max(tools, key=lambda tool: _size(tool.output_schema))
    return (
        f"| {label} | {total:,} | {inputs:,} | {outputs:,} | {descriptions:,} | "
        f"{largest.name} {_size(largest.output_schema):,} |"
    )


async def measure() -> str:
    server = build_server(load_settings())
    try:
        async with Client(server.mcp) as client:
            sent = (await client.list_tools()).tools
        generated = await MCPServer.list_tools(server.mcp)
    finally:
        server.close()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return "\n".join(
        [
            "# tools/list size",
            "",
            f"- Package source: git {commit.stdout.strip()}; {len(sent)} tools",
            "- Command: `.venv/bin/python -m benchmarks.size.tools_list_size`",
            "- Bytes of the JSON result as sent (compact JSON, UTF-8); schemas and descriptions summed over tools",
            "",
            "| listing | tools/list | input schemas | output schemas | descriptions | largest output schema |",
            "|---|---|---|---|---|---|",
            _row("as the SDK generates it", generated),
            _row("as sent (tools/listing.py)", sent),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "tools_list_size.md")
    args = parser.parse_args()
    report = asyncio.run(measure())
    args.output.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
