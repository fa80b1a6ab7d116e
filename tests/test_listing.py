"""What tools/list costs a host: the listing stays small, and its concise schemas still describe every result."""

from __future__ import annotations

import json

import jsonschema
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from symphony_mcp.config import load_settings
from symphony_mcp.server import SymphonyServer, build_server
from symphony_mcp.tools.listing import concise_tool
from testkit.mcp_calls import call_ok

pytestmark = pytest.mark.anyio

# Measured (benchmarks/size/tools_list_size.py): 154,504 bytes as the SDK generates it, 120,345 as sent (31 tools).
# Bounding every argument and stating the combinations tools refuse (issue 12) added about 7 KB; tutorial search's
# two tools (issue 14) about 4.4 KB more (33 tools). elements and find_element (issue 22) about 10 KB, the element
# argument of click, type, scroll and drag_and_drop about 1.3 KB more: 151,286 bytes (35 tools). upload_file and
# download_file (issue 24) about 3.8 KB: 155,124 bytes (37 tools).
LISTING_BUDGET = 157_000


async def test_tools_list_stays_within_its_budget(server: SymphonyServer, client: Client) -> None:
    listed = await client.list_tools()
    size = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size < LISTING_BUDGET, f"tools/list is {size} bytes"
    text = listed.model_dump_json(by_alias=True)
    assert '"title":"Frame Id"' not in text and "\n        " not in text


async def test_concise_schemas_accept_and_reject_what_the_full_ones_do(server: SymphonyServer) -> None:
    """Each concise output schema against the full one, on instances that differ in exactly the parts made concise."""
    for tool in await MCPServer.list_tools(server.mcp):
        concise = concise_tool(tool)
        assert concise.output_schema is not None
        full_validator = jsonschema.Draft202012Validator(tool.output_schema)
        concise_validator = jsonschema.Draft202012Validator(concise.output_schema)
        for instance in (None, {}, {"frame_id": None}, {"frame_id": 3}, {"space": "screen", "frame_id": "f1"}):
            assert full_validator.is_valid(instance) == concise_validator.is_valid(instance), (tool.name, instance)
        assert json.dumps(concise.input_schema).count('"type"') == json.dumps(tool.input_schema).count('"type"')


async def test_real_results_match_the_concise_schemas(client: Client) -> None:
    schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
    for tool, arguments in (("move_pointer", {"x": 50, "y": 60}), ("screen_info", {}), ("action_history", {})):
        jsonschema.validate(await call_ok(client, tool, **arguments), schemas[tool])


ROOT_COMBINATORS = ("not", "anyOf", "oneOf", "allOf", "if", "then", "else")


async def test_schema_rules_are_stated_only_when_asked(xdisplay: object) -> None:
    """By default no input schema has a keyword at its root that hosts refuse: Claude Code drops a tool whose schema
    has a root `not`/`anyOf`/`oneOf`/`allOf`/`if`, the Anthropic API refuses root combinators and OpenAI strict mode
    refuses `not`. server.schema_rules (for validators and fuzzers) states the refused combinations as a root `not`."""
    listed = {}
    for rules in (True, False):
        built = build_server(load_settings(server={"schema_rules": True}) if rules else load_settings())
        try:
            async with Client(built.mcp) as connected:
                listed[rules] = {tool.name: tool.input_schema for tool in (await connected.list_tools()).tools}
        finally:
            built.close()
    assert "not" in listed[True]["click"]
    assert {name: sorted(set(schema) & set(ROOT_COMBINATORS)) for name, schema in listed[False].items()} == {
        name: [] for name in listed[False]
    }
    assert listed[False]["click"]["properties"] == listed[True]["click"]["properties"]
