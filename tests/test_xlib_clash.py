"""python3-xlib 0.15 (what pyautogui requires) ships an `Xlib` package that replaces python-xlib 0.33's when it is
installed after it; with it every X connection wanted ~/.Xauthority and, without DISPLAY, the server died at start.
Here that Xlib comes first on the path: the server must start, and every tool that needs the display must name the
clash and the fix instead."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.server_process import base_env

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def old_xlib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("python3-xlib")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, "python3-xlib==0.15"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


@asynccontextmanager
async def server_with(old_xlib: Path, **env: str) -> AsyncIterator[Client]:
    path = os.pathsep.join([str(old_xlib), str(ROOT)])
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "symphony_mcp", "serve"], env=base_env(PYTHONPATH=path, **env)
    )
    async with Client(params) as client:
        yield client


async def assert_clash_named(client: Client) -> None:
    for tool, arguments in (("click", {"x": 10, "y": 10}), ("hotkey", {"keys": ["esc"]})):
        result = await client.call_tool(tool, arguments)
        assert result.is_error, tool
        message = result.content[0].text  # type: ignore[union-attr]
        assert "python3-xlib" in message and "pip uninstall -y python3-xlib" in message, message
    assert (await client.list_tools()).tools  # still serving


async def test_old_xlib_on_a_given_display_is_named_with_its_fix(old_xlib: Path, xdisplay: VirtualDisplay) -> None:
    async with server_with(old_xlib, DISPLAY=xdisplay.name) as client:
        await assert_clash_named(client)


async def test_old_xlib_without_display_still_starts_its_own(old_xlib: Path) -> None:
    async with server_with(old_xlib) as client:  # no DISPLAY: the server starts Xvfb and waits for its manager
        await assert_clash_named(client)
