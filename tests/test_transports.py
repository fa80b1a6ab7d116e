"""The server as hosts use it: `symphony-mcp serve` over stdio and streamable HTTP, as a real subprocess."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.stdio_transport import PIPE_BUFFER_BYTES
from testkit.http_server import http_server
from testkit.raw_jsonrpc import INIT, MCP_HEADERS, raw_stdio_server
from testkit.server_process import ServerProcess, base_env, names, serve_command, stdio_params, wait_gone
from testkit.tool_names import EXPECTED_TOOLS

pytestmark = pytest.mark.anyio

READ_ONLY_TOOLS = {
    "elements",
    "find_element",
    "screenshot",
    "screen_info",
    "wait",
    "action_history",
    "list_windows",
    "ocr",
    "find_text",
    "locate",
    "model_status",
    "list_tasks",
    "memory_audit",
    "check_loop",
    "search_tutorial",
    "search_docs",
}


async def check_tools_and_errors(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == EXPECTED_TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 20, name
        assert tool.annotations is not None, name
        assert tool.annotations.read_only_hint is (name in READ_ONLY_TOOLS), name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None, name
    assert tools["click"].annotations.destructive_hint is True
    # Either a description or x, y: neither is required by the schema, the tool checks the pair.
    assert "required" not in tools["click"].input_schema
    assert {"description", "x", "y"} <= set(tools["click"].input_schema["properties"])
    shot = await client.call_tool("screenshot", {})
    assert not shot.is_error and shot.content[0].type == "image"
    assert shot.structured_content and shot.structured_content["frame_id"]
    bad = await client.call_tool("click", {"x": -5, "y": 10})
    assert bad.is_error and "outside the screenshot" in bad.content[0].text
    bad = await client.call_tool("click", {"x": "left", "y": 10})
    assert bad.is_error
    ok = await client.call_tool("move_pointer", {"x": 10, "y": 10})
    assert not ok.is_error
    for result in (ok, await client.call_tool("list_windows", {}), await client.call_tool("screen_info", {})):
        # The text copy of a structured result is compact JSON: hosts that read the text pay for every byte.
        [text] = [block.text for block in result.content if block.type == "text"]  # type: ignore[union-attr]
        assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))


async def test_stdio_server(xdisplay: VirtualDisplay) -> None:
    async with Client(stdio_params(env=base_env(DISPLAY=xdisplay.name))) as client:
        await check_tools_and_errors(client)


def test_stdio_reply_pipe_holds_a_screenshot() -> None:
    """The server widens the pipe it answers on from Linux's 64 KiB, so a screenshot's ~270 KB reply line is one
    write rather than a slice at a time as the client drains it; replies still arrive whole."""
    with raw_stdio_server() as server:
        assert server.process.stdout is not None
        assert fcntl.fcntl(server.process.stdout.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_BUFFER_BYTES
        assert server.send('{"jsonrpc":"2.0","id":2,"method":"ping"}') == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_stdio_server_starts_and_stops_its_own_display() -> None:
    # Its own children, not every Xvfb on the machine: other test runs may start and stop theirs meanwhile.
    server = ServerProcess("--resolution", "1280x720", env=base_env())  # no DISPLAY: a virtual one is started
    async with Client(server) as client:
        info = (await client.call_tool("screen_info", {})).structured_content
        assert info is not None
        assert info["screen_rect"]["width"] == 1280 and info["screen_rect"]["height"] == 720
        assert info["display"] not in (None, os.environ.get("DISPLAY"))
        display = server.children()
        assert names(display) == ["Xvfb", "at-spi-bus-laun", "dbus-daemon", "openbox"]
        windows = await client.call_tool("list_windows", {})
        assert not windows.is_error  # openbox is running there
    assert server.returncode == 0
    assert wait_gone(display) == set()


async def test_no_display_gives_clear_errors_and_server_keeps_serving() -> None:
    async with Client(stdio_params("--virtual-display", "never", env=base_env())) as client:
        for _ in range(2):
            result = await client.call_tool("screenshot", {})
            assert result.is_error
            assert "no display" in result.content[0].text and "--virtual-display" in result.content[0].text
        assert len((await client.list_tools()).tools) == len(EXPECTED_TOOLS)


async def test_http_server_with_token(xdisplay: VirtualDisplay) -> None:
    async with http_server("--token", "s3cret-token", display=xdisplay.name) as url:
        async with (
            httpx.AsyncClient(headers={"authorization": "Bearer s3cret-token"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            await check_tools_and_errors(client)
        async with httpx.AsyncClient() as http:
            missing = await http.post(url, json=INIT, headers=MCP_HEADERS)
            assert missing.status_code == 401 and "Bearer" in missing.headers["www-authenticate"]
            wrong = await http.post(url, json=INIT, headers={**MCP_HEADERS, "authorization": "Bearer nope"})
            assert wrong.status_code == 401
            rebinding = await http.post(
                url, json=INIT, headers={**MCP_HEADERS, "authorization": "Bearer s3cret-token", "host": "evil.example"}
            )
            assert rebinding.status_code in (400, 403, 421)
            good = await http.post(url, json=INIT, headers={**MCP_HEADERS, "authorization": "Bearer s3cret-token"})
            assert good.status_code == 200


async def test_http_loopback_without_token_refuses_foreign_host(xdisplay: VirtualDisplay) -> None:
    async with http_server(display=xdisplay.name) as url:
        async with Client(url) as client:
            assert len((await client.list_tools()).tools) == len(EXPECTED_TOOLS)
        async with httpx.AsyncClient() as http:
            rebinding = await http.post(url, json=INIT, headers={**MCP_HEADERS, "host": "attacker.example:80"})
            assert rebinding.status_code in (400, 403, 421)


def test_http_beyond_loopback_requires_token() -> None:
    result = subprocess.run(
        [*serve_command(), "serve", "--transport", "http", "--host", "0.0.0.0", "--virtual-display", "never"],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert "requires a token" in result.stderr


def test_invalid_settings_are_reported() -> None:
    result = subprocess.run(
        [*serve_command(), "serve", "--resolution", "huge"], env=base_env(), capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "resolution must look like 1920x1080" in result.stderr
