"""Many MCP sessions at once over streamable HTTP against one server, reads and actions mixed (issue 12).

20 clients, each its own session, each clicks the Tk probe's button and types tokens of its own into its
entry while the others read the screen. Actions from different sessions must never interleave inside one
action: the entry ends up holding whole tokens only, and each typed token exactly once; no call fails.
The full run with latencies is benchmarks/robustness/load_http.py.
"""

from __future__ import annotations

import pytest
from mcp import Client

from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.http_server import http_server
from testkit.load import check_text, run_load
from testkit.tk_probe import TkProbe

pytestmark = pytest.mark.anyio

CLIENTS = 20
ROUNDS = 2


async def test_concurrent_sessions_never_interleave_inside_an_action(
    xdisplay: VirtualDisplay, tk_probe: TkProbe
) -> None:
    entry, button = tk_probe.centre("entry"), tk_probe.centre("button")
    async with http_server(display=xdisplay.name) as url:
        # Focus the entry once; every client then types into the focused field (a click inside the text would
        # move the cursor into an earlier token).
        async with Client(url) as setup:
            assert not (await setup.call_tool("click", {"x": entry[0], "y": entry[1], "space": "screen"})).is_error
        tk_probe.wait(lambda s: s.get("focus", "").endswith("entry"))
        result = await run_load(url, CLIENTS, ROUNDS, button, phrase="Press me")
    assert not result.errors, result.error_examples[:5]
    assert len(result.typed) == CLIENTS * ROUNDS and result.clicks == CLIENTS * ROUNDS
    state = tk_probe.wait(lambda s: len(s.get("entry", "")) >= sum(map(len, result.typed)), timeout=20)
    assert check_text(state["entry"], result.typed) == []
