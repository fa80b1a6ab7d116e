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

    .venv/bin/python -m benchmarks.overhead.coder_loop
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from mcp import Client

from benchmarks.common import (
    machine_facts,
    table,
    verdict,
)
from benchmarks.overhead.agent_loop import Samples, agent_server, pooled, run_benchmark, timed_rounds
from symphony_mcp.code.result_schemas import CoderResult, CoderTranscript
from testkit.model_server import ModelRequest, StandInModel

TARGET_MS = 100.0
TURNS = 20


def coder_answer(request: ModelRequest) -> str:
    """A block per turn until the 20th has run, then DONE; the summary request gets a sentence."""
    if str(request.messages[0]["content"]).startswith("Summarise"):
        return "Printed twenty numbers."
    ran = sum(1 for m in request.messages if m["role"] == "assistant")
    return f"Turn {ran + 1}.\n```python\nprint({ran})\n```" if ran < TURNS else "All printed.\nDONE"


def coder_samples(structured: dict[str, Any], outside_ms: float) -> Samples:
    result = CoderResult.model_validate(structured)
    turns = CoderTranscript.model_validate_json(Path(result.transcript_file).read_text()).turns
    assert result.completion_reason == "DONE" and len(turns) == TURNS + 1, result
    return {
        "step": [outside_ms / len(turns)],
        "loop": [t.overhead_ms for t in turns],
        "block": [t.run.duration_seconds * 1000 for t in turns if t.run is not None],
    }


async def measure(display: str, rounds: int, workdir: Path) -> list[Samples]:
    stand_in = StandInModel().start()
    stand_in.script(default=coder_answer)
    try:
        async with Client(agent_server(display, "coder", stand_in.url, workdir)) as client:
            arguments = {"task": "Print twenty numbers", "budget": TURNS + 1}
            return await timed_rounds(client, "coder", "code_agent", arguments, rounds, coder_samples)
    finally:
        stand_in.stop()


def report(samples: list[Samples], command: str) -> str:
    step, loop, block = (pooled(samples, key) for key in ("step", "loop", "block"))
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


if __name__ == "__main__":
    run_benchmark("coder_loop", __doc__.split("\n\n")[0], measure, report)
