"""Coder loop overhead: what code_agent costs per turn besides the coder model's calls.

Starts its own Xvfb desktop (`common.benchmark_desktop`), a stand-in coder model (`testkit/model_server.py`,
the OpenAI chat-completions protocol over real HTTP on 127.0.0.1, in this process) that answers at once, and
`symphony-mcp serve` spawned over stdio with the coder role pointed at it. Each round calls `code_agent` with
budget 21: twenty turns of a trivial python block (`print(n)`, run by the real confined executor), then DONE,
then the summary call. Per round, from the transcript and `model_status`:

- step overhead outside model calls = (the call's wall time - the coder role's model time) / turns; this
  includes the block's confined run, the screenshot for the first turn, the file snapshots before and after,
  transcript writes, MCP and progress (target <= 100 ms);
- loop overhead per turn = the turns' `overhead_ms` (parsing, prompt building, transcript bookkeeping:
  neither the model nor the executor);
- executor time per block = each turn's run `duration_seconds`.

Run from the repository root:

    .venv/bin/python benchmarks/coder_loop.py
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the benchmarks and testkit imports

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import anyio
from mcp import Client

from benchmarks.common import (
    Stats,
    benchmark_desktop,
    interpreter,
    log,
    machine_facts,
    publish_report,
    stdio_server,
    table,
    verdict,
)
from symphony_mcp.code.results import CoderResult, CoderTranscript
from symphony_mcp.models.registry import ModelStatus
from testkit.model_server import ModelRequest, StandInModel

TARGET_MS = 100.0
TURNS = 20


def coder_answer(request: ModelRequest) -> str:
    """A block per turn until the 20th has run, then DONE; the summary request gets a sentence."""
    if str(request.messages[0]["content"]).startswith("Summarise"):
        return "Printed twenty numbers."
    ran = sum(1 for m in request.messages if m["role"] == "assistant")
    return f"Turn {ran + 1}.\n```python\nprint({ran})\n```" if ran < TURNS else "All printed.\nDONE"


async def measure(display: str, rounds: int, workdir: Path) -> list[dict[str, list[float]]]:
    stand_in = StandInModel().start()
    stand_in.script(default=coder_answer)
    params = stdio_server(display)
    assert params.env is not None
    params.env |= {
        "SYMPHONY_MODELS__CODER__BASE_URL": stand_in.url,
        "SYMPHONY_MODELS__CODER__MODEL": "stand-in-coder",
        "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(workdir / "trajectories"),
        "SYMPHONY_OCR__WARM_UP": "false",
    }
    samples: list[dict[str, list[float]]] = []
    try:
        async with Client(params) as client:
            for index in range(rounds + 1):  # the first round warms up and is not kept
                before = await model_ms(client)
                started = time.perf_counter()
                called = await client.call_tool("code_agent", {"task": "Print twenty numbers", "budget": TURNS + 1})
                wall = (time.perf_counter() - started) * 1000
                if called.is_error:
                    raise RuntimeError(f"code_agent failed: {called.content}")
                result = CoderResult.model_validate(called.structured_content)
                model = await model_ms(client) - before
                transcript = CoderTranscript.model_validate_json(Path(result.transcript_file).read_text())
                turns = transcript.turns
                assert result.completion_reason == "DONE" and len(turns) == TURNS + 1, result
                round_samples = {
                    "step": [(wall - model) / len(turns)],
                    "loop": [t.overhead_ms for t in turns],
                    "block": [t.run.duration_seconds * 1000 for t in turns if t.run is not None],
                }
                log(f"round {index}: {round_samples['step'][0]:.1f} ms per turn outside model calls")
                if index:
                    samples.append(round_samples)
    finally:
        stand_in.stop()
    return samples


async def model_ms(client: Client) -> float:
    status = ModelStatus.model_validate((await client.call_tool("model_status", {})).structured_content)
    return next(r.usage.model_ms for r in status.roles if r.role == "coder")


def report(samples: list[dict[str, list[float]]], command: str) -> str:
    def pooled(key: str) -> Stats:
        return Stats(tuple(value for s in samples for value in s[key]))

    step, loop, block = pooled("step"), pooled("loop"), pooled("block")
    rows = [
        [
            "step overhead outside model calls (per round)",
            f"{step.median:.1f}",
            f"{max(step.samples):.1f}",
            f"<= {TARGET_MS:g}",
        ],
        ["loop bookkeeping per turn", f"{loop.median:.2f}", f"{loop.p90:.2f}", ""],
        ["confined block run (print)", f"{block.median:.1f}", f"{block.p90:.1f}", ""],
    ]
    return "\n".join(
        [
            "# Coder loop overhead",
            "",
            f"Command: `{command}`",
            "",
            *machine_facts(),
            f"- {len(samples)} rounds of code_agent (budget {TURNS + 1}: {TURNS} blocks, then DONE) over stdio",
            "",
            *table(["measure (ms)", "median", "max / p90", "target"], rows),
            "",
            f"Verdict: {verdict(step.median <= TARGET_MS)} (median step overhead {step.median:.1f} ms, "
            f"target <= {TARGET_MS:g} ms; the median block run {block.median:.1f} ms is part of it)",
            "",
            f"Mean step overhead per round: {', '.join(f'{v:.1f}' for v in step.samples)}; "
            f"stdev {statistics.pstdev(step.samples):.1f} ms",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/coder_loop.md")
    args = parser.parse_args()
    command = f"{interpreter()} benchmarks/coder_loop.py" + (f" --rounds {args.rounds}" if args.rounds != 5 else "")
    with tempfile.TemporaryDirectory() as tmp, benchmark_desktop() as display:
        samples = anyio.run(measure, display, args.rounds, Path(tmp))
    publish_report(report(samples, command), args.output)


if __name__ == "__main__":
    main()
