"""How the orchestrator reaches a symphony-mcp server: spawn it over stdio, a URL, or in memory.

It talks to the server only through MCP, so it exercises exactly what any host gets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2  # the MCP SDK's HTTP client library
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

# What a spawned server inherits: the display, locale and home, and every symphony setting.
# PYTHONPATH: the spawned server runs the same package as this client (a checkout on the path), not another install.
_INHERITED = (
    "DISPLAY",
    "XAUTHORITY",
    "HOME",
    "PATH",
    "PYTHONPATH",
    "LANG",
    "LC_ALL",
    "USER",
    "LOGNAME",
    "XDG_STATE_HOME",
)


@dataclass(frozen=True)
class SpawnServer:
    """Start `symphony-mcp serve` as a child process over stdio (the default)."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    prefix: tuple[str, ...] = ()  # a command the server runs under, e.g. entering a benchmark environment


@dataclass(frozen=True)
class RemoteServer:
    """A running server's streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp."""

    url: str
    token: str | None = None


@dataclass(frozen=True)
class InMemoryServer:
    server: MCPServer


ServerConnection = SpawnServer | RemoteServer | InMemoryServer


def serve_command() -> list[str]:
    """This environment's `symphony-mcp` (not whatever PATH finds first)."""
    executable = Path(sys.executable).parent / "symphony-mcp"
    return [str(executable)] if executable.exists() else [sys.executable, "-m", "symphony_mcp.cli"]


def spawn_parameters(spawn: SpawnServer) -> StdioServerParameters:
    inherited = {k: v for k, v in os.environ.items() if k in _INHERITED or k.startswith("SYMPHONY_")}
    command, *rest = [*spawn.prefix, *serve_command()]
    return StdioServerParameters(command=command, args=[*rest, "serve", *spawn.args], env={**inherited, **spawn.env})


@asynccontextmanager
async def connect(connection: ServerConnection) -> AsyncIterator[Client]:
    if isinstance(connection, InMemoryServer):
        async with Client(connection.server) as client:
            yield client
    elif isinstance(connection, RemoteServer):
        headers = {"authorization": f"Bearer {connection.token}"} if connection.token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=600)) as http,
            Client(streamable_http_client(connection.url, http_client=http)) as client,
        ):
            yield client
    else:
        async with Client(spawn_parameters(connection)) as client:
            yield client
