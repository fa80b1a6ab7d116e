"""The scaffold the tool-agent loop benchmarks share (coder_loop.py, search_loop.py): `symphony-mcp serve` over stdio
with one model role pointed at a stand-in that answers at once, the agent's tool called round after round (the first
round warms up and is not kept), and per round the call's wall time minus the role's model time, as `model_status`
reports it: what the loop costs besides the model."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from benchmarks.common import REPO, Stats, benchmark_desktop, interpreter, log, publish_report, stdio_server
from symphony_mcp.models.registry import ModelStatus

Samples = dict[str, list[float]]  # per round: a list of values per measure
# A round's samples from the tool's structured result and its time outside the model's calls (ms).
RoundSamples = Callable[[dict[str, Any], float], Samples]
Measure = Callable[[str, int, Path], Awaitable[list[Samples]]]  # (display, rounds, work folder) -> kept rounds
Report = Callable[[list[Samples], str], str]  # (kept rounds, the command) -> the report
ROUNDS = 5


def agent_server(
    display: str, role: str, model_url: str, workdir: Path, source: Path | None = None, **settings: str
) -> StdioServerParameters:
    """The server with `role` on the stand-in at `model_url`, trajectories in `workdir`, no OCR warm-up, and
    `settings` (environment variables) besides; it runs the package in `source` (a checkout's root) when given."""
    params = stdio_server(display)
    assert params.env is not None
    prefix = f"SYMPHONY_MODELS__{role.upper()}__"
    params.env |= {
        f"{prefix}BASE_URL": model_url,
        f"{prefix}MODEL": f"stand-in-{role}",
        "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(workdir / "trajectories"),
        "SYMPHONY_OCR__WARM_UP": "false",
        **settings,
    }
    if source is not None:
        params.env["PYTHONPATH"] = str(source)
    return params


async def model_ms(client: Client, role: str) -> float:
    """The role's model time so far, in ms, as the server counts it."""
    status = ModelStatus.model_validate((await client.call_tool("model_status", {})).structured_content)
    return next(r.usage.model_ms for r in status.roles if r.role == role)


async def timed_rounds(
    client: Client, role: str, tool: str, arguments: dict[str, Any], rounds: int, samples_of: RoundSamples
) -> list[Samples]:
    """`rounds` kept calls of `tool` after one warm-up; each round's samples from `samples_of`."""
    kept: list[Samples] = []
    for index in range(rounds + 1):
        before = await model_ms(client, role)
        started = time.perf_counter()
        called = await client.call_tool(tool, arguments)
        wall = (time.perf_counter() - started) * 1000
        if called.is_error or called.structured_content is None:
            raise RuntimeError(f"{tool} failed: {called.content}")
        outside = wall - (await model_ms(client, role) - before)
        samples = samples_of(called.structured_content, outside)
        log(f"round {index}: {samples['step'][0]:.1f} ms per step outside model calls")
        if index:
            kept.append(samples)
    return kept


def pooled(samples: list[Samples], key: str) -> Stats:
    """One measure's values over all kept rounds."""
    return Stats(tuple(value for s in samples for value in s[key]))


def run_benchmark(name: str, description: str, measure: Measure, report: Report) -> None:
    """The command line of benchmarks.overhead.`name`: `--rounds` on its own desktop, the report in
    benchmarks/results/`name`.md with the command that produced it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--output", type=Path, default=REPO / f"benchmarks/results/{name}.md")
    args = parser.parse_args()
    rounds = f" --rounds {args.rounds}" if args.rounds != ROUNDS else ""
    command = f"{interpreter()} -m benchmarks.overhead.{name}{rounds}"
    with tempfile.TemporaryDirectory() as tmp, benchmark_desktop() as display:
        samples = anyio.run(measure, display, args.rounds, Path(tmp))
    publish_report(report(samples, command), args.output)
