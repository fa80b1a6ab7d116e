"""The README stays true: its host snippets are the files in clients/hosts and start a working server, its quick
start runs, its exit statuses are the command line's, its settings table is complete."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from symphony_mcp.cli import EXIT_MEANINGS
from symphony_mcp.config import ModelEndpoint, ModelsSettings, ServerSettings, Settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.ports import free_port, port_open
from testkit.server_process import base_env, serve_command
from testkit.tool_names import EXPECTED_TOOLS
from testkit.waiting import wait_for

REPO = Path(__file__).parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
HOSTS = REPO / "clients" / "hosts"
SERVE = "/opt/symphony-mcp/.venv/bin/symphony-mcp"  # the README's stand-in for the reader's checkout


def fenced(text: str) -> str:
    return f"\n{text.rstrip()}\n```"


def test_every_host_file_is_shown_in_the_readme_as_it_is() -> None:
    files = sorted(HOSTS.iterdir())
    assert {f.suffix for f in files} == {".json", ".toml", ".sh"}
    for file in files:
        assert fenced(file.read_text(encoding="utf-8")) in README, f"README does not show {file.name} as it is"
        assert f"`clients/hosts/{file.name}`" in README


def host_servers() -> dict[str, dict[str, Any]]:
    """Every server entry of clients/hosts, by file and name, as {command, args, env} or {url, ...}."""
    entries: dict[str, dict[str, Any]] = {}
    for file in sorted(HOSTS.glob("*.json")):
        config = json.loads(file.read_text(encoding="utf-8"))
        for name, entry in {**config.get("mcpServers", {}), **config.get("servers", {})}.items():
            entries[f"{file.name}:{name}"] = bridged(entry) if "mcp-remote" in str(entry.get("args")) else entry
    codex = tomllib.loads((HOSTS / "codex.toml").read_text(encoding="utf-8"))
    entries |= {f"codex.toml:{name}": entry for name, entry in codex["mcp_servers"].items()}
    for line in (HOSTS / "claude-code.sh").read_text(encoding="utf-8").splitlines():
        if line.startswith("claude mcp add"):
            entries[f"claude-code.sh:{len(entries)}"] = claude_mcp_add(shlex.split(line)[3:])
    return entries


def claude_mcp_add(words: list[str]) -> dict[str, Any]:
    """`claude mcp add [options] NAME -- COMMAND ARGS` or `... --transport http NAME URL` as an entry."""
    options, _, command = " ".join(shlex.quote(w) for w in words).partition(" -- ")
    flags = shlex.split(options)
    env = dict(flags[i + 1].split("=", 1) for i, flag in enumerate(flags) if flag == "--env")
    if command:
        first, *args = shlex.split(command)
        return {"command": first, "args": args, "env": env}
    positional = [w for i, w in enumerate(flags) if not w.startswith("-") and not flags[i - 1].startswith("-")]
    headers = [flags[i + 1] for i, flag in enumerate(flags) if flag == "--header"]
    return {"url": positional[-1], "headers": dict(h.split(": ", 1) for h in headers)}


def bridged(entry: dict[str, Any]) -> dict[str, Any]:
    """mcp-remote's stdio-to-HTTP bridge as the HTTP entry it stands for (its ${VAR} headers expanded)."""
    args = entry["args"]
    url = next(arg for arg in args if arg.startswith("http"))
    name, value = args[args.index("--header") + 1].split(":", 1)
    for variable, text in entry.get("env", {}).items():
        value = value.replace(f"${{{variable}}}", text)
    return {"url": url, "headers": {name: value}, "bridge": entry}


def stdio_entries() -> dict[str, dict[str, Any]]:
    """The stdio servers; ssh's is the command it runs on the other machine, which runs here as well."""
    found = {}
    for key, entry in host_servers().items():
        if entry.get("command") == "ssh":
            remote = [a for a in entry["args"] if not a.startswith("-")][1:]
            entry = {"command": remote[0], "args": remote[1:], "env": {}}
        if "command" in entry:
            found[key] = entry
    return found


def test_hosts_cover_stdio_and_http() -> None:
    entries = host_servers()
    assert len(stdio_entries()) >= 5
    http = [entry for entry in entries.values() if "url" in entry]
    assert len(http) >= 4
    default = ServerSettings()
    for entry in http:  # the server's defaults, and a bearer token however the host spells it
        assert entry["url"] == f"http://{default.host}:{default.port}{default.path}"
        assert entry.get("bearer_token_env_var") or entry["headers"]["Authorization"].startswith("Bearer ")


@pytest.mark.anyio
@pytest.mark.parametrize("key", sorted(stdio_entries()))
async def test_host_stdio_snippet_starts_a_working_server(key: str, xdisplay: VirtualDisplay) -> None:
    entry = stdio_entries()[key]
    assert entry["command"] == SERVE and entry["args"][0] == "serve"
    command, *prefix = serve_command()  # this checkout's executable instead of /opt/...
    env = {**base_env(), **entry.get("env", {}), "DISPLAY": xdisplay.name}
    async with Client(StdioServerParameters(command=command, args=[*prefix, *entry["args"]], env=env)) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == EXPECTED_TOOLS
        assert not (await client.call_tool("screenshot", {})).is_error


@pytest.mark.anyio
@pytest.mark.inspector
async def test_claude_desktop_http_bridge_reaches_a_token_server(xdisplay: VirtualDisplay) -> None:
    """The Claude Desktop HTTP snippet: mcp-remote from npm, the token in its env, against a real HTTP server."""
    (bridge,) = [entry["bridge"] for entry in host_servers().values() if "bridge" in entry]
    port = free_port()
    server = subprocess.Popen(
        [*serve_command(), "serve", "--transport", "http", "--port", str(port), "--token", "sekrit"],
        env=base_env(DISPLAY=xdisplay.name),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        args = [arg.replace(":8765/", f":{port}/") for arg in bridge["args"]]
        env = {**base_env(), **bridge["env"], "SYMPHONY_AUTH": "Bearer sekrit"}
        wait_for(lambda: port_open(port) or server.poll() is not None, timeout=30)
        async with Client(StdioServerParameters(command=bridge["command"], args=args, env=env)) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == EXPECTED_TOOLS
            assert not (await client.call_tool("screen_info", {})).is_error
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_quick_start_runs_as_shown() -> None:
    """The README's Python quick start is clients/examples/quickstart.py, and it finds and clicks the text."""
    quickstart = REPO / "clients" / "examples" / "quickstart.py"
    assert fenced(quickstart.read_text(encoding="utf-8")) in README
    env = {key: value for key, value in base_env().items() if key != "DISPLAY"}  # the server's own display
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), str(quickstart)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "opened demo" and lines[2].startswith("found at {'x': ")
    assert lines[3] == "left click at 'Hello from symphony' (ocr)"


def test_readme_lists_the_exit_statuses() -> None:
    for code, meaning in EXIT_MEANINGS.items():
        assert f"| {int(code)} | {meaning} |" in README


def test_readme_documents_every_setting() -> None:
    for group_name, group in Settings.model_fields.items():
        if group_name == "models":  # one table for all roles: SYMPHONY_MODELS__<ROLE>__FIELD
            names = [f"SYMPHONY_MODELS__<ROLE>__{field.upper()}" for field in ModelEndpoint.model_fields]
            names += [f"`{role.upper()}`" for role in ModelsSettings.model_fields]
        else:
            annotation = group.annotation
            fields = annotation.model_fields if hasattr(annotation, "model_fields") else None
            names = (
                [f"SYMPHONY_{group_name.upper()}__{field.upper()}" for field in fields]
                if fields
                else [f"SYMPHONY_{group_name.upper()}"]
            )
        for name in names:
            wanted = name if name.startswith("`") else f"`{name}`"
            assert wanted in README, f"{name} is not documented in the README settings tables"
