"""The user's policy (README "Policies") through the real MCP client: tools on offer, open_app's allow-list."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.errors import PolicyError
from symphony_mcp.policy.programs import ProgramAllowList
from symphony_mcp.server import SymphonyServer, build_server
from tests.conftest import call_error, call_ok

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def served(**policy: Any) -> AsyncIterator[tuple[SymphonyServer, Client]]:
    server = build_server(load_settings(policy=policy))
    try:
        async with Client(server.mcp) as client:
            yield server, client
    finally:
        server.close()


async def offered(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_read_only_leaves_only_read_only_tools_and_names_the_setting() -> None:
    async with served() as (_, client):
        everything = await offered(client)
    async with served(read_only=True) as (_, client):
        tools = await offered(client)
        assert set(tools) == {n for n, t in everything.items() if t.annotations and t.annotations.read_only_hint}
        assert {"screenshot", "list_windows", "model_status"} <= set(tools) and "click" not in tools
        message = await call_error(client, "click", x=1, y=1)
        assert "turned off" in message and "policy.read_only" in message and "SYMPHONY_POLICY__READ_ONLY" in message
        message = await call_error(client, "open_app", target="xterm")
        assert "policy.read_only" in message
        await call_ok(client, "model_status")  # the server keeps serving


async def test_tools_and_groups_on_and_off() -> None:
    async with served(disabled_groups=["destructive"], disabled_tools=["wait"]) as (_, client):
        tools = await offered(client)
        assert not {"click", "type", "open_app", "close_window", "wait"} & set(tools)
        assert {"screenshot", "move_pointer", "focus_window"} <= set(tools)
        assert "'destructive' is listed in policy.disabled_groups" in await call_error(client, "hotkey", keys=["a"])
        assert "policy.disabled_tools" in await call_error(client, "wait", seconds=0)
    # Module groups: the tools of tools/windows.py, plus one tool by name.
    async with served(enabled_groups=["windows"], enabled_tools=["screenshot"]) as (_, client):
        assert set(await offered(client)) == {"list_windows", "focus_window", "close_window", "open_app", "screenshot"}
        assert "policy.enabled_groups" in await call_error(client, "model_status")


async def test_a_tool_added_later_joins_its_groups() -> None:
    async with served(disabled_groups=["destructive"]) as (server, client):

        async def later_tool() -> str:  # no annotations: the MCP default is destructive
            return "ran"

        async def later_look() -> str:
            return "looked"

        server.mcp.add_tool(later_tool)
        server.mcp.tool(annotations=_read_only())(later_look)
        tools = await offered(client)
        assert "later_tool" not in tools and "later_look" in tools
        assert "policy.disabled_groups" in await call_error(client, "later_tool")
        assert not (await client.call_tool("later_look", {})).is_error


def _read_only() -> Any:
    from mcp.types import ToolAnnotations

    return ToolAnnotations(readOnlyHint=True)


def test_names_that_match_nothing_refuse_to_start() -> None:
    with pytest.raises(ValueError, match=r"policy.disabled_tools .* names 'clik'.*click"):
        build_server(load_settings(policy={"disabled_tools": ["clik"]}))
    with pytest.raises(ValueError, match=r"policy.enabled_groups .* names 'actoins'.*actions.*destructive"):
        build_server(load_settings(policy={"enabled_groups": ["actoins"]}))


def test_policy_settings_from_environment_file_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from symphony_mcp.cli import build_parser, settings_from_args

    config = tmp_path / "symphony.toml"
    config.write_text('[policy]\nread_only = true\ndisabled_groups = ["windows"]\n')
    monkeypatch.setenv("SYMPHONY_POLICY__OPEN_APP_ALLOW", '["xterm", "~/Documents"]')
    settings = settings_from_args(build_parser().parse_args(["serve", "--config", str(config)]))
    assert settings.policy.read_only and settings.policy.disabled_groups == ["windows"]
    assert settings.policy.open_app_allow == ["xterm", "~/Documents"]
    monkeypatch.setenv("SYMPHONY_POLICY__OPEN_APP_ALLOW", "xterm, gedit")  # comma-separated works too
    args = ["serve", "--disabled-tools", "key_down,key_up", "--enabled-groups", "read-only", "--read-only"]
    settings = settings_from_args(build_parser().parse_args(args))
    assert settings.policy.open_app_allow == ["xterm", "gedit"]
    assert settings.policy.disabled_tools == ["key_down", "key_up"] and settings.policy.enabled_groups == ["read-only"]


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A PATH of one directory: `tool` (a script), `alias` (a symlink to it, like busybox's applets)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tool").write_text("#!/bin/sh\n")
    (bin_dir / "tool").chmod(0o755)
    (bin_dir / "alias").symlink_to(bin_dir / "tool")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    yield bin_dir


def test_allow_list_matches_the_program_that_would_run(programs: Path, tmp_path: Path) -> None:
    allow = ProgramAllowList(("tool", "/usr/bin/env"))
    allow.check("command", ["tool", "--any", "arguments"])
    allow.check("command", [str(programs / "tool")])  # the same file by its path
    allow.check("command", ["env"])  # /usr/bin/env on PATH
    with pytest.raises(PolicyError, match=r"may not start .*alias.*SYMPHONY_POLICY__OPEN_APP_ALLOW.*allowed: 'tool'"):
        allow.check("command", ["alias"])  # same file on disk, another name: not the same program
    lookalike = tmp_path / "elsewhere" / "tool"
    lookalike.parent.mkdir()
    shutil.copy(programs / "tool", lookalike)
    with pytest.raises(PolicyError, match="may not start"):
        allow.check("command", [str(lookalike)])  # a file named like an allowed program, not on its place
    with pytest.raises(PolicyError, match="may not start"):
        allow.check("desktop-entry", ["sh", "-c", "tool"])
    with pytest.raises(PolicyError, match="allows nothing"):
        ProgramAllowList(()).check("command", ["tool"])
    ProgramAllowList(None).check("command", ["sh"])  # no list: anything, as before


def test_allow_list_opens_files_only_under_allowed_directories(tmp_path: Path) -> None:
    documents = tmp_path / "Documents"
    documents.mkdir()
    (documents / "notes.txt").write_text("hi")
    (documents / "passwd").symlink_to("/etc/passwd")
    allow = ProgramAllowList((str(documents), "xdg-open"))
    allow.check("file", ["xdg-open", str(documents / "notes.txt")])
    with pytest.raises(PolicyError, match="may not open '/etc/passwd'"):
        allow.check("file", ["xdg-open", str(documents / "passwd")])  # the link is resolved
    with pytest.raises(PolicyError, match="may not open"):
        allow.check("file", ["xdg-open", str(documents / ".." / "other.txt")])
    with pytest.raises(PolicyError, match="only under the directories"):
        ProgramAllowList(("xdg-open",)).check("file", ["xdg-open", str(documents / "notes.txt")])


async def test_open_app_allow_list_over_mcp(xdisplay: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMPHONY_POLICY__OPEN_APP_ALLOW", "xterm")
    marker = tmp_path / "ran"
    server = build_server(load_settings())
    try:
        async with Client(server.mcp) as client:
            message = await call_error(client, "open_app", target=f"sh -c 'touch {marker}'")
            assert "may not start '" in message and "/sh'" in message and "SYMPHONY_POLICY__OPEN_APP_ALLOW" in message
            message = await call_error(client, "open_app", target="/etc/passwd")
            assert "may not open '/etc/passwd'" in message
            tools = await offered(client)
            assert tools["open_app"].annotations.destructive_hint is True  # it runs programs: not harmless
            assert tools["open_app"].annotations.open_world_hint is True
            opened = await call_ok(client, "open_app", target="xterm -T AllowedByPolicy -geometry 40x5+50+50")
            assert [w["title"] for w in opened["new_windows"]] == ["AllowedByPolicy"]
            await call_ok(client, "close_window", window_id=opened["new_windows"][0]["id"])
            history = (await call_ok(client, "action_history"))["records"]
            refused = [r for r in history if r["action"] == "open" and not r["ok"]]
            assert len(refused) == 2 and "may not" in refused[0]["error"]
            assert not marker.exists()
    finally:
        server.close()
