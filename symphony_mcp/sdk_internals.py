"""The MCP SDK's private names this project uses (mcp 2.3.0), all here: an SDK upgrade touches this file only.

Everything else reaches the SDK through its public API: the server's own tool registry (`ToolPolicy.tools`)
answers whether a tool exists, and a server middleware clips the SDK's resource-read errors. What remains
has no public route in mcp 2.3.0; each item says why, and what upstream change would let it go. No upstream
issue tracks any of them yet (none found in modelcontextprotocol/python-sdk's tracker as stored here).
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

# 1. Stream types and constructor of a transport. The public `mcp.client.Transport` and
#    `Server.run(read_stream, write_stream, ...)` are typed with ReadStream / WriteStream, which live only in
#    private modules (mcp.shared._stream_protocols, re-exported by the private mcp.client._transport), and the
#    SDK's own transports build their streams with the private create_context_streams (memory streams that
#    carry the sender's contextvars). The SDK's TODO in mcp/client/streamable_http.py ("Put the
#    TransportStreams in a module under shared") is the change that would make them public.
from mcp.shared._context_streams import create_context_streams
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

__all__ = [
    "ReadStream",
    "TransportStreams",
    "WriteStream",
    "create_context_streams",
    "lowlevel_server",
    "registered_input_schema",
]

TransportStreams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
"""What a transport yields: messages from the peer (or errors reading them), messages to send it."""


def lowlevel_server(server: MCPServer) -> Server[Any]:
    """2. The low-level server under an MCPServer, to run it on this project's stdio transport.

    MCPServer.run_stdio_async always uses the SDK's stdio_server, and no public method runs an MCPServer on
    streams one supplies. Upstream, a `transport` argument to run_stdio_async (or a public `lowlevel_server`
    property) would remove this.
    """
    return server._lowlevel_server


def registered_input_schema(server: MCPServer, tool: str) -> dict[str, Any] | None:
    """3. A registered tool's input schema, the dict itself, to amend in place; None for an unknown tool.

    The SDK generates it from the function's signature, and that one dict is both what tools/list shows
    and what the Mcp-Param header check validates against (MCPServer._tool_input_schema). The public
    list_tools returns copies, and add_tool takes no schema: there is no public way to state what a
    signature cannot (a root `not`, bounds taken from settings). Upstream, an `input_schema` argument to
    add_tool (or a public get_tool) would remove this.
    """
    registered = server._tool_manager.get_tool(tool)
    return None if registered is None else registered.parameters
