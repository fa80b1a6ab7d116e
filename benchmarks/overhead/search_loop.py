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

    .venv/bin/python benchmarks/search_loop.py
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the benchmarks and testkit imports

from __future__ import annotations

import argparse
import re
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
from symphony_mcp.models.registry import ModelStatus
from symphony_mcp.search.results import SearchTranscript, TutorialResult
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


async def measure(display: str, rounds: int, workdir: Path, source: Path | None = None) -> list[dict[str, list[float]]]:
    """Per kept round, the step overhead and the loop's per-step overheads; the server runs the package found
    in `source` when given (a checkout's root), else the installed one."""
    stand_in = StandInModel().start()
    stand_in.script(default=searcher_answer)
    samples: list[dict[str, list[float]]] = []
    try:
        with running_site() as site:
            params = stdio_server(display)
            assert params.env is not None
            params.env |= {
                "SYMPHONY_MODELS__SEARCHER__BASE_URL": stand_in.url,
                "SYMPHONY_MODELS__SEARCHER__MODEL": "stand-in-searcher",
                "SYMPHONY_SEARCH__ENGINE": "template",
                "SYMPHONY_SEARCH__URL_TEMPLATE": site.url("/search?q={query}"),
                "SYMPHONY_MEMORY__TRAJECTORY_DIR": str(workdir / "trajectories"),
                "SYMPHONY_OCR__WARM_UP": "false",
            }
            if source is not None:
                params.env["PYTHONPATH"] = str(source)
            async with Client(params) as client:
                for index in range(rounds + 1):  # the first round warms up and is not kept
                    before = await model_ms(client)
                    started = time.perf_counter()
                    called = await client.call_tool(
                        "search_tutorial", {"query": "freeze the first row", "budget": STEPS + 1}
                    )
                    wall = (time.perf_counter() - started) * 1000
                    if called.is_error:
                        raise RuntimeError(f"search_tutorial failed: {called.content}")
                    result = TutorialResult.model_validate(called.structured_content)
                    model = await model_ms(client) - before
                    steps = SearchTranscript.model_validate_json(Path(result.transcript_file).read_text()).steps
                    assert result.completion_reason == "DONE" and len(steps) == STEPS + 1, result
                    round_samples = {"step": [(wall - model) / len(steps)], "loop": [s.overhead_ms for s in steps]}
                    log(f"round {index}: {round_samples['step'][0]:.1f} ms per step outside model calls")
                    if index:
                        samples.append(round_samples)
    finally:
        stand_in.stop()
    return samples


async def model_ms(client: Client) -> float:
    status = ModelStatus.model_validate((await client.call_tool("model_status", {})).structured_content)
    return next(r.usage.model_ms for r in status.roles if r.role == "searcher")


def report(samples: list[dict[str, list[float]]], command: str) -> str:
    step = Stats(tuple(value for s in samples for value in s["step"]))
    loop = Stats(tuple(value for s in samples for value in s["loop"]))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/search_loop.md")
    args = parser.parse_args()
    command = f"{interpreter()} benchmarks/search_loop.py" + (f" --rounds {args.rounds}" if args.rounds != 5 else "")
    with tempfile.TemporaryDirectory() as tmp, benchmark_desktop() as display:
        samples = anyio.run(measure, display, args.rounds, Path(tmp))
    publish_report(report(samples, command), args.output)


if __name__ == "__main__":
    main()
