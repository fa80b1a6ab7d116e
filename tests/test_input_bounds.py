"""Bounded input and honest schemas, through the real MCP client (issue 12).

Every argument is bounded in `tools/list` (strings, lists, numbers, finite only); huge, NaN and
infinite values are short tool errors that repeat at most a few hundred characters of the input;
task ids are matched whole everywhere; what the schema allows is what the server accepts.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from symphony_mcp.config import PolicySettings, ServerSettings, load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.limits import MAX_ECHO, MAX_ERROR_MESSAGE
from symphony_mcp.server import build_server
from symphony_mcp.tools.pipeline import GuardedServer
from testkit.raw_jsonrpc import raw_stdio_server
from testkit.server_process import base_env, serve_command

pytestmark = pytest.mark.anyio

# An error may name the argument, the rule and a clipped value: never much of the input itself.
MAX_ERROR_TEXT = 1_500


@pytest.fixture
async def bare_client(tmp_path: Path) -> AsyncIterator[Client]:
    """A server whose calls here all fail validation or the id check: no display is touched."""
    settings = load_settings(memory={"trajectory_dir": str(tmp_path / "trajectories")}, server={"schema_rules": True})
    server = build_server(settings)
    try:
        async with Client(server.mcp) as client:
            yield client
    finally:
        server.close()


@pytest.fixture
async def schemas(bare_client: Client) -> dict[str, dict[str, Any]]:
    return {tool.name: tool.input_schema for tool in (await bare_client.list_tools()).tools}


def nodes(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every sub-schema that describes a value (properties, items, union members, definitions)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("properties", "$defs"):
        for name, child in schema.get(key, {}).items():
            yield from nodes(child, f"{path}.{name}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, child in enumerate(schema.get(key, [])):
            yield from nodes(child, f"{path}|{i}")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}[]")


async def test_every_argument_is_bounded_in_the_schema(bare_client: Client) -> None:
    listing = (await bare_client.list_tools()).tools
    unbounded = []
    for tool in listing:
        for path, node in nodes(tool.input_schema):
            kind = node.get("type")
            if "enum" in node or "const" in node:
                continue
            if kind == "string" and "maxLength" not in node:
                unbounded.append(f"{tool.name}{path}: string without maxLength")
            if kind == "array" and "maxItems" not in node:
                unbounded.append(f"{tool.name}{path}: array without maxItems")
            if kind in ("number", "integer") and (
                "maximum" not in node or not {"minimum", "exclusiveMinimum"} & set(node)
            ):
                unbounded.append(f"{tool.name}{path}: {kind} without a range")
    assert not unbounded, "\n".join(unbounded)
    assert "prefixItems" not in json.dumps([tool.input_schema for tool in listing])


HUGE_CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "5 MB thought": ("record_step", {"thought": "t" * 5_000_000}, "at most 100000 characters"),
    "10,000 keys": ("hotkey", {"keys": ["a"] * 10_000}, "at most 16 items"),
    "long key name": ("key_down", {"key": "k" * 100_000}, "at most 64 characters"),
    "2 MB phrase": ("find_text", {"phrase": "p" * 2_000_000}, "at most 2000 characters"),
    "1 MB open_app target": ("open_app", {"target": "/" + "x" * 1_000_000}, "at most 4096 characters"),
    "1 MB description": ("click", {"description": "d" * 1_000_000}, "at most 2000 characters"),
    "200,000 typed characters": ("type", {"text": "x" * 200_000}, "at most 100000 characters"),
    "1 MB window id": ("focus_window", {"window_id": "0x" * 500_000}, "at most 128 characters"),
    "1 MB instruction": ("start_task", {"instruction": "i" * 1_000_000}, "at most 20000 characters"),
    "1 MB frame id": ("screenshot", {"frame_id": "f" * 1_000_000}, "at most 128 characters"),
    "100,000 extra region keys": (
        "screenshot",
        {"region": {"left": 0, "top": 0, "width": 0, "height": 1, **{f"k{i}": i for i in range(100_000)}}},
        "greater than 0",
    ),
    "huge near_x": ("find_text", {"phrase": "a", "near_x": 1e300, "near_y": 1}, "less than or equal to 100000"),
    "huge scroll": ("scroll", {"vertical": 10**30}, "less than or equal to 200"),
    "huge step": ("record_step", {"thought": "t", "step": 10**30}, "less than or equal to"),
}


@pytest.mark.parametrize("case", HUGE_CASES)
async def test_huge_and_non_finite_input_is_a_short_tool_error(case: str, bare_client: Client) -> None:
    tool, arguments, expected = HUGE_CASES[case]
    result = await bare_client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert expected in text, text[:MAX_ERROR_TEXT]
    assert "internal error" not in text
    assert len(text) < MAX_ERROR_TEXT, f"{len(text)} characters came back"


# JSON has no NaN or Infinity, but Python's and pydantic's parsers read them; the MCP client writes null instead,
# so these go over raw stdio as a hostile client would send them.
NON_FINITE = [
    ("click", '{"x": Infinity, "y": 5}'),
    ("click", '{"x": 5, "y": NaN}'),
    ("screenshot", '{"region": {"left": 0, "top": 0, "width": Infinity, "height": 10}, "space": "screen"}'),
    ("wait", '{"seconds": NaN}'),
    ("move_pointer", '{"x": 1, "y": 1, "duration": -Infinity}'),
    ("find_text", '{"phrase": "a", "near_x": Infinity, "near_y": 1}'),
    ("open_app", '{"target": "xterm", "wait_seconds": Infinity}'),
    ("ocr", '{"min_confidence": NaN}'),
]


def test_nan_and_infinity_are_tool_errors_not_internal_errors() -> None:
    with raw_stdio_server() as server:
        for request_id, (tool, arguments) in enumerate(NON_FINITE, start=10):
            params = f'{{"name":"{tool}","arguments":{arguments}}}'
            reply = server.send(f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}')
            assert reply["id"] == request_id and reply["result"]["isError"], (tool, arguments, reply)
            text = reply["result"]["content"][0]["text"]
            assert "finite number" in text and "internal error" not in text, (tool, arguments, text)


@pytest.mark.parametrize("task_id", ["probe\n", "", "../probe", "probe/x", ".hidden", "a" * 129])
async def test_bad_task_ids_are_refused_and_create_nothing(task_id: str, bare_client: Client, tmp_path: Path) -> None:
    result = await bare_client.call_tool("start_task", {"instruction": "anything", "task_id": task_id})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and ("should match pattern" in text or "at most 128 characters" in text), text
    root = tmp_path / "trajectories"
    assert not root.exists() or not any(root.iterdir())


async def test_a_resource_uri_never_reads_a_task_id_the_tools_refuse(bare_client: Client, tmp_path: Path) -> None:
    """A directory named 'probe\\n' (made by hand here; older servers created it) is not readable by URI."""
    hidden = tmp_path / "trajectories" / "probe\n"
    hidden.mkdir(parents=True)
    (hidden / "task.json").write_text("{}")
    (hidden / "traj.jsonl").write_text("")
    with pytest.raises(Exception, match="is not allowed") as refused:
        await bare_client.read_resource("trajectory://probe%0A/steps")
    assert "probe\n" in str(refused.value) or "probe\\n" in str(refused.value)


async def test_the_schema_states_which_combinations_a_tool_refuses(schemas: dict[str, dict[str, Any]]) -> None:
    """What a validator (a host, a fuzzer) accepts from the schema is what the tool accepts."""
    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("click", {}, False),
        ("click", {"x": 1}, False),
        ("click", {"y": 1, "description": None}, False),
        ("click", {"description": "the OK button", "x": 1, "y": 2}, False),
        ("click", {"description": "the OK button"}, True),
        ("click", {"x": 1, "y": 2, "description": None}, True),
        ("drag_and_drop", {"start_x": 1, "start_y": 2}, False),
        ("drag_and_drop", {"start_x": 1, "start_y": 2, "end_description": "the bin"}, True),
        ("drag_and_drop", {"start_description": "a file", "end_x": 3}, False),
        ("scroll", {}, False),
        ("scroll", {"vertical": 0, "horizontal": 0}, False),
        ("scroll", {"vertical": -3}, True),
        ("scroll", {"vertical": 1, "x": 5}, False),
        ("scroll", {"horizontal": 2, "x": 5, "y": 6}, True),
        ("type", {"text": ""}, False),
        ("type", {"text": "", "enter": True}, True),
        ("type", {"text": "hi", "description": "the name field", "y": 3}, False),
        ("find_text", {"phrase": "OK", "near_x": 4}, False),
        ("find_text", {"phrase": "OK", "near_x": 4, "near_y": 5}, True),
        ("record_step", {}, False),
        ("record_step", {"plan": "open the menu"}, True),
        ("end_task", {"status": "running"}, False),
        ("end_task", {"status": "success"}, True),
        ("start_task", {"instruction": "x", "task_id": "probe-1.a_b"}, True),
        ("find_text", {"phrase": " \n "}, False),
        ("start_task", {"instruction": "   "}, False),
        ("click", {"description": "\t"}, False),
        ("open_app", {"target": " "}, False),
        ("screenshot", {"space": "screen", "frame_id": "f1"}, False),
        ("screenshot", {"space": "screenshot", "frame_id": "f1"}, True),
        ("ocr", {"monitor": 1, "frame_id": "f1"}, False),
        ("locate", {"description": "the OK button", "monitor": 2}, True),
        ("screenshot", {"region": [0, 0, 10, 10]}, False),
        ("screenshot", {"region": {"left": 0, "top": 0, "width": 10, "height": 10}}, True),
    ]
    wrong = []
    for tool, arguments, valid in cases:
        validator = jsonschema.Draft202012Validator(schemas[tool])
        if validator.is_valid(arguments) is not valid:
            wrong.append(f"{tool} {arguments}: schema says {'invalid' if valid else 'valid'}")
    assert not wrong, "\n".join(wrong)


async def test_schema_valid_target_combinations_pass_the_tools_own_check(xdisplay: VirtualDisplay) -> None:
    """The other direction, for click and drag_and_drop on a real display: every combination of description, x, y
    (and for click element) and null the schema allows gets past the tool's argument check. Each call then stops
    before acting (points off screen, no grounding model, no elements read), and every combination the schema
    refuses is refused by the tool too."""
    server = build_server(load_settings(server={"schema_rules": True}))
    try:
        async with Client(server.mcp) as client:
            await check_target_combinations(client)
    finally:
        server.close()


async def check_target_combinations(client: Client) -> None:
    schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    targets: list[tuple[str, Any]] = [("description", "the OK button"), ("x", -50), ("y", -50)]
    for tool, prefixes, names in (
        ("click", [""], [*targets, ("element", 1)]),
        ("drag_and_drop", ["start_", "end_"], targets),
    ):
        choices: list[dict[str, Any]] = [{"space": "screen"}]
        for prefix in prefixes:
            for name, value in names:
                key = prefix + name
                choices = [c for base in choices for c in (base, {**base, key: value}, {**base, key: None})]
        validator = jsonschema.Draft202012Validator(schemas[tool])
        for arguments in choices:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)  # nothing is clicked or dragged
            text = result.content[0].text  # type: ignore[union-attr]
            rule_refused = "give " in text and ("description" in text or "both" in text)
            assert rule_refused is not validator.is_valid(arguments), (tool, arguments, text)


async def test_the_schema_shows_the_limits_this_servers_settings_set(tmp_path: Path) -> None:
    """Limits the settings lower (the hard ones are in limits.py) appear in the schema, so a host or fuzzer
    does not send wait(500) to a server that waits at most 5 s."""
    settings = load_settings(input={"max_wait_seconds": 5, "max_text_length": 100})
    server = build_server(settings)
    try:
        async with Client(server.mcp) as client:
            tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            assert tools["wait"]["properties"]["seconds"]["maximum"] == 5
            (wait,) = [m for m in tools["open_app"]["properties"]["wait_seconds"]["anyOf"] if m["type"] == "number"]
            assert wait["maximum"] == 5
            assert tools["type"]["properties"]["text"]["maxLength"] == 100
            (text,) = [
                m for m in tools["highlight_text_span"]["properties"]["replace_with"]["anyOf"] if "maxLength" in m
            ]
            assert text["maxLength"] == 100
            result = await client.call_tool("wait", {"seconds": 6})
            assert result.is_error and "seconds must be 0..5" in result.content[0].text  # type: ignore[union-attr]
    finally:
        server.close()


async def test_open_app_is_annotated_as_what_it_does(bare_client: Client) -> None:
    (tool,) = [tool for tool in (await bare_client.list_tools()).tools if tool.name == "open_app"]
    hints = tool.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
        False,
        True,
        False,
        True,
    )
    assert tool.description is not None and "any program on PATH" in tool.description


async def test_end_task_offers_only_how_a_task_ends(schemas: dict[str, dict[str, Any]]) -> None:
    assert schemas["end_task"]["properties"]["status"]["enum"] == ["success", "fail", "infeasible", "abandoned"]


@pytest.mark.parametrize("token", ["", "   ", "\t\n", " secret "])
def test_a_blank_token_is_refused(token: str) -> None:
    with pytest.raises(ValueError, match="token is blank or starts or ends with whitespace"):
        ServerSettings(host="0.0.0.0", token=token)  # type: ignore[arg-type]


def test_a_server_with_a_blank_token_does_not_start() -> None:
    result = subprocess.run(
        [*serve_command(), "serve", "--transport", "http", "--host", "0.0.0.0", "--token", "  "],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "token is blank" in result.stderr, result.stderr


async def test_huge_input_over_stdio_comes_back_clipped_and_is_logged_clipped(
    xdisplay: VirtualDisplay, tmp_path: Path
) -> None:
    """Over a real stdio server: a 1 MB open_app target, a 3 MB phrase (under the 4 MiB message cap) and a 1 MB
    resource URI give short errors, and the server's log (stderr, at DEBUG) repeats at most one clipped line's
    worth of any of them."""
    log = tmp_path / "server.log"
    command, *prefix = serve_command()
    params = StdioServerParameters(
        command="/bin/sh",
        args=["-c", 'exec "$0" "$@" 2>"$SERVER_LOG"', command, *prefix, "serve", "--log-level", "DEBUG"],
        env=base_env(DISPLAY=xdisplay.name, SERVER_LOG=str(log)),
    )
    async with Client(params) as client:
        for tool, arguments in (
            ("open_app", {"target": "x" * 1_000_000}),
            ("find_text", {"phrase": "p" * 3_000_000}),
            ("locate", {"description": "d" * 1_000_000}),
        ):
            result = await client.call_tool(tool, arguments)
            assert result.is_error and len(result.content[0].text) < MAX_ERROR_TEXT  # type: ignore[union-attr]
        with pytest.raises(Exception) as refused:
            await client.read_resource("trajectory://" + "a" * 1_000_000 + "/steps")
        assert len(str(refused.value)) < MAX_ERROR_TEXT
    written = log.read_text(errors="replace")
    assert "serving on display" in written  # the log is the server's
    for repeated in "xpda":
        assert repeated * (MAX_ERROR_MESSAGE + 1) not in written, f"the log holds a run of {repeated!r}"
    assert os.path.getsize(log) < 200_000


async def test_an_unknown_tool_name_is_not_repeated_whole(bare_client: Client) -> None:
    result = await bare_client.call_tool("t" * 1_000_000, {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "Unknown tool" in text and len(text) < MAX_ERROR_TEXT


async def test_a_name_the_system_refuses_to_look_up_is_a_clear_error(client: Client) -> None:
    """A path component longer than the OS allows raised an internal OSError (ENAMETOOLONG) that named it whole."""
    for target in ("/tmp/" + "x" * 300 + "/notes.txt", "y" * 3_000):
        result = await client.call_tool("open_app", {"target": target})
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error and "cannot open" in text and "internal error" not in text, text[:300]
        assert len(text) < MAX_ERROR_TEXT


async def test_an_unexpected_failure_is_clipped_for_the_caller_and_the_log(caplog: pytest.LogCaptureFixture) -> None:
    async def fails(name: str) -> None:
        raise OSError(36, "File name too long", name)

    server = GuardedServer(PolicySettings(audit=False), "clipping")
    server.add_tool(fails)
    with caplog.at_level(logging.ERROR):
        async with Client(server) as client:
            result = await client.call_tool("fails", {"name": "n" * 1_000_000})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "internal error (OSError" in text and len(text) < MAX_ERROR_TEXT
    assert caplog.records and all(len(record.getMessage()) < 20_000 for record in caplog.records)
    assert "n" * (2 * MAX_ECHO) not in caplog.text


async def test_open_app_without_a_wait_is_valid_when_the_servers_longest_wait_is_short(
    xdisplay: VirtualDisplay,
) -> None:
    """open_app's default wait (4 s) never exceeds a lower max_wait_seconds: a call that leaves it out is valid."""
    server = build_server(load_settings(input={"max_wait_seconds": 1}))
    try:
        async with Client(server.mcp) as client:
            opened = await client.call_tool("open_app", {"target": "true"})  # starts, opens no window, ends
            assert not opened.is_error, opened.content
            assert opened.structured_content is not None and opened.structured_content["new_windows"] == []
    finally:
        server.close()


async def test_booleans_are_not_numbers_nor_numbers_booleans(xdisplay: VirtualDisplay, tmp_path: Path) -> None:
    """click(x=true) clicked at x=1 (pydantic's lax mode read true as 1); in every tool a boolean given for a
    number, or a number for a boolean, is now a tool error naming the argument, and nothing is done on the
    desktop. Numbers written as strings stay accepted (the MCP Inspector CLI sends them so: test_inspector.py)."""
    settings = load_settings(memory={"trajectory_dir": str(tmp_path / "trajectories")})
    server = build_server(settings)
    try:
        async with Client(server.mcp) as client:
            assert not (await client.call_tool("screenshot", {})).is_error
            for tool, arguments, argument in (
                ("click", {"x": True, "y": 10}, "x"),
                ("move_pointer", {"x": 10, "y": False}, "y"),
                ("click", {"x": 5, "y": 10, "count": True}, "count"),
                ("scroll", {"vertical": True}, "vertical"),
                ("type", {"text": "a", "enter": 1}, "enter"),
                ("screenshot", {"quality": True}, "quality"),
                ("ocr", {"region": {"left": True, "top": 0, "width": 10, "height": 10}}, "left: true"),
                ("action_history", {"limit": True}, "limit"),
            ):
                result = await client.call_tool(tool, arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                not_kind = "is a boolean, not a number" in text or "is a number, not a boolean" in text
                assert result.is_error and argument in text and not_kind, (tool, arguments, text)
            history = await client.call_tool("action_history", {})
            assert history.structured_content is not None and history.structured_content["records"] == []
            moved = await client.call_tool("move_pointer", {"x": 10, "y": 20})  # a whole number is a valid float
            assert not moved.is_error, moved
    finally:
        server.close()
