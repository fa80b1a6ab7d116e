"""The README stays true: its host snippets start a working server, its settings table is complete."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from symphony_mcp.config import ModelEndpoint, ModelsSettings, Settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from tests.test_transports import EXPECTED_TOOLS, base_env, serve_command

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
SNIPPETS = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", README, flags=re.S)]


def stdio_entries() -> list[dict]:
    entries = []
    for snippet in SNIPPETS:
        for servers in (snippet.get("mcpServers", {}), snippet.get("servers", {})):
            entries += [entry for entry in servers.values() if "command" in entry]
    return entries


def test_readme_has_host_snippets() -> None:
    assert len(stdio_entries()) >= 2
    assert any(entry.get("type") == "http" for s in SNIPPETS for entry in s.get("servers", {}).values())


@pytest.mark.anyio
@pytest.mark.parametrize("entry", stdio_entries(), ids=lambda e: " ".join(e["args"]))
async def test_readme_stdio_snippet_starts_a_working_server(entry: dict, xdisplay: VirtualDisplay) -> None:
    assert entry["command"].endswith("/.venv/bin/symphony-mcp")
    command, *prefix = serve_command()  # this checkout's executable instead of /opt/...
    env = {**base_env(), **entry["env"], "DISPLAY": xdisplay.name}
    async with Client(StdioServerParameters(command=command, args=[*prefix, *entry["args"]], env=env)) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == EXPECTED_TOOLS
        assert not (await client.call_tool("screenshot", {})).is_error


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
