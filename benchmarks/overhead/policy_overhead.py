"""What the call pipeline costs per tool call: the offer check, the progress heartbeat, the time bound, error
shaping, the audit line, confirmation.

One no-op tool, registered on the SDK's plain MCPServer and on GuardedServer (tools/pipeline.py: the whole
pipeline; before issue 21 the heartbeat ran in server.py and these rows left it out) with the audit log off
and on, and with confirmation by a host that always accepts (2026-07-28 with its input-required round, and
2025-11-25 with a standalone elicitation). Every call goes through the real
MCP client in memory, so the differences are the server's own work. No display is needed. Run from
the repository root:

    python -m benchmarks.overhead.policy_overhead
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ElicitResult, ToolAnnotations

from benchmarks.common import REPO, Stats, elapsed_ms, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.config import PolicySettings
from symphony_mcp.tools.pipeline import GuardedServer

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "policy_overhead.md"


async def noop() -> str:
    """Does nothing: what is measured is the way there and back."""
    return "ok"


async def accept(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"allow": True})


def server(policy: dict[str, Any] | None) -> MCPServer:
    built = MCPServer("bench") if policy is None else GuardedServer(PolicySettings(**policy), "bench")
    built.tool(annotations=ToolAnnotations(destructiveHint=True))(noop)
    return built


async def measure(built: MCPServer, mode: str, repeats: int, warmups: int) -> Stats:
    samples: list[float] = []
    async with Client(built, mode=mode, elicitation_callback=accept) as client:
        for n in range(warmups + repeats):
            start = time.perf_counter()
            result = await client.call_tool("noop", {})
            took = elapsed_ms(start)
            if result.is_error:
                raise RuntimeError(f"noop failed: {result.content}")
            if n >= warmups:
                samples.append(took)
    return Stats(tuple(samples))


async def run(repeats: int, warmups: int) -> list[tuple[str, str, Stats]]:
    audit = Path(tempfile.mkdtemp(prefix="policy-bench-")) / "audit.jsonl"
    cases: list[tuple[str, dict[str, Any] | None, str]] = [
        ("SDK MCPServer (no policy)", None, "auto"),
        ("GuardedServer, audit off", {"audit": False}, "auto"),
        ("GuardedServer, audit on (default)", {"audit_file": str(audit)}, "auto"),
        ("+ confirmation, host accepts", {"audit_file": str(audit), "confirm_tools": ["noop"]}, "auto"),
        ("+ confirmation, host accepts", {"audit_file": str(audit), "confirm_tools": ["noop"]}, "legacy"),
    ]
    results = []
    for name, policy, mode in cases:
        log(f"{name} ({mode})")
        results.append((name, mode, await measure(server(policy), mode, repeats, warmups)))
    return results


def report(results: list[tuple[str, str, Stats]], repeats: int, warmups: int, command: str) -> str:
    base = results[0][2].median
    versions = {"auto": "2026-07-28", "legacy": "2025-11-25"}
    rows = [
        [name, versions[mode], f"{s.median:.3f}", f"{s.p90:.3f}", f"{(s.median - base) * 1000:+.0f}"]
        for name, mode, s in results
    ]
    lines = [
        "# Policy overhead per tool call",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command: `{command}`",
        f"- Repetitions: {repeats} calls per case after {warmups} warm-ups; one no-op tool; real MCP client in memory",
        "",
        *table(["server", "protocol", "median ms", "p90 ms", "median vs SDK (µs)"], rows),
        "",
        "The pipeline's own work (offer check, heartbeat, time bound, error shaping, audit line) is the difference",
        "between the first rows; confirmation adds what the host's elicitation costs (here a callback that accepts",
        "at once: at 2026-07-28 a second tools/call round, before that a request from the server mid-call).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repeats", type=int, default=1000)
    parser.add_argument("--warmups", type=int, default=50)
    args = parser.parse_args()
    results = anyio.run(run, args.repeats, args.warmups)
    command = f"{interpreter()} -m benchmarks.overhead.policy_overhead"
    if args.repeats != 1000:
        command += f" --repeats {args.repeats}"
    publish_report(report(results, args.repeats, args.warmups, command), args.output)


if __name__ == "__main__":
    main()
