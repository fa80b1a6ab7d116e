"""`run_code` overhead of two versions of the package measured in one run: a baseline commit (default 2a0e050,
before the issue 25 fixes: descriptor-bound workdirs, the memory cgroup, the sized /tmp, the disk watch, the block
in a memfd) and this working tree.

Both servers are spawned over stdio at once, each with its own trajectory folder, and called in alternation (the
order swapped every round), so machine load falls on both alike. The baseline's `symphony_mcp` comes from
`git archive` into a temporary folder (nothing in the repository changes) and runs from there with the same
interpreter. Overhead = run_code median - bare interpreter median (as in run_code_overhead.py). Starts its own
Xvfb. Run from the repository root:

    python -m benchmarks.overhead.run_code_before_after
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

from mcp import Client, StdioServerParameters

from benchmarks.common import REPO, Stats, elapsed_ms, interpreter, log, machine_facts, publish_report, table
from benchmarks.overhead.run_code_overhead import BLOCKS, bare
from symphony_mcp.code.types import Language
from symphony_mcp.config import DisplaySettings
from symphony_mcp.desktop.virtual_display import start_virtual_display

DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "run_code_before_after.md"
BASELINE = "2a0e050"
WARM_UPS = 3


def python() -> str:
    """The venv's interpreter by its real prefix: a venv reached through a link is not bound into the baseline's
    sandbox (fixed since), so both versions run as the same real path."""
    return str(Path(sys.prefix).resolve() / "bin" / Path(sys.executable).name)


def extract(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, "symphony_mcp"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def server(source: Path, tree: Path, display: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=python(),
        args=[
            "-m",
            "symphony_mcp.cli",
            "serve",
            "--display",
            display,
            "--virtual-display",
            "never",
            "--log-level",
            "WARNING",
        ],
        env={
            "DISPLAY": display,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(tree),
            "PYTHONPATH": str(source),
            "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(tree / "trajectories"),
        },
    )


async def call(client: Client, language: Language) -> float:
    start = time.perf_counter()
    result = await client.call_tool("run_code", {"language": language, "code": BLOCKS[language], "timeout_s": 10})
    took = elapsed_ms(start)
    if result.is_error or (result.structured_content or {}).get("stdout") != "ok\n":
        raise RuntimeError(f"run_code failed: {result.content}")
    return took


async def measure(sources: dict[str, Path], tree: Path, display: str, repeats: int) -> dict[str, dict[str, Stats]]:
    samples: dict[str, dict[str, list[float]]] = {name: {lang: [] for lang in BLOCKS} for name in sources}
    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(Client(server(source, tree / name, display)))
            for name, source in sources.items()
        }
        for language in BLOCKS:
            log(f"{language}: {repeats} calls each, alternating")
            for n in range(repeats + WARM_UPS):
                order = list(clients) if n % 2 == 0 else list(reversed(clients))
                for name in order:
                    took = await call(clients[name], language)
                    if n >= WARM_UPS:
                        samples[name][language].append(took)
    return {name: {lang: Stats(tuple(s)) for lang, s in per.items()} for name, per in samples.items()}


def report(
    results: dict[str, dict[str, Stats]], own: dict[str, Stats], baseline: str, repeats: int, command: str
) -> str:
    header = [
        "language",
        "bare run ms",
        f"before ({baseline}) ms",
        "after ms",
        "overhead before ms",
        "overhead after ms",
    ]
    rows = []
    for language in BLOCKS:
        before, after = results["before"][language], results["after"][language]
        rows.append(
            [
                language,
                f"{own[language].median:.1f}",
                f"{before.median:.1f} (p90 {before.p90:.1f})",
                f"{after.median:.1f} (p90 {after.p90:.1f})",
                f"{before.median - own[language].median:.1f}",
                f"{after.median - own[language].median:.1f}",
            ]
        )
    return "\n".join(
        [
            "# run_code overhead before and after the issue 25 fixes",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *machine_facts(),
            f"- Before: git {baseline} (from git archive); after: this tree",
            f"- Command: `{command}`",
            f"- Repetitions: {repeats} calls per version and language (medians) after {WARM_UPS} warm-ups, the two "
            "servers called in alternation; blocks: `print('ok')`, `echo ok`",
            "",
            *table(header, rows),
            "",
            "run_code: the tool called through the real MCP client over stdio (bubblewrap, default settings, as root:",
            "after = descriptor walk of the workdir, pids + memory cgroups, sized /tmp, block in a memfd, disk watch).",
            "overhead = run_code median - bare median (a fresh interpreter process on the block's file).",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--baseline", default=BASELINE)
    args = parser.parse_args()
    tree = Path(tempfile.mkdtemp(prefix="run-code-before-after-", dir="/var/tmp"))
    display = start_virtual_display(DisplaySettings(resolution="1024x768", window_manager=None))
    try:
        sources = {"before": extract(args.baseline, tree / "baseline"), "after": REPO}
        results = asyncio.run(measure(sources, tree, display.name, args.repeats))
        own = {}
        for language, code in BLOCKS.items():
            block = tree / f"block.{language}"
            block.write_text(code)
            own[language] = bare(language, block, args.repeats)
    finally:
        display.stop()
        shutil.rmtree(tree, ignore_errors=True)
    command = f"{interpreter()} -m benchmarks.overhead.run_code_before_after"
    if args.repeats != 50:
        command += f" --repeats {args.repeats}"
    if args.baseline != BASELINE:
        command += f" --baseline {args.baseline}"
    publish_report(report(results, own, args.baseline, args.repeats, command), args.output)


if __name__ == "__main__":
    main()
