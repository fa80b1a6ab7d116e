"""A repeated `find_text` on an unchanged screen, over stdio, old code against new code in one run.

Starts its own Xvfb at 1920x1080 with openbox and three text-filled xterms and two `symphony-mcp serve`
processes over the real stdio client: one runs the code at --before (a directory holding an older
`symphony_mcp`, e.g. `git archive <commit> symphony_mcp | tar -x -C DIR`), the other this checkout. Each
server reads the screen once (the first call, not measured), then the calls alternate between the two so both
see the same machine load. Prints a markdown report and writes it to --output. Run from the repository root:

    python -m benchmarks.overhead.find_text_repeat --before /tmp/speed-base
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.common import (
    REPO,
    Stats,
    benchmark_desktop,
    call_tool,
    invocation,
    log,
    machine_facts,
    publish_report,
    stdio_server_of,
    table,
    verdict,
)

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "find_text_repeat.md"
PHRASE = "xkbcomp"  # in the `ls -l /usr/bin` listing of the top xterm
TARGET_MS = 20.0


async def measure(display: str, args: argparse.Namespace) -> dict[str, Stats]:
    arguments = {"phrase": PHRASE, "space": "screen"}
    samples: dict[str, list[float]] = {"before": [], "after": []}
    ocr: dict[str, list[float]] = {"before": [], "after": []}
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            "before": await stack.enter_async_context(Client(stdio_server_of(display, args.before))),
            "after": await stack.enter_async_context(Client(stdio_server_of(display, REPO))),
        }
        for client in clients.values():  # the first reading: engine start and a full OCR of the frame
            await call_tool(client, "find_text", arguments)
        for index in range(args.warmups + args.repeats):
            for name, client in clients.items():
                took, result = await call_tool(client, "find_text", arguments)
                found = result.structured_content or {}
                if not found.get("matches"):
                    raise RuntimeError(f"{name}: {PHRASE!r} not found")
                if index >= args.warmups:
                    samples[name].append(took)
                    ocr[name].append(found["ocr_ms"])
    return {name: Stats(tuple(values)) for name, values in samples.items()} | {
        f"{name} ocr": Stats(tuple(values)) for name, values in ocr.items()
    }


def render(stats: dict[str, Stats], args: argparse.Namespace, command: str) -> str:
    rows = [
        [
            label,
            f"{stats[name].median:.1f}",
            f"{stats[name].p90:.1f}",
            f"{stats[name + ' ocr'].median:.1f}",
            verdict(stats[name].median <= TARGET_MS),
        ]
        for name, label in (("before", "before (--before)"), ("after", "after (this checkout)"))
    ]
    return "\n".join(
        [
            "# Repeated `find_text` on an unchanged screen",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *machine_facts(),
            "- Display: own Xvfb at 1920x1080x24 with openbox and three text-filled xterms; whole screen read",
            f"- Command: `{command}`",
            f"- Repetitions: {args.repeats} per server after {args.warmups} warm-ups, alternating; times in ms",
            f"- Call: `find_text` phrase={PHRASE!r} space=screen over stdio, after a first call that read the frame",
            "",
            *table(["code", "median (ms)", "p90 (ms)", "server's `ocr_ms` median", f"<= {TARGET_MS:g} ms"], rows),
            "",
            "`ocr_ms` is the OCR pipeline's own time inside the server (capture excluded): for a repeated frame, the",
            "check that it is the frame read before.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="directory holding the old symphony_mcp")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="markdown results file")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--warmups", type=int, default=3)
    args = parser.parse_args()
    command = invocation()
    with benchmark_desktop() as display:
        log(f"benchmark display {display}")
        stats = anyio.run(measure, display, args)
    publish_report(render(stats, args, command), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
