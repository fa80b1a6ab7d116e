"""A repeated `find_text` on an unchanged screen, over stdio, old code against new code in one run.

Starts its own Xvfb at 1920x1080 with openbox and three text-filled xterms and two `symphony-mcp serve`
processes over the real stdio client: one runs the code at --before (a directory holding an older
`symphony_mcp`, e.g. `git archive <commit> symphony_mcp | tar -x -C DIR`), the other this checkout. Each
server reads the screen once (the first call, not measured), then the calls alternate between the two, which goes
first swapping every round, so both see the same machine load. Prints a markdown report and writes it to
--output. Run from the repository root:

    python -m benchmarks.overhead.find_text_repeat --before /tmp/speed-base
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
from dataclasses import dataclass, field

import anyio

from benchmarks.common import (
    BEFORE_AFTER,
    REPO,
    Stats,
    add_before_after_options,
    benchmark_desktop,
    call_tool,
    invocation,
    log,
    machine_facts,
    process_cpu_ms,
    publish_report,
    start_code_servers,
    table,
    verdict,
)

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "find_text_repeat.md"
PHRASE = "xkbcomp"  # in the `ls -l /usr/bin` listing of the top xterm
TARGET_MS = 20.0


@dataclass
class Samples:
    """One server's measured calls: wall ms, the pipeline's `ocr_ms`, and the server's CPU over all of them."""

    wall: list[float] = field(default_factory=list)
    ocr: list[float] = field(default_factory=list)
    cpu_ms: float = 0.0


async def measure(display: str, args: argparse.Namespace) -> dict[str, Samples]:
    arguments = {"phrase": PHRASE, "space": "screen"}
    samples = {name: Samples() for name, _ in BEFORE_AFTER}
    async with contextlib.AsyncExitStack() as stack:
        servers = await start_code_servers(stack, display, args.before)
        for server in servers.values():  # the first reading: engine start and a full OCR of the frame
            await call_tool(server.client, "find_text", arguments)
        for index in range(args.warmups + args.repeats):
            order = list(servers.items())
            for name, server in order if index % 2 else order[::-1]:  # neither always goes first
                cpu = process_cpu_ms(server.pid)
                took, result = await call_tool(server.client, "find_text", arguments)
                found = result.structured_content or {}
                if not found.get("matches"):
                    raise RuntimeError(f"{name}: {PHRASE!r} not found")
                if index >= args.warmups:
                    samples[name].wall.append(took)
                    samples[name].ocr.append(found["ocr_ms"])
                    samples[name].cpu_ms += process_cpu_ms(server.pid) - cpu
    return samples


def render(samples: dict[str, Samples], args: argparse.Namespace, command: str) -> str:
    rows = []
    for name, label in BEFORE_AFTER:
        wall, ocr = Stats(tuple(samples[name].wall)), Stats(tuple(samples[name].ocr))
        cpu = samples[name].cpu_ms / len(samples[name].wall)
        rows.append(
            [
                label,
                f"{wall.median:.1f}",
                f"{wall.p90:.1f}",
                f"{ocr.median:.1f}",
                f"{cpu:.1f}",
                verdict(wall.median <= TARGET_MS),
            ]
        )
    header = ["code", "median (ms)", "p90 (ms)", "server's `ocr_ms` median", "server CPU per call (ms)"]
    return "\n".join(
        [
            "# Repeated `find_text` on an unchanged screen",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *machine_facts(),
            "- Display: own Xvfb at 1920x1080x24 with openbox and three text-filled xterms; whole screen read",
            f"- Command: `{command}`",
            f"- Repetitions: {args.repeats} per server after {args.warmups} warm-ups, alternating (the first"
            " swapping each round); times in ms",
            f"- Call: `find_text` phrase={PHRASE!r} space=screen over stdio, after a first call that read the frame",
            "",
            *table([*header, f"<= {TARGET_MS:g} ms"], rows),
            "",
            "`ocr_ms` is the OCR pipeline's own time inside the server (capture excluded): for a repeated frame, the",
            "check that it is the frame read before. Server CPU: the server process's user + system time over the",
            "measured calls (all threads) divided by their number, which the machine's other load inflates far less",
            "than wall time.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_before_after_options(parser, DEFAULT_OUTPUT)
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
