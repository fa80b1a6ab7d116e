"""Searcher loop overhead: what search_tutorial costs per browsing step besides the searcher model's calls.

Starts its own Xvfb desktop (`common.benchmark_desktop`), the local test website (`testkit/web_site.py`, real
HTTP on 127.0.0.1), a stand-in searcher model (`testkit/model_server.py`, the OpenAI chat-completions protocol
over real HTTP, in this process) that answers at once, and `symphony-mcp serve` spawned over stdio with the
searcher role pointed at it and the engine at the test site. Each round calls `search_tutorial` with budget 21:
the results page, then the how-to page (one click, the cookie banner), then scrolls down and up on it until
twenty steps are done, then done(tutorial). Per round, from the transcript and `model_status`:

- step overhead outside model calls = (the call's wall time - the searcher's model time) / steps: the page view
  (screenshot, element list, text), marks, the marked PNG kept in the transcript, the image for the model, the
  action and its wait, the transcript write, MCP and progress; plus once per search the browser's start and
  close and the caller's screenshot (target <= 300 ms at 1280x800);
- in-loop overhead per step = each step's `overhead_ms` (the same without the browser's start and close and the
  caller's screenshot).

Run from the repository root:

    .venv/bin/python -m benchmarks.overhead.search_loop
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp import Client

from benchmarks.common import (
    machine_facts,
    table,
    verdict,
)
from benchmarks.overhead.agent_loop import Samples, agent_server, pooled, run_benchmark, timed_rounds
from symphony_mcp.search.result_schemas import SearchTranscript, TutorialResult
from testkit.model_server import ModelRequest, StandInModel
from testkit.web_site import running_site

TARGET_MS = 300.0
STEPS = 20
TUTORIAL = "1. Open the View menu.\n2. Choose Freeze Cells, then Freeze First Row."


def searcher_answer(request: ModelRequest) -> str:
    """Results -> the how-to -> the banner -> scroll down and up until STEPS steps are done -> done()."""
    page = next(t for t in reversed(request.texts()) if "<page_content>" in t)
    step = int(re.search(r"Step (\d+) of", page).group(1))  # type: ignore[union-attr]
    elements = dict(re.findall(r"^\[(\d+)\] \S+ '(.*?)'", page, re.M))
    by_text = {text: number for number, text in elements.items()}
    if step > STEPS:
        return f"Found.\n```python\ndone({TUTORIAL!r})\n```"
    if "/search?" in page.split("URL: ", 1)[1].split("\n", 1)[0]:
        link = next(n for t, n in by_text.items() if t.startswith("How to freeze the first row"))
        return f"The how-to.\n```python\nclick({link})\n```"
    if "Accept all" in by_text:
        return f"A banner.\n```python\nclick({by_text['Accept all']})\n```"
    direction = "down" if step % 2 else "up"
    return f"Read on.\n```python\nscroll({direction!r}, 4)\n```"


def searcher_samples(structured: dict[str, Any], outside_ms: float) -> Samples:
    result = TutorialResult.model_validate(structured)
    steps = SearchTranscript.model_validate_json(Path(result.transcript_file).read_text()).steps
    assert result.completion_reason == "DONE" and len(steps) == STEPS + 1, result
    return {"step": [outside_ms / len(steps)], "loop": [s.overhead_ms for s in steps]}


async def measure(display: str, rounds: int, workdir: Path, source: Path | None = None) -> list[Samples]:
    """Per kept round, the step overhead and the loop's per-step overheads; the server runs the package found
    in `source` when given (a checkout's root), else the installed one."""
    stand_in = StandInModel().start()
    stand_in.script(default=searcher_answer)
    try:
        with running_site() as site:
            engine = {
                "SYMPHONY_SEARCH__ENGINE": "template",
                "SYMPHONY_SEARCH__URL_TEMPLATE": site.url("/search?q={query}"),
            }
            params = agent_server(display, "searcher", stand_in.url, workdir, source, **engine)
            async with Client(params) as client:
                arguments = {"query": "freeze the first row", "budget": STEPS + 1}
                return await timed_rounds(client, "searcher", "search_tutorial", arguments, rounds, searcher_samples)
    finally:
        stand_in.stop()


def report(samples: list[Samples], command: str) -> str:
    step, loop = pooled(samples, "step"), pooled(samples, "loop")
    rows = [
        ["step overhead outside model calls (per round)", f"{step.median:.1f}", f"{max(step.samples):.1f}"],
        ["in-loop overhead per step (view, marks, PNG, image, action)", f"{loop.median:.1f}", f"{loop.p90:.1f}"],
    ]
    return "\n".join(
        [
            "# Searcher loop overhead",
            "",
            f"Command: `{command}`",
            "",
            *machine_facts(),
            f"- {len(samples)} rounds of search_tutorial (budget {STEPS + 1}: a click to the how-to, the cookie "
            f"banner, scrolls, then done) over stdio, headless Chromium at 1280x800, the local test site",
            "",
            *table(["measure (ms)", "median", "max / p90"], rows),
            "",
            f"Verdict: {verdict(step.median <= TARGET_MS)} (median step overhead {step.median:.1f} ms, "
            f"target <= {TARGET_MS:g} ms)",
            "",
        ]
    )


if __name__ == "__main__":
    run_benchmark("search_loop", __doc__.split("\n\n")[0], measure, report)
