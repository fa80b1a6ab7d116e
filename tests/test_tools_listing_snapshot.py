"""tools/list is the contract hosts read: every tool's name, description, annotations and schemas, byte for byte.

The snapshot (tests/data/tools_list.json) is the listing of a server with the default settings and the schema
rules stated (server.schema_rules, a superset of the default listing: it only adds the root `not`). A change to
any tool's listing, intended or not, shows here as a diff to review. After an intended change, regenerate it:

    SYMPHONY_UPDATE_TOOLS_SNAPSHOT=1 .venv/bin/python -m pytest tests/test_tools_listing_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.server import build_server

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "data" / "tools_list.json"


async def _listing() -> str:
    server = build_server(load_settings(server={"schema_rules": True}))
    try:
        async with Client(server.mcp) as client:
            tools = (await client.list_tools()).tools
    finally:
        server.close()
    listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return "[\n" + ",\n".join(json.dumps(tool, ensure_ascii=False) for tool in listed) + "\n]\n"  # a tool a line


async def test_tools_list_is_unchanged_byte_for_byte() -> None:
    listing = await _listing()
    if os.environ.get("SYMPHONY_UPDATE_TOOLS_SNAPSHOT"):
        SNAPSHOT.write_text(listing, encoding="utf-8")
    assert listing == SNAPSHOT.read_text(encoding="utf-8"), "tools/list changed: see the module docstring"
