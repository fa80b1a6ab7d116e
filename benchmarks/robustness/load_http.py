"""Many concurrent streamable-HTTP sessions against one server: per-tool latency, errors and losses.

The CI test's run (testkit/load.py, tests/test_load_http.py) at a larger size: N clients, each its own MCP
session, R rounds each of a read (screenshot, screen_info or list_windows), a click on the Tk probe's button,
a typed token of its own into the probe's focused entry and, every fourth round, a find_text; in a random order
per round. Afterwards the entry must hold whole tokens only, each typed token once: a broken token means two
sessions' actions interleaved inside one action, a missing one a lost action.

    .venv/bin/python -m benchmarks.robustness.load_http [--clients 20] [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.common import REPO, interpreter, log, machine_facts, publish_report, table
from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.virtual_display import start_virtual_display
from testkit.display import isolate_environment, wait_for_window_manager
from testkit.http_server import http_server
from testkit.load import LoadResult, check_text, run_load
from testkit.tk_probe import running_probe

OUTPUT = REPO / "benchmarks" / "results" / "load_http.md"
RESOLUTION = "1920x1080"


async def measure(display: str, probe_dir: Path, args: argparse.Namespace) -> tuple[LoadResult, list[str]]:
    with running_probe(probe_dir) as probe:
        entry, button = probe.centre("entry"), probe.centre("button")
        async with http_server(display=display) as url:
            async with Client(url) as setup:
                await setup.call_tool("click", {"x": entry[0], "y": entry[1], "space": "screen"})
            probe.wait(lambda s: s.get("focus", "").endswith("entry"))
            log(f"{args.clients} clients x {args.rounds} rounds")
            result = await run_load(url, args.clients, args.rounds, button, phrase="Press me", seed=args.seed)
        expected = sum(map(len, result.typed))
        try:
            state = probe.wait(lambda s: len(s.get("entry", "")) >= expected, timeout=30)
        except AssertionError:
            state = probe.state()
        return result, check_text(state.get("entry", ""), result.typed)


def report(result: LoadResult, problems: list[str], args: argparse.Namespace, started: datetime) -> str:
    attempted = args.clients * args.rounds
    rows = [
        [
            tool,
            str(len(values)),
            f"{result.percentile(tool, 0.5) * 1000:.0f}",
            f"{result.percentile(tool, 0.99) * 1000:.0f}",
            f"{max(values) * 1000:.0f}",
        ]
        for tool, values in sorted(result.latencies.items())
    ]
    errors = ", ".join(f"{kind} {n}" for kind, n in result.errors.most_common()) or "none"
    lines = [
        "# Concurrent streamable-HTTP sessions",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Display: own Xvfb at {RESOLUTION}x24 with openbox and the Tk probe (tests/apps/tk_probe.py)",
        "- Server: `symphony-mcp serve --transport http` (defaults: 50 ms settle after each action)",
        f"- Command: `{interpreter()} -m benchmarks.robustness.load_http --clients {args.clients} "
        f"--rounds {args.rounds} --seed {args.seed}`",
        f"- {args.clients} sessions at once, {args.rounds} rounds each: a read, a click, a typed token, a "
        "find_text every fourth round; latency is each call's round trip as its client saw it (queueing behind "
        "the other sessions' actions included)",
        "",
        f"- Calls: {result.calls} succeeded in {result.seconds:.1f} s ({result.calls / result.seconds:.1f} calls/s)",
        f"- Errors: {errors}",
        f"- Typed tokens: {len(result.typed)} of {attempted} calls succeeded; clicks {result.clicks} of {attempted}",
        f"- Entry text check (whole tokens only, each once): {'; '.join(problems) or 'passed'}",
        "",
        *table(["tool", "calls", "p50 ms", "p99 ms", "max ms"], rows),
    ]
    if result.error_examples:
        lines += ["", "Errors seen (first 5):", "", *(f"- `{e}`" for e in result.error_examples[:5])]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    started = datetime.now(UTC)
    isolate_environment()  # the tests' fonts and a fresh state directory, as in the CI test
    display = start_virtual_display(DisplaySettings(resolution=RESOLUTION, window_manager="openbox"))
    os.environ["DISPLAY"] = display.name
    try:
        wait_for_window_manager()
        with tempfile.TemporaryDirectory(prefix="load-http-") as probe_dir:
            result, problems = anyio.run(measure, display.name, Path(probe_dir), args)
    finally:
        display.stop()
    publish_report(report(result, problems, args, started), args.output)


if __name__ == "__main__":
    main()
