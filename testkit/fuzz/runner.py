"""Fuzz runs over one connected server: every listed tool alone, random sequences of tools, resource URIs.

Hypothesis drives the draws with a fixed seed (derandomize) and a bounded count; the MCP client runs on an
event loop in a thread of its own (an anyio blocking portal), so hypothesis' synchronous tests can call it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import ResourceTemplate, Tool

from testkit.fuzz.desktop_state import DesktopState
from testkit.fuzz.harness import Harness
from testkit.fuzz.raw_stdio import RawStdioClient
from testkit.fuzz.sandbox import Sandbox
from testkit.fuzz.values import INVALID_IDS, TRAVERSAL, arguments, uri_variables


@dataclass
class Session:
    portal: BlockingPortal
    harness: Harness
    tools: list[Tool]
    templates: list[ResourceTemplate]
    raw: bool  # over the raw JSON-RPC client: hostile draws include NaN, Infinity and lone surrogates


@contextlib.contextmanager
def connected(sandbox: Sandbox, raw: bool = False) -> Iterator[Session]:
    """The server under fuzz started in `sandbox` (through the MCP client, or the raw one), its tools and
    templates listed, the baseline of files taken."""
    # A schema-driven fuzzer is who --schema-rules is for: with the rules stated, valid draws are calls tools accept.
    params = sandbox.server_params("--schema-rules")
    opened: AbstractAsyncContextManager[Any] = RawStdioClient.open(params) if raw else Client(params)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(opened) as client:
        info = portal.call(client.call_tool, "screen_info", {})
        if info.is_error or not info.structured_content:
            raise RuntimeError(f"the server under fuzz has no desktop: {info.content}")
        sandbox.mark_baseline()
        desktop = DesktopState(info.structured_content["display"])
        try:
            tools = portal.call(client.list_tools).tools
            templates = portal.call(client.list_resource_templates).resource_templates
            yield Session(portal, Harness(client, sandbox, desktop), tools, templates, raw)
        finally:
            desktop.close()


def _settings(examples: int) -> settings:
    # No shrinking: the server is stateful, and the harness names the exact call that broke an invariant.
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def _run(session: Session, test: Callable[[], None]) -> None:
    """Run a hypothesis test; on failure report the first violation seen, not the replay's."""
    try:
        test()
    except Exception as exc:
        first = session.harness.first_violation
        if first is not None and first is not exc:
            raise first from exc
        raise


def _call(session: Session, data: st.DataObject, tool: Tool) -> None:
    valid = data.draw(st.booleans(), label="valid")
    args = data.draw(arguments(tool.input_schema, valid, session.raw), label=f"{tool.name} arguments")
    session.portal.call(session.harness.call_tool, tool.name, args)


def fuzz_each_tool(session: Session, examples: int) -> None:
    """Every tool the server lists, `examples` draws each (about half valid), one call per draw."""
    for tool in session.tools:
        fuzz_tool(session, tool, examples)


def fuzz_tool(session: Session, tool: Tool, examples: int) -> None:
    """One tool, `examples` draws (about half valid), one call per draw."""

    @_settings(examples)
    @given(data=st.data())
    def one_call(data: st.DataObject) -> None:
        _call(session, data, tool)
        session.portal.call(session.harness.end_sequence)

    _run(session, one_call)


def fuzz_sequences(session: Session, examples: int, longest: int = 5) -> None:
    """Random sequences of any listed tools (held keys, started tasks and frames carry over between calls)."""

    @_settings(examples)
    @given(data=st.data())
    def sequence(data: st.DataObject) -> None:
        for _ in range(data.draw(st.integers(1, longest), label="length")):
            _call(session, data, data.draw(st.sampled_from(session.tools), label="tool"))
        session.portal.call(session.harness.end_sequence)

    _run(session, sequence)


def fuzz_resources(session: Session, examples: int) -> None:
    """resources/read on every resource template with hostile variables, and on hostile URIs."""
    for template in session.templates:
        fuzz_template(session, template.uri_template, examples)
    fuzz_uris(session, examples)


def fuzz_uris(session: Session, examples: int) -> None:
    """resources/read on traversal strings and random text as URIs."""

    @_settings(examples)
    @given(uri=st.sampled_from(TRAVERSAL) | st.text(max_size=60))
    def read_any(uri: str) -> None:
        session.portal.call(session.harness.read_resource, uri)

    _run(session, read_any)


def fuzz_template(session: Session, pattern: str, examples: int) -> None:
    """resources/read on one resource template, its variables drawn hostile."""

    @_settings(examples)
    @given(values=uri_variables(re.findall(r"\{(\w+)\}", pattern)))
    def read(values: dict[str, str]) -> None:
        uri = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], pattern)
        session.portal.call(session.harness.read_resource, uri)

    _run(session, read)


def fuzz_values_of(session: Session, argument: str, values: tuple[Any, ...]) -> None:
    """Each of `values` as `argument` of every listed tool that takes it, its other arguments a valid draw: the
    hostile draws reach a given value only by chance, these reach each one."""
    for tool in session.tools:
        if argument in tool.input_schema.get("properties", {}):
            for value in values:
                _run(session, _call_with(session, tool, {argument: value}))


def _call_with(session: Session, tool: Tool, fixed: dict[str, Any]) -> Callable[[], None]:
    """A one-draw hypothesis test: `tool` called with valid arguments, `fixed` put over them."""

    @_settings(1)
    @given(data=st.data())
    def one_call(data: st.DataObject) -> None:
        args = data.draw(arguments(tool.input_schema, valid=True), label=f"{tool.name} arguments")
        session.portal.call(session.harness.call_tool, tool.name, {**args, **fixed})
        session.portal.call(session.harness.end_sequence)

    return one_call


def fuzz_invalid_ids(session: Session) -> None:
    """Every listed tool called with each request id JSON-RPC does not allow: each gets an error answer (id null),
    and the server stays alive (raw sessions only: the MCP client numbers its requests itself)."""
    client = session.harness.client
    assert isinstance(client, RawStdioClient), "invalid ids need the raw client"
    for tool in session.tools:
        for request_id in INVALID_IDS:

            async def call(tool: str = tool.name, request_id: Any = request_id) -> tuple[str, str]:
                await client.call_with_invalid_id(request_id, tool, {})
                return "ok", ""

            outcome = session.portal.call(
                session.harness.checked, tool.name, f"{tool.name} with id {request_id!r}", call
            )
            assert outcome == "jsonrpc_error -32600", (tool.name, request_id, outcome)


def tool_names(session: Session) -> list[str]:
    return [tool.name for tool in session.tools]
