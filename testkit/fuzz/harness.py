"""Calls tools through a connected MCP client and checks the invariants after every call.

After each call: it ended (a result, a tool error or a JSON-RPC error answer, never an internal error) within
the bound without a crash (the SDK's generic texts, the server's 'internal error'); the server is alive
and answers a cheap call; no pointer button is held; no key is held that was not held
before the call, except by `key_down`, whose keys the harness releases with `key_up` (same arguments) at the end
of each sequence, after which nothing may be held at all; no file was created outside the trajectory folder.
A violation raises `ViolationError` with the call that caused it.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from testkit.fuzz.desktop_state import DesktopState, Held
from testkit.fuzz.sandbox import Sandbox

CALL_BOUND = 30.0  # seconds any call may take before it counts as a hang (waits are bounded at 5 s here)
PING_BOUND = 10.0
# The cheap call that shows the server alive, desktop thread included (protocol 2026-07-28 has no ping).
ALIVE = "screen_info"
MAX_ERROR_TEXT = 10_000  # characters an error may have: a 1 MB argument must not come back whole
# The one pair whose contract is to hold a key across calls.
HOLD, RELEASE = "key_down", "key_up"
# JSON-RPC codes that answer a bad request (parse, invalid request, unknown method, invalid params).
CLIENT_FAULT_CODES = {-32700, -32600, -32601, -32602}
# The SDK answers a resource read that failed as anticipated (`ResourceError`) with -32603 and its message.
RESOURCE_FAULT_CODES = CLIENT_FAULT_CODES | {-32603}
# How a crash reads: the SDK's generic texts (it withholds the exception) and the server's own wrapper's.
CRASH = re.compile(
    r"^Error executing tool \S+$|internal error \(|^Error reading resource |^Error creating resource from template "
)


class ViolationError(AssertionError):
    pass


def describe(tool: str, arguments: Any) -> str:
    text = json.dumps(arguments, default=repr)
    return f"{tool}({text[:300]}{'...' if len(text) > 300 else ''})"


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    outcomes: Counter[str] = field(default_factory=Counter)
    by_tool: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, tool: str, outcome: str, seconds: float) -> None:
        self.latencies[tool].append(seconds)
        self.outcomes[outcome] += 1
        self.by_tool[tool][outcome] += 1

    @property
    def calls(self) -> int:
        return sum(self.outcomes.values())

    def percentile(self, tool: str | None, q: float) -> float:
        values = sorted(v for t, vs in self.latencies.items() if tool in (None, t) for v in vs)
        if not values:
            return math.nan
        return values[min(len(values) - 1, math.ceil(q * len(values)) - 1)] if q < 1 else values[-1]

    def median(self, tool: str | None = None) -> float:
        values = [v for t, vs in self.latencies.items() if tool in (None, t) for v in vs]
        return statistics.median(values) if values else math.nan


Caller = Callable[[], Awaitable[tuple[str, str]]]


class ToolClient(Protocol):
    """What the harness needs of a client: `mcp.Client`, or the raw one that sends NaN and lone surrogates."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult: ...

    async def read_resource(self, uri: str) -> Any: ...


class Harness:
    def __init__(self, client: ToolClient, sandbox: Sandbox, desktop: DesktopState, bound: float = CALL_BOUND) -> None:
        self.client = client
        self.sandbox = sandbox
        self.desktop = desktop
        self.bound = bound
        self.stats = Stats()
        self.pressed: list[dict[str, Any]] = []  # arguments of this sequence's successful key_down calls
        # The first violation as it happened: hypothesis replays a failing example, on a server whose state the
        # first run changed (a key still held), so the replay may report a later symptom instead.
        self.first_violation: ViolationError | None = None

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> str:
        async def call() -> tuple[str, str]:
            return _outcome(await self.client.call_tool(tool, arguments))

        outcome = await self.checked(tool, describe(tool, arguments), call)
        if tool == HOLD and outcome == "ok":
            self.pressed.append(arguments)
        return outcome

    async def read_resource(self, uri: str) -> str:
        async def read() -> tuple[str, str]:
            await self.client.read_resource(uri)
            return "ok", ""

        return await self.checked("resources/read", f"resources/read({uri[:300]!r})", read, RESOURCE_FAULT_CODES)

    async def checked(self, tool: str, what: str, call: Caller, fault_codes: set[int] = CLIENT_FAULT_CODES) -> str:
        """Make one call and check every invariant after it; returns the outcome's kind."""
        try:
            return await self._checked(tool, what, call, fault_codes)
        except ViolationError as violation:
            self.first_violation = self.first_violation or violation
            raise

    async def _checked(self, tool: str, what: str, call: Caller, fault_codes: set[int]) -> str:
        before = self.desktop.held()
        start = time.perf_counter()
        try:
            with anyio.fail_after(self.bound):
                outcome, text = await call()
        except TimeoutError:
            raise ViolationError(f"{what} did not end within {self.bound:g} s (hang)") from None
        except MCPError as exc:
            outcome, text = f"jsonrpc_error {exc.error.code}", exc.error.message
            if exc.error.code not in fault_codes:
                raise ViolationError(f"{what} got JSON-RPC error {exc.error.code}: {text[:500]}") from exc
        seconds = time.perf_counter() - start
        self.stats.add(tool, outcome, seconds)
        if CRASH.search(text):
            raise ViolationError(f"{what} crashed instead of giving a clear error: {text[:500]}")
        if len(text) > MAX_ERROR_TEXT:
            raise ViolationError(f"{what} gave an error of {len(text)} characters (echoes its input?): {text[:300]}")
        await self.check_alive(what)
        self.check_held(tool, what, before)
        self.check_files(what)
        return outcome

    async def check_alive(self, what: str) -> None:
        try:
            with anyio.fail_after(PING_BOUND):
                result = await self.client.call_tool(ALIVE, {})
        except Exception as exc:
            raise ViolationError(f"after {what} the server no longer answers {ALIVE}: {exc!r}") from exc
        if result.is_error:
            raise ViolationError(f"after {what} {ALIVE} fails: {_outcome(result)[1][:500]}")

    def check_held(self, tool: str, what: str, before: Held) -> None:
        held = self.desktop.held()
        if held.buttons:
            raise ViolationError(f"after {what} pointer buttons are held: {self.desktop.describe(held)}")
        new = held.keycodes - before.keycodes
        if new and tool != HOLD:
            extra = Held(frozenset(new), frozenset())
            raise ViolationError(f"after {what} keys are held that were not before: {self.desktop.describe(extra)}")

    def check_files(self, what: str, deep: bool = False) -> None:
        stray = self.sandbox.stray_files(deep=deep)
        if stray:
            listing = ", ".join(str(p) for p in stray[:10])
            raise ViolationError(f"after {what} files exist outside the trajectory folder: {listing}")

    async def end_sequence(self) -> None:
        """Release what key_down pressed (key_up with the same arguments); then nothing may be held."""
        pressed, self.pressed = self.pressed, []
        for arguments in reversed(pressed):
            await self.call_tool(RELEASE, arguments)
        held = self.desktop.held()
        if held.keycodes or held.buttons:
            done = ", ".join(describe(HOLD, a) for a in pressed) or "no key_down"
            violation = ViolationError(f"after releasing ({done}) still held: {self.desktop.describe(held)}")
            self.first_violation = self.first_violation or violation
            raise violation


def _outcome(result: CallToolResult) -> tuple[str, str]:
    text = " ".join(getattr(block, "text", "") for block in result.content)
    return ("tool_error", text) if result.is_error else ("ok", "")


def server_peak_rss_kib(sandbox: Sandbox) -> int | None:
    """VmHWM of the server process: the one running `serve` with the sandbox's group id."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            cmdline = (status.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if fields.get("Gid", "").split()[:1] == [str(sandbox.gid)] and b"serve" in cmdline:
            return int(fields["VmHWM"].split()[0])
    return None
