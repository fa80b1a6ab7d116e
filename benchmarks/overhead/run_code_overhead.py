"""What `run_code` adds to a block's own run time: spawn, confinement (bubblewrap, rlimits), output collection and
the MCP round trip over stdio.

Per language (python, bash) one trivial block is timed three ways: run bare (a fresh interpreter process on the
block's file, the block's own run time), through the executor in this process (LocalExecutor, bubblewrap and
unshare), and as `run_code` calls to `symphony-mcp serve` spawned over stdio. The overhead is the stdio median
minus the bare median; the target is <= 60 ms. Starts its own Xvfb (the server needs a display). Run from the
repository root:

    python -m benchmarks.overhead.run_code_overhead
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from benchmarks.common import REPO, Stats, elapsed_ms, interpreter, log, machine_facts, publish_report, table, verdict
from symphony_mcp.code.local import LocalExecutor
from symphony_mcp.code.types import Language
from symphony_mcp.config import CodeSettings, DisplaySettings
from symphony_mcp.desktop.virtual_display import start_virtual_display

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "run_code_overhead.md"
TARGET_MS = 60.0
BLOCKS: dict[Language, str] = {"python": "print('ok')\n", "bash": "echo ok\n"}


def bare(language: Language, block: Path, repeats: int) -> Stats:
    command = [sys.executable if language == "python" else shutil.which("bash") or "bash", str(block)]
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(elapsed_ms(start))
    return Stats(tuple(samples))


async def in_process(settings: CodeSettings, workdir: Path, language: Language, repeats: int) -> Stats:
    executor = LocalExecutor(settings, workdir)
    samples = []
    for n in range(repeats + 3):
        start = time.perf_counter()
        run = await executor.run(language, BLOCKS[language], 10)
        took = elapsed_ms(start)
        if run.stdout != "ok\n":
            raise RuntimeError(f"{language} block failed: {run}")
        if n >= 3:
            samples.append(took)
    return Stats(tuple(samples))


async def over_stdio(params: StdioServerParameters, repeats: int) -> dict[Language, Stats]:
    results: dict[Language, Stats] = {}
    async with Client(params) as client:
        for language, code in BLOCKS.items():
            samples = []
            for n in range(repeats + 3):
                start = time.perf_counter()
                result = await client.call_tool("run_code", {"language": language, "code": code, "timeout_s": 10})
                took = elapsed_ms(start)
                if result.is_error or (result.structured_content or {}).get("stdout") != "ok\n":
                    raise RuntimeError(f"run_code failed: {result.content}")
                if n >= 3:
                    samples.append(took)
            results[language] = Stats(tuple(samples))
    return results


async def measure(repeats: int, tree: Path, display: str) -> list[list[str]]:
    block_dir = tree / "blocks"
    block_dir.mkdir()
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "symphony-mcp"),
        args=["serve", "--display", display, "--virtual-display", "never", "--log-level", "WARNING"],
        env={
            "DISPLAY": display,
            "PATH": os.environ["PATH"],
            "HOME": str(tree),
            "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(tree / "trajectories"),
        },
    )
    log("run_code over stdio")
    stdio = await over_stdio(params, repeats)
    rows = []
    for language, code in BLOCKS.items():
        block = block_dir / f"block.{language}"
        block.write_text(code)
        log(f"{language}: bare, bwrap, unshare")
        own = bare(language, block, repeats)
        confined = {
            backend: await in_process(CodeSettings(backend=backend), tree / "work", language, repeats)  # type: ignore[arg-type]
            for backend in ("bwrap", "unshare")
        }
        overhead = stdio[language].median - own.median
        rows.append(
            [
                language,
                f"{own.median:.1f}",
                f"{confined['bwrap'].median:.1f}",
                f"{confined['unshare'].median:.1f}",
                f"{stdio[language].median:.1f} (p90 {stdio[language].p90:.1f})",
                f"{overhead:.1f}",
                verdict(overhead <= TARGET_MS),
            ]
        )
    return rows


def report(rows: list[list[str]], repeats: int, command: str) -> str:
    header = [
        "language",
        "bare run ms",
        "executor, bwrap ms",
        "executor, unshare ms",
        "run_code over stdio ms",
        "overhead ms",
        f"<= {TARGET_MS:g} ms",
    ]
    lines = [
        "# run_code overhead per call",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Command: `{command}`",
        f"- Repetitions: {repeats} runs per case (medians) after 3 warm-ups; blocks: `print('ok')`, `echo ok`",
        "",
        *table(header, rows),
        "",
        "bare run: a fresh interpreter process on the block's file (the block's own run time). executor: the",
        "LocalExecutor in this process (confinement, prlimit, a pids cgroup as root, output collection).",
        "run_code: the tool called through the real MCP client over stdio (bubblewrap, default settings).",
        "overhead = run_code median - bare median.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    tree = Path(tempfile.mkdtemp(prefix="run-code-bench-"))
    display = start_virtual_display(DisplaySettings(resolution="1024x768", window_manager=None))
    try:
        rows = asyncio.run(measure(args.repeats, tree, display.name))
    finally:
        display.stop()
        shutil.rmtree(tree, ignore_errors=True)
    command = f"{interpreter()} -m benchmarks.overhead.run_code_overhead"
    if args.repeats != 50:
        command += f" --repeats {args.repeats}"
    publish_report(report(rows, args.repeats, command), args.output)


if __name__ == "__main__":
    main()
