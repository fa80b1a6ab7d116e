"""Long property-based fuzz run of every tool the server lists (the CI test's harness, many more draws).

Same sandbox and invariants as tests/test_fuzz_tools.py (testkit/fuzz/): every listed tool alone, every
resource template and random URIs, random sequences of tools through the MCP client over stdio, then every
tool again through the raw JSON-RPC client (NaN, Infinity, lone surrogates). A violation is recorded and the
run goes on with the next tool; the report lists calls, tools covered, outcomes by kind, p50/p99 latency per
tool, the server's peak RSS and every failure found.

    .venv/bin/python -m benchmarks.robustness.fuzz_tools [--examples 150] [--sequences 300] [--raw-examples 60]
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, interpreter, log, machine_facts, publish_report, table
from testkit.fuzz.harness import Stats, ViolationError, server_peak_rss_kib
from testkit.fuzz.runner import Session, connected, fuzz_sequences, fuzz_template, fuzz_tool, fuzz_uris
from testkit.fuzz.sandbox import RESOLUTION, Sandbox, make_sandbox
from testkit.model_server import StandInModel

GROUNDED_POINT = "(100,100)"  # the stand-in grounder's answer to every description

OUTPUT = REPO / "benchmarks" / "results" / "fuzz_tools.md"


class Run:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.phases: list[tuple[str, Stats, int | None, float]] = []

    def attempt(self, what: str, fuzz: Callable[..., None], *args: Any) -> None:
        try:
            fuzz(*args)
        except ViolationError as violation:
            self.failures.append(f"{what}: {violation}")
            log(f"FAILURE in {what}: {str(violation)[:300]}")
        except Exception as exc:  # not an invariant: the harness or hypothesis itself; recorded all the same
            self.failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:500]}")
            log(f"ERROR in {what}: {exc!r}"[:300])


def client_phase(run: Run, sandbox: Sandbox, args: argparse.Namespace) -> None:
    start = time.perf_counter()
    with connected(sandbox) as session:
        for tool in session.tools:
            log(f"client: {tool.name}")
            run.attempt(f"{tool.name} (MCP client)", fuzz_tool, session, tool, args.examples)
        for template in session.templates:
            run.attempt(template.uri_template, fuzz_template, session, template.uri_template, args.examples)
        run.attempt("resources/read on random URIs", fuzz_uris, session, args.examples)
        log("client: sequences")
        run.attempt("random sequences", fuzz_sequences, session, args.sequences)
        run.phases.append(("MCP client", session.harness.stats, server_peak_rss_kib(sandbox), 0.0))
        _check_covered(run, session)
    _finish(run, sandbox, start)


def raw_phase(run: Run, sandbox: Sandbox, args: argparse.Namespace) -> None:
    start = time.perf_counter()
    with connected(sandbox, raw=True) as session:
        for tool in session.tools:
            log(f"raw: {tool.name}")
            run.attempt(f"{tool.name} (raw JSON-RPC)", fuzz_tool, session, tool, args.raw_examples)
        run.phases.append(("raw JSON-RPC", session.harness.stats, server_peak_rss_kib(sandbox), 0.0))
        _check_covered(run, session)
    _finish(run, sandbox, start)


def _check_covered(run: Run, session: Session) -> None:
    missing = {t.name for t in session.tools} - set(session.harness.stats.by_tool)
    if missing:
        run.failures.append(f"tools never called: {sorted(missing)}")


def _finish(run: Run, sandbox: Sandbox, start: float) -> None:
    stray = sandbox.stray_files(deep=True)
    if stray:
        run.failures.append(f"files left outside the trajectory folder after the server stopped: {stray[:10]}")
    name, stats, rss, _ = run.phases[-1]
    run.phases[-1] = (name, stats, rss, time.perf_counter() - start)


def report(run: Run, args: argparse.Namespace, started: datetime) -> str:
    lines = [
        "# Fuzzing every tool (property-based, from tools/list)",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC",
        *machine_facts(),
        f"- Server: `symphony-mcp serve --virtual-display always --resolution {RESOLUTION}` over stdio in a "
        "sandbox (testkit/fuzz/sandbox.py): own HOME, cwd, TMPDIR, trajectory folder and group id; open_app "
        "allowed xmessage and true only, PATH with those, Xvfb and openbox; waits bounded at 5 s; grounder: "
        f"the stand-in model (testkit/model_server.py), answering {GROUNDED_POINT} to every description",
        f"- Command: `{interpreter()} -m benchmarks.robustness.fuzz_tools --examples {args.examples} "
        f"--sequences {args.sequences} --raw-examples {args.raw_examples}`",
        "- Draws per tool and per template: about half valid (from the tool's input schema), half hostile; "
        "sequences: 1-5 random tools. Seed fixed (hypothesis derandomize). Latency: the call alone, not the "
        "invariant checks after it",
        "",
    ]
    for name, stats, rss, seconds in run.phases:
        tools = sorted(stats.by_tool)
        kinds = ", ".join(f"{kind} {count}" for kind, count in stats.outcomes.most_common())
        lines += [
            f"## {name}",
            "",
            f"- Calls: {stats.calls} in {seconds:.0f} s ({len(tools)} tools covered, resources/read counted as one)",
            f"- Outcomes: {kinds}",
            f"- Latency over all calls: p50 {stats.median() * 1000:.1f} ms, "
            f"p99 {stats.percentile(None, 0.99) * 1000:.1f} ms, max {stats.percentile(None, 1) * 1000:.0f} ms",
            f"- Server peak RSS (VmHWM): {rss / 1024:.0f} MiB" if rss else "- Server peak RSS: not found",
            "",
        ]
        rows = []
        for tool in tools:
            outcomes = ", ".join(f"{k} {n}" for k, n in sorted(stats.by_tool[tool].items()))
            rows.append(
                [
                    tool,
                    str(len(stats.latencies[tool])),
                    outcomes,
                    f"{stats.median(tool) * 1000:.1f}",
                    f"{stats.percentile(tool, 0.99) * 1000:.1f}",
                ]
            )
        lines += [*table(["tool", "calls", "outcomes", "p50 ms", "p99 ms"], rows), ""]
    lines += ["## Failures found", ""]
    lines += [f"- {failure}" for failure in run.failures] or ["- none: every call met every invariant"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=150, help="draws per tool and per resource template")
    parser.add_argument("--sequences", type=int, default=300, help="random sequences of 1-5 tools")
    parser.add_argument("--raw-examples", type=int, default=60, help="raw JSON-RPC draws per tool")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    started = datetime.now(UTC)
    run = Run()
    model = StandInModel().start()
    model.script(default=GROUNDED_POINT)
    try:
        for phase in (client_phase, raw_phase):
            sandbox = make_sandbox(model_url=model.url)
            try:
                phase(run, sandbox, args)
            finally:
                shutil.rmtree(sandbox.root, ignore_errors=True)
    finally:
        model.stop()
    publish_report(report(run, args, started), args.output)


if __name__ == "__main__":
    main()
