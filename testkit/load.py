"""Many MCP sessions at once against one streamable-HTTP server: reads and actions mixed, per-tool latencies.

Each client is a separate MCP session (its own `mcp.Client`, its own Mcp-Session-Id). Every client clicks a
button and types tokens of its own into the focused text field; the caller checks afterwards that the field
holds whole tokens only, each once (an action from one session never runs inside another's).
"""

from __future__ import annotations

import math
import random
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client

TOKEN = re.compile(r"\[(\d+)\.(\d+)\]")
READS = ("screenshot", "screen_info", "list_windows", "find_text")


def token(client: int, round_: int) -> str:
    return f"[{client}.{round_}]"


@dataclass
class LoadResult:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    error_examples: list[str] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)  # tokens whose `type` call succeeded
    clicks: int = 0  # click calls that succeeded
    seconds: float = 0.0

    def percentile(self, tool: str, q: float) -> float:
        values = sorted(self.latencies.get(tool, []))
        return values[max(0, math.ceil(q * len(values)) - 1)] if values else math.nan

    @property
    def calls(self) -> int:
        return sum(len(v) for v in self.latencies.values())


def check_text(text: str, typed: list[str]) -> list[str]:
    """What is wrong with the field's final text: pieces that are not whole tokens, tokens lost or repeated."""
    problems = []
    pieces = TOKEN.findall(text)
    rebuilt = "".join(f"[{a}.{b}]" for a, b in pieces)
    if rebuilt != text:
        problems.append(f"the text is not a concatenation of whole tokens: {text!r}")
    found = Counter(f"[{a}.{b}]" for a, b in pieces)
    lost = sorted(set(typed) - set(found))
    repeated = sorted(t for t, n in found.items() if n > 1)
    unknown = sorted(set(found) - set(typed))
    if lost:
        problems.append(f"{len(lost)} typed tokens are missing: {lost[:10]}")
    if repeated or unknown:
        problems.append(f"tokens repeated {repeated[:10]} or never typed {unknown[:10]}")
    return problems


async def _timed(result: LoadResult, client: Client, tool: str, arguments: dict[str, Any]) -> bool:
    start = time.perf_counter()
    try:
        outcome = await client.call_tool(tool, arguments)
    except Exception as exc:  # a transport or protocol failure counts as an error, the run goes on
        result.errors[f"{tool}: {type(exc).__name__}"] += 1
        result.error_examples.append(f"{tool}({arguments}): {exc!r}"[:300])
        return False
    result.latencies[tool].append(time.perf_counter() - start)
    if outcome.is_error:
        result.errors[f"{tool}: tool error"] += 1
        result.error_examples.append(f"{tool}({arguments}): {outcome.content}"[:300])
        return False
    return True


async def _client(
    url: str, index: int, rounds: int, button: tuple[int, int], phrase: str, seed: int, result: LoadResult
) -> None:
    rng = random.Random(seed * 1000 + index)
    async with Client(url) as client:
        for round_ in range(rounds):
            steps: list[tuple[str, dict[str, Any]]] = [
                (rng.choice(READS[:3]), {}),
                ("click", {"x": button[0], "y": button[1], "space": "screen"}),
                ("type", {"text": token(index, round_)}),
            ]
            if (index + round_) % 4 == 0:
                steps.append(("find_text", {"phrase": phrase}))
            rng.shuffle(steps)
            for tool, arguments in steps:
                ok = await _timed(result, client, tool, arguments)
                if ok and tool == "type":
                    result.typed.append(arguments["text"])
                if ok and tool == "click":
                    result.clicks += 1


async def run_load(
    url: str, clients: int, rounds: int, button: tuple[int, int], phrase: str, seed: int = 0
) -> LoadResult:
    """`clients` sessions at once, `rounds` rounds each of: a read, a click on `button` (screen pixels), a
    typed token, and every fourth round a find_text for `phrase`; in a random order per round."""
    result = LoadResult()
    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(clients):
            group.start_soon(_client, url, index, rounds, button, phrase, seed, result)
    result.seconds = time.perf_counter() - start
    return result
