"""The real MCP Inspector CLI (from npm) lists the tools and calls screenshot on the stdio server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.server_process import serve_command
from testkit.tool_names import EXPECTED_TOOLS

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"


def inspector(display: str, *args: str) -> dict:
    if shutil.which("npx") is None:
        if os.environ.get("CI"):
            pytest.fail("npx is required in CI (apt-get install nodejs npm)")
        pytest.skip("npx not installed")
    command = serve_command()
    result = subprocess.run(
        ["npx", "-y", INSPECTOR, "--cli", "-e", f"DISPLAY={display}", *command, "serve", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.inspector
def test_inspector_lists_tools_and_takes_screenshot(xdisplay: VirtualDisplay) -> None:
    listed = inspector(xdisplay.name, "--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == EXPECTED_TOOLS
    shot = inspector(
        xdisplay.name, "--method", "tools/call", "--tool-name", "screenshot", "--tool-arg", "max_width=640"
    )
    assert shot.get("isError") in (None, False)
    image = next(block for block in shot["content"] if block["type"] == "image")
    assert image["mimeType"] == "image/jpeg" and len(image["data"]) > 1000
    assert shot["structuredContent"]["image_width"] == 640
