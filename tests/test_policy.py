"""The user's policy (README "Policies") through the real MCP client: tools on offer, open_app's allow-list."""

from __future__ import annotations

import json
import os
import re
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
from testkit.http_server import http_server
from testkit.mcp_calls import call_error, call_ok
from testkit.mime import set_default
from testkit.waiting import wait_for

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
    allow.check(["tool"])
    allow.check([str(programs / "tool")])  # the same file by its path
    allow.check(["env"])  # /usr/bin/env on PATH
    with pytest.raises(PolicyError, match=r"may not start .*alias.*SYMPHONY_POLICY__OPEN_APP_ALLOW.*allowed: 'tool'"):
        allow.check(["alias"])  # same file on disk, another name: not the same program
    lookalike = tmp_path / "elsewhere" / "tool"
    lookalike.parent.mkdir()
    shutil.copy(programs / "tool", lookalike)
    with pytest.raises(PolicyError, match="may not start"):
        allow.check([str(lookalike)])  # a file named like an allowed program, not on its place
    with pytest.raises(PolicyError, match=r"may not start '.*/sh'"):
        allow.check(["sh", "tool"])  # every program that runs must be allowed, not only the first
    with pytest.raises(PolicyError, match="allows nothing"):
        ProgramAllowList(()).check(["tool"])
    ProgramAllowList(None).check(["sh"])  # no list: anything, as before


def test_allow_list_opens_files_only_under_allowed_directories_with_allowed_programs(tmp_path: Path) -> None:
    documents = tmp_path / "Documents"
    documents.mkdir()
    (documents / "notes.txt").write_text("hi")
    (documents / "passwd").symlink_to("/etc/passwd")
    allow = ProgramAllowList((str(documents), "xmessage"))
    allow.check(["xmessage"], documents / "notes.txt", "xmessage.desktop")
    with pytest.raises(PolicyError, match="may not open '/etc/passwd'"):
        allow.check(["xmessage"], documents / "passwd", "xmessage.desktop")  # the link is resolved
    with pytest.raises(PolicyError, match="may not open"):
        allow.check(["xmessage"], documents / ".." / "other.txt", "xmessage.desktop")
    with pytest.raises(PolicyError, match="only under the directories"):
        ProgramAllowList(("xmessage",)).check(["xmessage"], documents / "notes.txt", "xmessage.desktop")
    with pytest.raises(PolicyError, match=r"would open with vim.desktop .*'/usr/bin/xterm', '/usr/bin/vim' are not"):
        allow.check(["xterm", "vim"], documents / "notes.txt", "vim.desktop (Vim)")


def processes_naming(path: Path) -> list[str]:
    """Command lines of running processes that mention `path` (read from /proc, as ps does)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        if any(str(path).encode() in w for w in words):
            found.append(" ".join(w.decode(errors="replace") for w in words))
    return found


async def test_an_allowed_directory_opens_files_only_with_allowed_programs(
    xdisplay: object, mime_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 item 5: a text file whose default is vim (a terminal app) must not start a terminal and vim."""
    if not (shutil.which("vim") and shutil.which("x-terminal-emulator") and shutil.which("xmessage")):
        pytest.fail("this test needs vim, xterm (x-terminal-emulator) and x11-utils (xmessage) installed")
    documents = tmp_path / "Documents"
    documents.mkdir()
    notes = documents / "notes.txt"
    notes.write_text("just notes\n")
    set_default(mime_home, "text/plain", "vim.desktop")
    monkeypatch.setenv("SYMPHONY_POLICY__OPEN_APP_ALLOW", f"xmessage,{documents}")
    server = build_server(load_settings())
    try:
        async with Client(server.mcp) as client:
            message = await call_error(client, "open_app", target=str(notes))
            assert f"may not open '{notes}'" in message and "would open with vim.desktop" in message
            assert "default application for text/plain, a terminal application run in x-terminal-emulator" in message
            assert "'/usr/bin/x-terminal-emulator', '/usr/bin/vim' are not allowed" in message
            assert "SYMPHONY_POLICY__OPEN_APP_ALLOW" in message and "xdg-mime default" in message
            assert processes_naming(notes) == []  # nothing was started: no terminal, no vim
            set_default(mime_home, "text/plain", "xmessage-file.desktop")  # an allowed program as the default
            opened = await call_ok(client, "open_app", target=str(notes), wait_seconds=10)
            assert opened["command"] == [shutil.which("xmessage"), "-title", "OpenedByDefault", "-file", str(notes)]
            assert opened["opened_with"].startswith("xmessage-file.desktop (Message file), the default application")
            assert [w["title"] for w in opened["new_windows"]] == ["OpenedByDefault"]
            await call_ok(client, "close_window", window_id=opened["new_windows"][0]["id"])
            wait_for(lambda: not processes_naming(notes))
    finally:
        server.close()


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
            assert opened["command"][0] == shutil.which("xterm") and opened["opened_with"] is None
            await call_ok(client, "close_window", window_id=opened["new_windows"][0]["id"])
            history = (await call_ok(client, "action_history"))["records"]
            refused = [r for r in history if r["action"] == "open" and not r["ok"]]
            assert len(refused) == 2 and "may not" in refused[0]["error"]
            assert not marker.exists()
    finally:
        server.close()


async def test_time_bounds_stop_a_call_and_the_server_keeps_serving(xdisplay: object) -> None:
    # The bound is wide enough that the second wait (of nothing) ends within it on a loaded machine too.
    async with served(timeouts={"wait": 2.0}) as (_, client):
        message = await call_error(client, "wait", seconds=10)
        assert "time bound of 2 s" in message and "policy.timeouts.wait" in message
        await call_ok(client, "wait", seconds=0)
    async with served(timeout_seconds=0.3) as (_, client):
        message = await call_error(client, "wait", seconds=5)
        assert "policy.timeout_seconds (SYMPHONY_POLICY__TIMEOUT_SECONDS" in message
        await call_ok(client, "screen_info")


def buttons_down() -> int:
    from Xlib import X, display

    connection = display.Display()
    try:
        mask: int = connection.screen().root.query_pointer().mask
        return mask & (X.Button1Mask | X.Button2Mask | X.Button3Mask)
    finally:
        connection.close()


async def test_a_time_bound_never_leaves_an_action_half_done(xdisplay: object) -> None:
    """The bound falls in the middle of a 2 s drag: the drag still ends (button up) and is recorded."""
    async with served(timeouts={"drag_and_drop": 0.3}) as (_, client):
        before = (await call_ok(client, "action_history"))["records"]
        drag = {"start_x": 300, "start_y": 300, "end_x": 700, "end_y": 500, "space": "screen", "duration": 2.0}
        result = await client.call_tool("drag_and_drop", drag)
        assert not result.is_error or "time bound" in result.content[0].text  # type: ignore[union-attr]
        info = await call_ok(client, "screen_info", space="screen")  # queued behind the drag on the desktop thread
        assert (info["cursor"]["x"], info["cursor"]["y"]) == (700, 500)
        assert buttons_down() == 0
        records = (await call_ok(client, "action_history"))["records"][len(before) :]
        assert [(r["action"], r["ok"]) for r in records] == [("drag_and_drop", True)]


class Host:
    """An elicitation callback that answers as a person would, and remembers what it was asked."""

    def __init__(self, action: str, allow: bool = True) -> None:
        self.action = action
        self.allow = allow
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        self.asked.append(params.message)
        return ElicitResult(action=self.action, content={"allow": self.allow} if self.action == "accept" else None)


async def history_length(client: Client) -> int:
    return len((await call_ok(client, "action_history"))["records"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 (input-required rounds) and the handshake era
async def test_destructive_actions_wait_for_the_users_confirmation(xdisplay: object, mode: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    server = build_server(load_settings(policy={"confirm_groups": ["destructive"], "audit_file": str(audit)}))
    try:
        yes, no = Host("accept"), Host("decline")
        async with Client(server.mcp, mode=mode, elicitation_callback=yes) as client:
            assert client.protocol_version == {"auto": "2026-07-28", "legacy": "2025-11-25"}[mode]
            done = await history_length(client)
            await call_ok(client, "hotkey", keys=["shift"])
            assert len(yes.asked) == 1 and "'hotkey'" in yes.asked[0] and "shift" in yes.asked[0]
            assert await history_length(client) == done + 1
            await call_ok(client, "move_pointer", x=5, y=5)  # not destructive: nobody is asked
            assert len(yes.asked) == 1
        async with Client(server.mcp, mode=mode, elicitation_callback=no) as client:
            done = await history_length(client)
            message = await call_error(client, "hotkey", keys=["shift"])
            assert "declined" in message and "nothing was done" in message and len(no.asked) == 1
            assert await history_length(client) == done
        async with Client(server.mcp, mode=mode, elicitation_callback=Host("accept", allow=False)) as client:
            assert "did not allow" in await call_error(client, "hotkey", keys=["shift"])
            assert await history_length(client) == done
        async with Client(server.mcp, mode=mode) as client:  # a host that cannot ask
            message = await call_error(client, "hotkey", keys=["shift"])
            assert "cannot ask" in message and "SYMPHONY_POLICY__CONFIRM_TOOLS" in message
            assert await history_length(client) == done
    finally:
        server.close()
    outcomes = [e["outcome"] for e in audit_entries(audit) if e["tool"] == "hotkey"]
    asked = ["asked"] if mode == "auto" else []  # the input-required round is a call of its own
    assert outcomes == [*asked, "ok", *asked, "declined", *asked, "declined", "unconfirmed"]


def audit_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_audit_log_records_every_call_capped_and_without_screenshots(xdisplay: object, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    policy = {"audit_file": str(audit), "disabled_tools": ["key_down"], "timeouts": {"wait": 0.3}}
    async with served(**policy) as (_, client):
        shot = await client.call_tool("screenshot", {})
        image = shot.content[0].data  # type: ignore[union-attr]
        await call_error(client, "locate", description="the Save button " * 50)  # no model: a tool error
        await call_error(client, "key_down", key="a")
        await call_error(client, "wait", seconds=5)
        await call_error(client, "click", x="left", y=1)
    entries = audit_entries(audit)
    assert [(e["tool"], e["outcome"]) for e in entries] == [
        ("screenshot", "ok"),
        ("locate", "error"),
        ("key_down", "refused"),
        ("wait", "timeout"),
        ("click", "error"),
    ]
    for entry in entries:
        assert set(entry) >= {"time", "session", "tool", "arguments", "outcome", "duration_ms"}
        assert entry["session"] == "default" and entry["time"].endswith("+00:00")
    assert entries[1]["arguments"]["description"].endswith("... (800 characters)")
    assert len(entries[1]["arguments"]["description"]) < 250 and "grounder" in entries[1]["error"]
    assert "policy.disabled_tools" in entries[2]["error"] and entries[3]["arguments"] == {"seconds": 5}
    text = audit.read_text(encoding="utf-8")
    assert image[:64] not in text and len(text) < 5_000  # results (the screenshot) are never written
    assert audit.stat().st_mode & 0o777 == 0o600


def test_audit_log_rotates_within_its_size_cap(tmp_path: Path) -> None:
    from symphony_mcp.policy.audit import AuditLog

    audit = AuditLog(tmp_path / "audit.jsonl", max_bytes=2_000, files=3)
    for n in range(200):
        audit.write(session="default", tool="type", arguments={"text": f"entry {n}"}, outcome="ok", started=0.0)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert all((tmp_path / name).stat().st_size <= 2_000 for name in files)
    newest = audit_entries(tmp_path / "audit.jsonl")
    assert newest[-1]["arguments"]["text"] == "entry 199"
    assert audit_entries(tmp_path / "audit.jsonl.1")[-1]["arguments"]["text"] == f"entry {199 - len(newest)}"


async def test_audit_log_names_the_http_session_of_each_call(xdisplay: Any, tmp_path: Path) -> None:
    """Two clients of one HTTP server: each call's entry carries its own client's session."""
    audit = tmp_path / "audit.jsonl"
    async with (
        http_server("--audit-file", str(audit), display=xdisplay.name) as url,
        Client(url, mode="legacy") as first,
        Client(url, mode="legacy") as second,
    ):
        await call_ok(first, "model_status")
        await call_ok(second, "list_windows")
        await call_ok(first, "list_tasks")
        await call_error(second, "wait", seconds=-1)
    entries = [e for e in audit_entries(audit) if e["tool"] in {"model_status", "list_windows", "list_tasks", "wait"}]
    sessions = [e["session"] for e in entries]
    assert [e["tool"] for e in entries] == ["model_status", "list_windows", "list_tasks", "wait"]
    assert sessions[0] == sessions[2] != sessions[1] == sessions[3]
    assert all(s.startswith("http-") for s in sessions) and entries[3]["outcome"] == "error"


def test_the_readme_policy_example_starts_a_server(tmp_path: Path) -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    (example,) = [block for block in re.findall(r"```toml\n(.*?)```", readme, flags=re.S) if "[policy]" in block]
    config = tmp_path / "symphony.toml"
    config.write_text(example.replace("~/.local/state", str(tmp_path)), encoding="utf-8")
    server = build_server(load_settings(config))
    try:
        assert server.mcp.policy.settings.confirm_groups == ["destructive"]
        assert server.mcp.audit is not None and server.mcp.audit.path == tmp_path / "symphony-mcp" / "audit.jsonl"
    finally:
        server.close()


async def test_a_confirmation_holds_only_for_the_arguments_it_was_given() -> None:
    """At 2026-07-28 the answer returns with the retried call: a retry with other arguments never runs, also
    when they differ only beyond what the question shows (texts are cut at 200 characters)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CallToolResult, ElicitResult, InputRequiredResult

    server = build_server(load_settings(policy={"confirm_groups": ["destructive"], "audit": False}))
    done: list[str] = []

    async def act(text: str) -> str:  # no annotations: destructive by the MCP default
        done.append(text)
        return "acted"

    server.mcp.add_tool(act)
    try:
        async with Client(server.mcp, elicitation_callback=Host("accept")) as client:
            shown, other = {"text": "a" * 250 + "shown"}, {"text": "a" * 250 + "other"}
            asked = await client.session.call_tool("act", shown, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult) and asked.input_requests
            yes = {key: ElicitResult(action="accept", content={"allow": True}) for key in asked.input_requests}
            state = asked.request_state
            with pytest.raises(MCPError, match="requestState"):  # the SDK binds the state to the arguments
                await client.session.call_tool(
                    "act", other, input_responses=yes, request_state=state, allow_input_required=True
                )
            retried = await client.session.call_tool("act", other, input_responses=yes, allow_input_required=True)
            assert isinstance(retried, InputRequiredResult) and done == []  # an answer alone is asked again
            same = await client.session.call_tool(
                "act", shown, input_responses=yes, request_state=state, allow_input_required=True
            )
            assert isinstance(same, CallToolResult) and not same.is_error and done == [shown["text"]]
    finally:
        server.close()


async def test_a_call_the_client_gives_up_on_is_audited_as_cancelled(xdisplay: object, tmp_path: Path) -> None:
    from mcp.shared.exceptions import MCPError

    audit = tmp_path / "audit.jsonl"
    async with served(audit_file=str(audit)) as (_, client):
        with pytest.raises(MCPError, match="Timed out"):
            await client.call_tool("wait", {"seconds": 5}, read_timeout_seconds=0.3)
        await call_ok(client, "model_status")  # the server keeps serving

        def cancelled() -> list[dict[str, Any]]:
            return [e for e in audit_entries(audit) if e["tool"] == "wait"] if audit.exists() else []

        (entry,) = wait_for(cancelled)
    assert entry["outcome"] == "error" and entry["error"] == "cancelled before it finished"


async def test_confirmation_over_streamable_http(xdisplay: Any) -> None:
    """The real wire: 2026-07-28 carries the question in an input-required result and the answer in the retry;
    2025-11-25 sends it as a request on the call's stream."""
    async with http_server("--confirm-tools", "hotkey", "--no-audit", display=xdisplay.name) as url:
        yes, no = Host("accept"), Host("decline")
        async with Client(url, elicitation_callback=yes) as client:
            assert client.protocol_version == "2026-07-28"
            await call_ok(client, "hotkey", keys=["shift"])
            assert len(yes.asked) == 1 and "'hotkey'" in yes.asked[0]
        async with Client(url, mode="legacy", elicitation_callback=no) as client:
            assert "declined" in await call_error(client, "hotkey", keys=["shift"]) and len(no.asked) == 1
        async with Client(url) as client:
            assert "cannot ask" in await call_error(client, "hotkey", keys=["shift"])


def test_every_call_is_audited_even_those_refused_before_a_tool_runs(tmp_path: Path) -> None:
    """Over a real stdio server: calls the SDK refuses before any tool code runs (unknown names, one with a
    newline, arguments that are not an object, no name) each get their line, as the others do (12 calls
    gave 9 lines)."""
    from testkit.raw_jsonrpc import raw_stdio_server

    audit = tmp_path / "audit.jsonl"
    calls: list[tuple[Any, Any, str]] = [
        ("model_status", {}, "ok"),
        ("no_such_tool", {}, "error"),
        ('evil\n{"tool":"model_status","outcome":"ok"}', {}, "error"),
        ("model_status", [1, 2], "error"),
        ("model_status", "text", "error"),
        (5, {}, "error"),
        (None, {}, "error"),
        ("key_down", {"key": "a"}, "refused"),
        ("model_status", None, "ok"),
        ("click", {"x": 1}, "error"),
    ]
    env = {"SYMPHONY_POLICY__AUDIT_FILE": str(audit), "SYMPHONY_POLICY__DISABLED_TOOLS": '["key_down"]'}
    with raw_stdio_server(**env) as server:
        for number, (name, arguments, _) in enumerate(calls, 100):
            params = {"arguments": arguments} | ({} if name is None else {"name": name})
            reply = server.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}))
            assert reply["id"] == number, reply
    entries = audit_entries(audit)
    assert len(entries) == len(calls) == len(audit.read_text(encoding="utf-8").splitlines())
    for entry, (name, arguments, outcome) in zip(entries, calls, strict=True):
        assert entry["outcome"] == outcome, (entry, name)
        assert entry["tool"] == name if isinstance(name, str) else "not a tool name" in entry["tool"], entry
        assert entry.get("arguments") == arguments, entry  # null arguments: none written
        assert outcome == "ok" or entry["error"], entry
    assert "Unknown tool" in entries[1]["error"] and "valid dictionary" in entries[3]["error"]
    assert "[1, 2]" not in entries[3]["error"]  # the error names the field, the arguments are kept once
