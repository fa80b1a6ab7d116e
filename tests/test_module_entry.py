"""`python -m symphony_mcp`, the form many MCP host configs use, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from symphony_mcp import __version__
from testkit.server_process import base_env
from testkit.tool_names import EXPECTED_TOOLS

pytestmark = pytest.mark.anyio


def run_module(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Run outside the checkout so the installed package answers, not a directory that happens to be cwd.
    return subprocess.run(
        [sys.executable, "-m", "symphony_mcp", *args],
        cwd=cwd,
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_version_and_help(tmp_path: Path) -> None:
    version = run_module("--version", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"symphony-mcp {__version__}"
    usage = run_module("serve", "--help", cwd=tmp_path)
    assert usage.returncode == 0, usage.stderr
    assert usage.stdout.startswith("usage: symphony-mcp serve") and "--transport" in usage.stdout


async def test_serves_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "symphony_mcp", "serve", "--virtual-display", "never"],
        env=base_env(),
        cwd=tmp_path,
    )
    async with Client(params) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == EXPECTED_TOOLS
