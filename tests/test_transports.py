"""The server as hosts use it: `symphony-mcp serve` over stdio and streamable HTTP, as a real subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.server_process import ServerProcess, base_env, names, serve_command, wait_gone
from tests.conftest import wait_for

pytestmark = pytest.mark.anyio

EXPECTED_TOOLS = {
    "elements",
    "find_element",
    "screenshot",
    "screen_info",
    "click",
    "move_pointer",
    "drag_and_drop",
    "scroll",
    "type",
    "hotkey",
    "hold_and_press",
    "key_down",
    "key_up",
    "wait",
    "action_history",
    "list_windows",
    "run_code",
    "focus_window",
    "close_window",
    "open_app",
    "ocr",
    "find_text",
    "click_text",
    "locate_cursor",
    "highlight_text_span",
    "locate",
    "model_status",
    "start_task",
    "end_task",
    "list_tasks",
    "record_step",
    "reflect",
    "memory_audit",
    "check_loop",
    "code_agent",
    "search_tutorial",
    "search_docs",
}
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


def stdio_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    command, *prefix = serve_command()
    return StdioServerParameters(command=command, args=[*prefix, "serve", *args], env=env)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@asynccontextmanager
async def http_server(*args: str, display: str) -> AsyncIterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [*serve_command(), "serve", "--transport", "http", "--port", str(port), *args],
        env=base_env(DISPLAY=display),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: port_open(port) or process.poll() is not None, timeout=20)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


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
