"""The orchestrator's action space (orchestrator/action_space.py): built from the server's real tool schemas,
answers parsed safely into validated calls."""

from __future__ import annotations

import re

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.models.reask import UnusableAnswerError
from symphony_mcp.orchestrator.action_space import ActionSpace, section
from symphony_mcp.server import build_server

pytestmark = pytest.mark.anyio


async def listed_space(**server_settings: object) -> ActionSpace:
    server = build_server(load_settings(server=server_settings))  # listing tools needs no display
    try:
        async with Client(server.mcp) as client:
            return ActionSpace.from_tools((await client.list_tools()).tools)
    finally:
        server.close()


@pytest.fixture
async def space() -> ActionSpace:
    return await listed_space()


def answer(code: str) -> str:
    return f"(Next action)\nClick it.\n(Grounded action)\n```python\n{code}\n```"


async def test_action_space_comes_from_the_server_tools(space: ActionSpace) -> None:
    assert {"click", "type", "drag_and_drop", "scroll", "hotkey", "open_app", "highlight_text_span"} <= set(
        space.actions
    )
    assert not {"screenshot", "reflect", "start_task", "record_step"} & set(space.actions)
    rendered = space.render(final_step=False)
    assert "click(description: str | None = None, x: float | None = None" in rendered
    assert "hotkey(keys: list[str])" in rendered and rendered.endswith(
        'fail(reason: str = "")\n    The task cannot be completed; say why.'
    )
    with pytest.raises(ValueError, match="not one of this server's action tools on offer"):
        ActionSpace.from_tools([], ["click"])


@pytest.mark.parametrize(
    ("code", "name", "arguments"),
    [
        ('click(description="the OK button", count=2)', "click", {"description": "the OK button", "count": 2}),
        ('agent.type(text="héllo → 日本", enter=True)', "type", {"text": "héllo → 日本", "enter": True}),
        ('hotkey(["ctrl", "s"])', "hotkey", {"keys": ["ctrl", "s"]}),
        ("scroll(vertical=-3, x=10.5, y=20)", "scroll", {"vertical": -3, "x": 10.5, "y": 20}),
        ("done()", "done", {}),
        ('fail("no such file")', "fail", {"reason": "no such file"}),
    ],
)
async def test_answers_parse_into_validated_calls(space: ActionSpace, code: str, name: str, arguments: dict) -> None:
    action = space.parse(answer(code), final_step=False)
    assert (action.name, action.arguments, action.code) == (name, arguments, code)


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("click(description='a'); hotkey(keys=['x'])", "not a valid Python call"),
        ("__import__('os').system('touch /tmp/pwned')", "call the action by its name"),
        ("click(description=open('/etc/passwd').read())", "must be a literal value"),
        ("click(**{'x': 1})", "*args and **kwargs are not allowed"),
        ("teleport(x=1)", "there is no action 'teleport'"),
        ("click(count='two')", "invalid arguments for click(): count"),
        ("hotkey()", "'keys' is a required property"),
        ("click(colour='red')", "click() has no parameter 'colour'"),
        ("done(now=True)", "done() takes no arguments"),
        ("x = 1", "not a valid Python call"),
    ],
)
async def test_bad_answers_are_refused_with_feedback(space: ActionSpace, code: str, problem: str) -> None:
    with pytest.raises(UnusableAnswerError, match=problem.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        space.parse(answer(code), final_step=False)


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("click(x=5)", "click() does not take this combination (x); its parameter descriptions say which to give"),
        ("drag_and_drop(start_x=1, start_y=2, end_description='the bin', end_x=3)", "combination (end_description, "),
    ],
)
async def test_refused_combinations_are_one_readable_line_when_the_server_states_them(code: str, problem: str) -> None:
    """A server run with --schema-rules lists them as a root `not`; the default server's tools refuse them when
    called, with their own message."""
    space = await listed_space(schema_rules=True)
    with pytest.raises(UnusableAnswerError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        space.parse(answer(code), final_step=False)


async def test_no_code_block_and_the_last_step_rule(space: ActionSpace) -> None:
    with pytest.raises(UnusableAnswerError, match="no action found"):
        space.parse("I would click the button.", final_step=False)
    with pytest.raises(UnusableAnswerError, match="only done"):
        space.parse(answer('click(description="OK")'), final_step=True)
    assert space.parse(answer("done()"), final_step=True).name == "done"
    assert section(answer("done()"), "Next action") == "Click it."


async def test_native_calls_are_checked_like_written_ones(space: ActionSpace) -> None:
    action = space.parse_call("click", '{"description": "OK", "count": 2}', final_step=False)
    assert (action.arguments, action.code) == ({"description": "OK", "count": 2}, "click(description='OK', count=2)")
    assert space.parse_call("fail", '{"reason": "no file"}', final_step=True).arguments == {"reason": "no file"}
    for name, arguments, problem in [
        ("click", "{not json", "not valid JSON"),
        ("click", "[1, 2]", "must be a JSON object"),
        ("click", '{"colour": "red"}', "has no parameter 'colour'"),
        ("click", '{"count": "two"}', "invalid arguments for click(): count"),
        ("teleport", "{}", "there is no action 'teleport'"),
    ]:
        with pytest.raises(UnusableAnswerError, match=re.escape(problem)):
            space.parse_call(name, arguments, final_step=False)
    with pytest.raises(UnusableAnswerError, match="only done"):
        space.parse_call("click", '{"description": "OK"}', final_step=True)
    definitions = space.tool_definitions(final_step=True)
    assert [d["function"]["name"] for d in definitions] == ["done", "fail"]


async def test_code_agent_is_offered_as_os_symphonys_call_code_agent(space: ActionSpace) -> None:
    assert "call_code_agent" in space.actions and "code_agent" not in space.actions
    assert "run_code" not in space.actions  # the Coder's own tool; the planner delegates to the Coder instead
    assert "call_code_agent(task: str)\n" in space.render(final_step=False)
    action = space.parse(answer('call_code_agent(task="Set autosave to true in ~/app.json")'), final_step=False)
    assert (action.name, action.tool, action.arguments) == (
        "call_code_agent",
        "code_agent",
        {"task": "Set autosave to true in ~/app.json"},
    )
    with pytest.raises(UnusableAnswerError, match="has no parameter 'budget'"):
        space.parse(answer('call_code_agent(task="x", budget=3)'), final_step=False)
    called = space.parse_call("call_code_agent", '{"task": "x"}', final_step=False)
    assert called.tool == "code_agent"
