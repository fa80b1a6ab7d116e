"""The searcher's step overhead before and after its network confinement, in one run (issue 25, items 3 and 4).

Before (commit 2a0e050): Chromium on the host network, each request checked in Playwright's route and fetched by
Playwright itself. After (this tree): Chromium in its own network namespace, every connection through the relay
and the policy proxy, the route's fetches through the same proxy. The workload is `search_loop.py`'s (a stand-in
searcher that answers at once, budget 21 on the local test site, over stdio); the two versions take turns, round
by round, so that load on the machine falls on both alike. The old package is taken from git (`git archive`) into
a temporary folder and run from there. Run from the repository root:

    .venv/bin/python -m benchmarks.overhead.search_network
"""

from __future__ import annotations

import argparse
import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

import anyio

from benchmarks.common import REPO, Stats, benchmark_desktop, interpreter, log, machine_facts, publish_report, table
from benchmarks.overhead.search_loop import STEPS, measure

BEFORE = "2a0e050"
Samples = list[dict[str, list[float]]]


def checkout(commit: str, folder: Path) -> Path:
    """The package as it was at `commit`, extracted into `folder` (which becomes its PYTHONPATH)."""
    archive = subprocess.run(["git", "archive", commit, "symphony_mcp"], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def report(before: Samples, after: Samples, command: str) -> str:
    rows = []
    for name, key in (("step overhead outside model calls (per round)", "step"), ("in-loop overhead per step", "loop")):
        old = Stats(tuple(v for s in before for v in s[key]))
        new = Stats(tuple(v for s in after for v in s[key]))
        rows.append([name, f"{old.median:.1f}", f"{new.median:.1f}", f"{new.median - old.median:+.1f}"])
    return "\n".join(
        [
            "# Searcher step overhead before and after the network confinement",
            "",
            f"Command: `{command}`",
            "",
            *machine_facts(),
            f"- Before: commit {BEFORE} (route check + Playwright fetch, host network). After: this tree (network "
            "namespace, relay, policy proxy).",
            f"- {len(before)} rounds each, alternating, of search_tutorial (budget {STEPS + 1}: a click to the "
            "how-to, the cookie banner, scrolls, then done) over stdio, headless Chromium at 1280x800, the local "
            "test site; each version's server warms up with one round first",
            "",
            *table(["measure (median, ms)", "before", "after", "difference"], rows),
            "",
        ]
    )


async def alternate(display: str, rounds: int, workdir: Path, old: Path) -> tuple[Samples, Samples]:
    before: Samples = []
    after: Samples = []
    for index in range(rounds):
        log(f"pair {index + 1} of {rounds}")
        before += await measure(display, 1, workdir / f"before-{index}", old)
        after += await measure(display, 1, workdir / f"after-{index}", REPO)
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/search_network.md")
    args = parser.parse_args()
    command = f"{interpreter()} -m benchmarks.overhead.search_network" + (
        f" --rounds {args.rounds}" if args.rounds != 4 else ""
    )
    with tempfile.TemporaryDirectory() as tmp, benchmark_desktop() as display:
        old = checkout(BEFORE, Path(tmp) / "before")
        before, after = anyio.run(alternate, display, args.rounds, Path(tmp), old)
    publish_report(report(before, after, command), args.output)


if __name__ == "__main__":
    main()
